//go:build linux

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// The faults of issue 23 through the real process: what an attacker who
// may write in the workspace, or a failing disk, can do to a call, and the
// answer that must never contradict the disk.

// The repro of hard links reaching outside the workspace, before and
// after: a writer lock file or a ledger that is a second name of a file
// outside (ln /outside/shared.cfg W/runs/.writer.lock) made that file 0600
// and, for the ledger, had every call append to it. A lock file or ledger
// with more than one link is now INVALID_OUTPUT, found through the open
// descriptor before any chmod or write: the outside file keeps its mode
// and bytes, and nothing is committed or recorded.
func TestAHardLinkedLockFileOrLedgerIsRefusedAndLeftAlone(t *testing.T) {
	tests := []struct {
		name    string
		link    string // workspace-relative name given to the outside file
		request func(digest string) string
		args    []string
		says    string
	}{
		{"the writer lock", "runs/.writer.lock", func(d string) string { return analyzeRequest("r1", d) },
			[]string{"--output-dir", "runs"}, "remove the extra link"},
		{"the writer lock, with a ledger", "runs/.writer.lock", func(d string) string { return analyzeRequest("r1", d) },
			[]string{"--output-dir", "runs", "--ledger", "logs/ledger.jsonl"}, "remove the extra link"},
		{"the ledger, for an inspect", "ledger.jsonl", func(string) string { return inspectRequest("i1") },
			[]string{"--ledger", "ledger.jsonl"}, "give --ledger a new path"},
		{"the ledger, for an analyze", "ledger.jsonl", func(d string) string { return analyzeRequest("r1", d) },
			[]string{"--output-dir", "runs", "--ledger", "ledger.jsonl"}, "give --ledger a new path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ws := fixture(t)
			digest := digestOf(t, ws)
			outside := filepath.Join(t.TempDir(), "shared.cfg")
			content := "shared = true\n"
			if strings.HasSuffix(tt.link, ".jsonl") {
				content = "" // a ledger the calls would append to
			}
			writeFile(t, outside, []byte(content))
			is.NoErr(os.MkdirAll(filepath.Join(ws, "runs"), 0o755))
			is.NoErr(os.MkdirAll(filepath.Join(ws, "logs"), 0o755))
			is.NoErr(os.Link(outside, filepath.Join(ws, tt.link)))
			before := snapshotTree(t, ws)

			o := call(t, ws, tt.request(digest), append([]string{"--workspace", ws}, tt.args...)...)
			is.Equal(o.code(), "INVALID_OUTPUT")
			is.Equal(o.exit, 1)
			is.True(strings.Contains(o.message(), "more than one hard link")) // says what is wrong
			is.True(strings.Contains(o.message(), tt.says))                   // and what to do
			is.True(!strings.Contains(o.raw, filepath.Dir(outside)))          // no path
			is.Equal(modeOf(t, outside), os.FileMode(0o644))                  // the outside file keeps its mode
			data, err := os.ReadFile(outside)
			is.NoErr(err)
			is.Equal(string(data), content) // and its bytes
			after := snapshotTree(t, ws)
			if slices.Contains(tt.args, "logs/ledger.jsonl") {
				// An output-directory fault is recorded (protocol §11).
				is.Equal(len(ledgerLines(t, filepath.Join(ws, "logs", "ledger.jsonl"))), 1)
				delete(before, "logs")
				delete(after, "logs")
				delete(after, "logs/ledger.jsonl")
			}
			sameTree(t, before, after) // nothing else written
		})
	}
}
