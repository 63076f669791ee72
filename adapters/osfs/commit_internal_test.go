//go:build unix

package osfs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/stdio"
)

// The repro of "nothing was committed" for a committed run, at the
// workspace's seams in the order the real commit makes its calls: the
// rename into place succeeds, the fsync of the output directory after it
// fails, and the rename back out of sight fails too. The run then stands,
// whole, and verifies, so the answer must not say that nothing was
// committed: it says the run may be committed and to verify it. With a
// ledger, the record is of that answer, run_id null (the call did not
// succeed). Before the fix the answer was "writing the run in runs/r1
// failed; nothing was committed".
func TestACommitThatCannotBeUndoneSaysTheRunMayBeCommitted(t *testing.T) {
	for _, ledger := range []bool{false, true} {
		t.Run(map[bool]string{false: "without a ledger", true: "with a ledger"}[ledger], func(t *testing.T) {
			is := is.New(t)
			dir := faultWorkspace(t)
			args := []string{"--workspace", dir, "--output-dir", "runs"}
			if ledger {
				args = append(args, "--ledger", "ledger.jsonl")
			}
			digest := callApp(t, nil, inspectRequest(), args...).result["source_digest"].(string)
			inject := func(w *Workspace) {
				sync, rename := w.sync, w.rename
				w.sync = func(f *os.File) error {
					if filepath.Base(filepath.Clean(f.Name())) == "runs" { // the output directory, after the rename
						return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
					}
					return sync(f)
				}
				w.rename = func(d *os.File, from, to string) error {
					if from == "r1" { // the rename back out of sight
						return &os.LinkError{Op: "renameat2", Old: from, New: to, Err: syscall.EIO}
					}
					return rename(d, from, to)
				}
			}
			request := `{"request_id":"r1","tool":"analyze","arguments":{"expected_source_digest":"` + digest + `"}}`
			r := callApp(t, inject, request, args...)
			is.Equal(r.code, "IO_OR_NUMERIC_ERROR")
			is.Equal(r.exit, 1)
			t.Log(r.message)
			is.True(!strings.Contains(r.message, "nothing was committed")) // never claims less than is on disk
			is.True(strings.Contains(r.message, "may be committed"))       // says what may be there
			is.True(strings.Contains(r.message, "verify_result"))          // and what to do
			is.True(!absolutePath.MatchString(r.raw))

			// The run is there, whole, and verifies.
			is.Equal(names(t, dir, "runs/r1"), []string{"checksums.json", "receipt.json", "result.json"})
			v := callApp(t, nil, `{"request_id":"v1","tool":"verify_result","arguments":{"run_id":"r1"}}`, "--workspace", dir, "--output-dir", "runs")
			is.Equal(v.code, "")
			if !ledger {
				return
			}
			// The ledger records what was answered.
			lines := strings.Split(strings.TrimSuffix(fileBytes(t, filepath.Join(dir, "ledger.jsonl")), "\n"), "\n")
			is.Equal(len(lines), 2) // the inspect and this call
			var rec struct {
				RequestID      string  `json:"request_id"`
				Code           *string `json:"code"`
				RunID          *string `json:"run_id"`
				ResponseSHA256 string  `json:"response_sha256"`
			}
			is.NoErr(json.Unmarshal([]byte(lines[1]), &rec))
			is.Equal(rec.RequestID, "r1")
			is.Equal(*rec.Code, "IO_OR_NUMERIC_ERROR")
			is.Equal(rec.RunID, nil) // only a success names its run
			sum := sha256.Sum256(bytes.TrimSuffix([]byte(r.raw), []byte("\n")))
			is.Equal(rec.ResponseSHA256, hex.EncodeToString(sum[:])) // of the answer sent
			var out bytes.Buffer
			is.Equal(stdio.Ledger([]string{"--workspace", dir, "--ledger", "ledger.jsonl"}, &out, wireWith(nil)), 0) // the chain verifies
		})
	}
}
