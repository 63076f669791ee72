package app_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/internal/testutil"
)

// A long-lived service reuses what byte-identical sources gave (memo.go),
// and nothing else: one byte changed, same length, and every answer is
// what a fresh service gives for the new bytes, byte for byte; the old
// digest is stale and the run made before no longer verifies.
func TestTheMemoNeverOutlivesAChangeOfOneByte(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	s := m.mcpService("--output-dir", "runs")
	before := mcpCall(s, "inspect_inputs", "")
	again := mcpCall(s, "inspect_inputs", "")
	is.Equal(withoutCallID(again.JSON), withoutCallID(before.JSON)) // the same answer from the memo
	oldDigest := m.digest()
	is.True(mcpCall(s, "analyze", `{"expected_source_digest":"`+oldDigest+`","run_id":"r1"}`).OK())
	is.True(mcpCall(s, "verify_result", `{"run_id":"r1"}`).OK())

	tx := m.read("data/transactions.csv")
	changed := bytes.Replace(tx, []byte("T1,C1,2,"), []byte("T1,C1,3,"), 1) // same length
	is.Equal(len(changed), len(tx))
	m.write("data/transactions.csv", string(changed))

	fresh := m.mcpService("--output-dir", "runs")
	for _, c := range []struct{ tool, args string }{
		{"inspect_inputs", ""},
		{"analyze", `{"expected_source_digest":"` + oldDigest + `","run_id":"r2"}`},
		{"verify_result", `{"run_id":"r1"}`},
	} {
		got, want := mcpCall(s, c.tool, c.args), mcpCall(fresh, c.tool, c.args)
		is.Equal(withoutCallID(got.JSON), withoutCallID(want.JSON)) // c.tool: as a fresh service answers
	}
	is.True(!bytes.Equal(withoutCallID(mcpCall(s, "inspect_inputs", "").JSON), withoutCallID(before.JSON)))
	is.Equal(mcpCall(s, "analyze", `{"expected_source_digest":"`+oldDigest+`"}`).Code, protocol.StaleContext)
	is.Equal(mcpCall(s, "verify_result", `{"run_id":"r1"}`).Code, protocol.StaleSources)

	newDigest := m.digest()
	is.True(mcpCall(s, "analyze", `{"expected_source_digest":"`+newDigest+`","run_id":"r3"}`).OK())
	fresh = m.mcpService("--output-dir", "runs")
	is.True(mcpCall(fresh, "verify_result", `{"run_id":"r3"}`).OK()) // a run from the memo verifies afresh
	is.True(bytes.Contains(m.read("runs/r3/result.json"), []byte(`"net_revenue": "270"`)))
}

// withoutCallID blanks the assigned call ID of an MCP answer.
func withoutCallID(answer []byte) []byte {
	s := string(answer)
	if i := strings.Index(s, `"request_id":"`); i >= 0 {
		if j := strings.Index(s[i+14:], `"`); j >= 0 {
			s = s[:i+14] + s[i+14+j:]
		}
	}
	return []byte(s)
}
