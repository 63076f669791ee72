package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// Every rule of SPEC §4 through the real process, for inspect_inputs and
// analyze alike: the code, exit 1, and for data faults the file, line and
// column in the message. Nothing is written.
func TestBadSourcesAnswerTheirCode(t *testing.T) {
	const (
		tx = "data/transactions.csv"
		gr = "data/groups.csv"
		cu = "data/customers.csv"
		df = "contracts/metric-definitions.json"
	)
	txHeader := "transaction_id,customer_id,quantity,unit_price,discount\n"
	manyRows := func(n int) string {
		var b strings.Builder
		b.WriteString("customer_id,segment\n")
		for i := range n {
			fmt.Fprintf(&b, "C%d,s\n", i)
		}
		return b.String()
	}
	tests := []struct {
		name   string
		file   string
		data   string // "" with remove set deletes the file
		remove bool
		code   string
		where  string // what the message must contain
	}{
		{"missing transactions", tx, "", true, "MISSING_INPUT", tx},
		{"missing definitions", df, "", true, "MISSING_INPUT", df},
		{"a source over 1 MiB", gr, "group_id,successes,eligible\n" + strings.Repeat("\n", 1<<20), false, "INPUT_LIMIT", gr},
		{"exactly 1 MiB is fine but bad here", gr, "group_id,successes,eligible\n" + strings.Repeat("\n", 1<<20-len("group_id,successes,eligible\n")-1) + "x", false, "INVALID_DATA", gr + ": line 1048549, column 2"},
		{"10,001 data rows", cu, manyRows(10_001), false, "INPUT_LIMIT", cu + ": line 10002"},
		{"a byte order mark", tx, "\xEF\xBB\xBF" + txHeader, false, "INVALID_DATA", tx + ": line 1, column 1"},
		{"invalid UTF-8", cu, "customer_id,segment\nC1,\xff\n", false, "INVALID_DATA", cu + ": line 2, column 2"},
		{"a lone CR", gr, "group_id,successes,eligible\rG1,1,2\n", false, "INVALID_DATA", gr + ": line 1, column 3"},
		{"a wrong header", gr, "group_id,eligible,successes\n", false, "INVALID_DATA", gr + ": line 1, column 2"},
		{"a short row", tx, txHeader + "T1,C1,1,1\n", false, "INVALID_DATA", tx + ": line 2, column 5"},
		{"a long row", tx, txHeader + "T1,C1,1,1,0,9\n", false, "INVALID_DATA", tx + ": line 2, column 6"},
		{"a space is not trimmed", tx, txHeader + "T1,C1, 1,1,0\n", false, "INVALID_DATA", tx + ": line 2, column 3 (quantity)"},
		{"a bare quote", cu, "customer_id,segment\nC1,a\"b\n", false, "INVALID_DATA", cu + ": line 2, column 2"},
		{"a bad transaction ID", tx, txHeader + "T 1,C1,1,1,0\n", false, "INVALID_DATA", tx + ": line 2, column 1 (transaction_id)"},
		{"a repeated transaction ID", tx, txHeader + "T1,C1,1,1,0\n\nT1,C1,1,1,0\n", false, "INVALID_DATA", tx + ": line 4, column 1 (transaction_id)"},
		{"a bad customer ID", tx, txHeader + "T1,C-1-é,1,1,0\n", false, "INVALID_DATA", tx + ": line 2, column 2 (customer_id)"},
		{"a fractional quantity", tx, txHeader + "T1,C1,1.5,1,0\n", false, "INVALID_DATA", tx + ": line 2, column 3 (quantity)"},
		{"a negative price", tx, txHeader + "T1,C1,1,-1,0\n", false, "INVALID_DATA", tx + ": line 2, column 4 (unit_price)"},
		{"an exponent", tx, txHeader + "T1,C1,1,1E3,0\n", false, "INVALID_DATA", tx + ": line 2, column 4 (unit_price)"},
		{"13 integer digits", tx, txHeader + "T1,C1,1,1000000000000,0\n", false, "INVALID_DATA", tx + ": line 2, column 4 (unit_price)"},
		{"7 fractional digits", tx, txHeader + "T1,C1,1,1,0.0000001\n", false, "INVALID_DATA", tx + ": line 2, column 5 (discount)"},
		{"a discount over 1", tx, txHeader + "T1,C1,1,1,1.5\n", false, "INVALID_DATA", tx + ": line 2, column 5 (discount)"},
		{"a negative count", gr, "group_id,successes,eligible\nG1,-1,1\n", false, "INVALID_DATA", gr + ": line 2, column 2 (successes)"},
		{"successes over eligible", gr, "group_id,successes,eligible\nG1,2,1\n", false, "INVALID_DATA", gr + ": line 2, column 2 (successes)"},
		{"a repeated group ID", gr, "group_id,successes,eligible\nG1,1,1\nG1,1,1\n", false, "INVALID_DATA", gr + ": line 3, column 1 (group_id)"},
		{"a bad segment", cu, "customer_id,segment\nC1,\n", false, "INVALID_DATA", cu + ": line 2, column 2 (segment)"},
		{"definitions not the contract", df, `{"definition_id":"synthetic-v1"}`, false, "INVALID_DEFINITIONS", df},
		{"definitions with a duplicate key", df, `{"a":1,"a":1}`, false, "INVALID_DEFINITIONS", df},
		{"definitions that are not JSON", df, "definition_id: synthetic-v1\n", false, "INVALID_DEFINITIONS", df},
	}
	for _, tt := range tests {
		for _, tool := range []string{"inspect_inputs", "analyze"} {
			t.Run(tt.name+"/"+tool, func(t *testing.T) {
				is := is.New(t)
				ws := fixture(t)
				path := filepath.Join(ws, tt.file)
				if tt.remove {
					is.NoErr(os.Remove(path))
				} else {
					writeFile(t, path, []byte(tt.data))
				}
				req := inspectRequest("r1")
				if tool == "analyze" {
					req = analyzeRequest("r1", strings.Repeat("0", 64))
				}
				o := call(t, ws, req, "--workspace", ws, "--output-dir", "runs")
				is.Equal(o.code(), tt.code)
				is.Equal(o.exit, 1)
				is.Equal(o.resp["tool"], tool)
				is.True(strings.Contains(o.message(), tt.where)) // names the file and place
				_, err := os.Stat(filepath.Join(ws, "runs"))
				is.True(os.IsNotExist(err)) // nothing written
			})
		}
	}
}

func TestSourcesOutsideTheWorkspaceAreRefused(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "groups.csv"), []byte("group_id,successes,eligible\n"))
	is.NoErr(os.Remove(filepath.Join(ws, "data", "groups.csv")))
	is.NoErr(os.Symlink(filepath.Join(outside, "groups.csv"), filepath.Join(ws, "data", "groups.csv")))
	o := call(t, ws, inspectRequest("r1"), "--workspace", ws)
	is.Equal(o.code(), "PATH_BOUNDARY")
	is.True(strings.Contains(o.message(), "data/groups.csv"))
}

func TestAnalyzeRefusesAStaleDigest(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	digest := digestOf(t, ws)
	writeFile(t, filepath.Join(ws, "data", "groups.csv"), []byte("group_id,successes,eligible\nG1,45,50\nG2,46,61\n"))
	o := call(t, ws, analyzeRequest("r1", digest), "--workspace", ws, "--output-dir", "runs")
	is.Equal(o.code(), "STALE_CONTEXT")
	is.Equal(o.exit, 1)
	_, err := os.Stat(filepath.Join(ws, "runs"))
	is.True(os.IsNotExist(err)) // nothing written
}
