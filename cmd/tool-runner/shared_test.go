//go:build unix

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/metricproof/metricproof/internal/testinputs"
	"github.com/metricproof/metricproof/internal/testutil"
)

// The top-level testdata/ holds inputs that more than one package runs
// (see testdata/README.md); requests.json and sources.json are read where
// they are used, the maximum inputs here.

// maxFixture writes the maximum inputs of testdata/max-sources.json into a
// fresh workspace: 10,000 transactions with 64-character IDs (every 97th
// price blank, every 89th customer unknown), 10,000 customers (the first
// 200 IDs twice) and 10,000 groups, each file within 1 MiB.
func maxFixture(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testutil.Root(t), "testdata", "max-sources.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := testinputs.ParseMax(data)
	if err != nil {
		t.Fatal(err)
	}
	files, err := m.Sources()
	if err != nil {
		t.Fatal(err)
	}
	ws := fixture(t)
	for name, b := range files {
		writeFile(t, filepath.Join(ws, name), b)
	}
	return ws
}
