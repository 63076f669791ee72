//go:build unix

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

// protocol §8: a run made from 10,000 transactions with 64-character IDs,
// 10,000 customers and 10,000 groups is analyzed and verifies.
func TestMaximumInputsAnalyzeAndVerify(t *testing.T) {
	is := is.New(t)
	ws := maxFixture(t)
	o := analyze(t, ws, "runs", "max-001")
	rev := o.result()["revenue"].(map[string]any)
	is.Equal(rev["total_rows"], float64(10_000))
	is.Equal(len(rev["contributions"].([]any)), 10_000)
	info, err := os.Stat(filepath.Join(ws, "runs", "max-001", "result.json"))
	is.NoErr(err)
	t.Logf("result.json of the maximum inputs: %d bytes", info.Size())

	v := call(t, ws, verifyRequest("v1", "max-001"), "--workspace", ws, "--output-dir", "runs")
	is.Equal(v.exit, 0)
	is.Equal(v.result()["integrity"], "verified")
}
