//go:build unix

package osfs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/stdio"
	"github.com/metricproof/metricproof/ports"
)

// The repro of the ledger path swap, driven without a race: whoever may
// write in the ledger's parent directory swaps the ledger's directory
// (logs/l) for a symlink after the call's pre-check and before its
// append, to an existing run, to data/, or to the call's own pending
// directory. The swap happens inside the call, at a seam it passes
// through in between: the fsync of the staged run for analyze, the read
// of the last source for inspect_inputs. Before the fix the record went
// wherever the symlink led (the run r0 gained ledger.jsonl and no longer
// verified; data/ gained a file; the new run was committed holding the
// ledger). Now the ledger's directory is opened once, and the record goes
// through that handle: to the directory the operator named, now
// logs/l.real, chained on the record before it; the target is untouched.
func TestASwappedLedgerDirectoryCannotRedirectTheRecord(t *testing.T) {
	tests := []struct {
		name    string
		analyze bool
		target  func(pending string) string // the symlink's target, from logs/
	}{
		{"analyze, to an existing run", true, func(string) string { return "../runs/r0" }},
		{"analyze, to data", true, func(string) string { return "../data" }},
		{"analyze, to its own pending directory", true, func(pending string) string { return "../runs/" + pending }},
		{"inspect, to an existing run", false, func(string) string { return "../runs/r0" }},
		{"inspect, to data", false, func(string) string { return "../data" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			dir := faultWorkspace(t)
			is.NoErr(os.MkdirAll(filepath.Join(dir, "logs", "l"), 0o755))
			args := []string{"--workspace", dir, "--output-dir", "runs", "--ledger", "logs/l/ledger.jsonl"}
			digest := callApp(t, nil, inspectRequest(), args...).result["source_digest"].(string)
			analyze := func(id string) string {
				return `{"request_id":"` + id + `","tool":"analyze","arguments":{"expected_source_digest":"` + digest + `"}}`
			}
			is.Equal(callApp(t, nil, analyze("r0"), args...).code, "") // the run a swap may aim at
			before := map[string][]string{"runs/r0": names(t, dir, "runs/r0"), "data": names(t, dir, "data")}

			var once sync.Once
			swap := func(pending string) {
				once.Do(func() {
					l := filepath.Join(dir, "logs", "l")
					is.NoErr(os.Rename(l, l+".real"))
					is.NoErr(os.Symlink(tt.target(pending), l))
				})
			}
			inject := func(w *Workspace) {
				if tt.analyze {
					sync := w.sync
					w.sync = func(f *os.File) error {
						// The staged run's fsyncs: after the pre-check, before the append.
						if _, pending, ok := strings.Cut(filepath.ToSlash(f.Name()), "/runs/"); ok && strings.HasPrefix(pending, ports.PendingPrefix) {
							swap(strings.SplitN(pending, "/", 2)[0])
						}
						return sync(f)
					}
					return
				}
				openFile := w.openFile
				w.openFile = func(d *os.Root, name string, flag int, perm fs.FileMode) (*os.File, error) {
					f, err := openFile(d, name, flag, perm)
					if name == "contracts/metric-definitions.json" {
						swap("") // the last source read
					}
					return f, err
				}
			}
			request := inspectRequest()
			if tt.analyze {
				request = analyze("r1")
			}
			r := callApp(t, inject, request, args...)
			is.Equal(r.code, "") // the call's own outcome

			// The record is in the ledger the operator named, chained on
			// the one before it.
			lines := strings.SplitAfter(fileBytes(t, filepath.Join(dir, "logs", "l.real", "ledger.jsonl")), "\n")
			is.Equal(len(lines), 4) // inspect, r0, this call, and the empty tail
			sum := sha256.Sum256([]byte(lines[1]))
			is.True(strings.Contains(lines[2], `"prev":"`+hex.EncodeToString(sum[:])+`"`))
			is.True(strings.Contains(lines[2], `"status":"success"`))

			// Nothing reached where the symlink leads.
			is.Equal(names(t, dir, "runs/r0"), before["runs/r0"])
			is.Equal(names(t, dir, "data"), before["data"])
			if tt.analyze {
				is.Equal(names(t, dir, "runs/r1"), []string{"checksums.json", "receipt.json", "result.json"}) // the new run holds no ledger
			}
			for _, id := range []string{"r0", "r1"} {
				if !tt.analyze && id == "r1" {
					continue
				}
				verify := `{"request_id":"v-` + id + `","tool":"verify_result","arguments":{"run_id":"` + id + `"}}`
				is.Equal(callApp(t, nil, verify, "--workspace", dir, "--output-dir", "runs").code, "") // each run still verifies
			}
			var out bytes.Buffer
			code := stdio.Ledger([]string{"--workspace", dir, "--ledger", "logs/l.real/ledger.jsonl"}, &out, wireWith(nil))
			is.Equal(code, 0) // the chain verifies
			t.Log(out.String())
		})
	}
}

// names lists the entries of a workspace-relative directory, sorted.
func names(t *testing.T, dir, rel string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
