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
)

// A call whose record's fsync fails, whose cut back is made and whose
// cut's fsync fails too answers its own outcome, as recorded (protocol
// §11.4: a crash could bring the record back). The ledger then holds that
// record now, written back over the cut, not only perhaps after a crash.
func TestARecordWhoseCutCannotBeFlushedIsInTheLedgerAsAnswered(t *testing.T) {
	is := is.New(t)
	dir := faultWorkspace(t)
	args := []string{"--workspace", dir, "--ledger", "ledger.jsonl"}
	is.Equal(callApp(t, nil, inspectRequest(), args...).code, "")
	ledger := filepath.Join(dir, "ledger.jsonl")
	r := callApp(t, func(w *Workspace) {
		sync := w.sync
		w.sync = func(f *os.File) error {
			if filepath.Base(f.Name()) == "ledger.jsonl" {
				return &os.PathError{Op: "fsync", Path: f.Name(), Err: syscall.EIO} // the record's, then the cut's
			}
			return sync(f)
		}
	}, `{"request_id":"i2","tool":"inspect_inputs","arguments":{}}`, args...)
	is.Equal(r.code, "") // answered as recorded: the call's own outcome
	lines := strings.SplitAfter(strings.TrimSuffix(fileBytes(t, ledger), "\n"), "\n")
	is.Equal(len(lines), 2)
	var rec struct {
		ResponseSHA256 string `json:"response_sha256"`
	}
	is.NoErr(json.Unmarshal([]byte(lines[1]), &rec))
	sum := sha256.Sum256(bytes.TrimSuffix([]byte(r.raw), []byte("\n")))
	is.Equal(rec.ResponseSHA256, hex.EncodeToString(sum[:])) // the record of the answer sent
}
