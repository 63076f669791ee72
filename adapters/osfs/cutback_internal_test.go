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

// The repro of a ledger that kept a record of a response that was not
// sent, and its neighbours, at the workspace's seams in the order the
// real append makes its calls (write, fsync, ftruncate, fsync of the cut).
// The rule (protocol §11): the ledger never keeps a record whose response
// was not the one sent. A record written whole that cannot be cut back off
// for good (the cut fails, or cannot be flushed) may remain, now or after
// a crash, so the call answers the response that record holds; one that is
// cut back for good is not there, so the call answers that recording
// failed; a torn part that stays is no record, and the answer says it is
// there and what the next call will answer. Before the fix the call
// answered IO_OR_NUMERIC_ERROR while the success record stayed.
func TestAnAppendThatFailsAnswersWhatTheLedgerHolds(t *testing.T) {
	eio := func(op, name string) error { return &os.PathError{Op: op, Path: name, Err: syscall.EIO} }
	isLedger := func(f *os.File) bool { return filepath.Base(f.Name()) == "ledger.jsonl" }
	tests := []struct {
		name    string
		analyze bool
		inject  func(w *Workspace)
		// recorded: the call's record is in the ledger and the answer is
		// the one it holds; else the answer is IO_OR_NUMERIC_ERROR and the
		// ledger is as before.
		recorded bool
		// shows: the record is in the ledger as the disk shows it now.
		shows bool
		says  []string // what an IO_OR_NUMERIC_ERROR message says
		next  string   // the next call's code
	}{
		{name: "the fsync fails and the cut holds", inject: func(w *Workspace) {
			sync, failed := w.sync, false
			w.sync = func(f *os.File) error {
				if isLedger(f) && !failed {
					failed = true
					return eio("fsync", f.Name())
				}
				return sync(f)
			}
		}, says: []string{"recording the call in the ledger failed", "the call's own outcome was success"}},
		{name: "the fsync fails and the cut fails", inject: func(w *Workspace) {
			sync := w.sync
			w.sync = func(f *os.File) error {
				if isLedger(f) {
					return eio("fsync", f.Name())
				}
				return sync(f)
			}
			w.truncate = func(f *os.File, _ int64) error { return eio("ftruncate", f.Name()) }
		}, recorded: true, shows: true},
		{name: "an analyze's fsync fails and the cut fails", analyze: true, inject: func(w *Workspace) {
			sync := w.sync
			w.sync = func(f *os.File) error {
				if isLedger(f) {
					return eio("fsync", f.Name())
				}
				return sync(f)
			}
			w.truncate = func(f *os.File, _ int64) error { return eio("ftruncate", f.Name()) }
		}, recorded: true, shows: true},
		{name: "the fsync fails and the cut cannot be flushed", inject: func(w *Workspace) {
			sync := w.sync
			w.sync = func(f *os.File) error {
				if isLedger(f) {
					return eio("fsync", f.Name())
				}
				return sync(f)
			}
		}, recorded: true, shows: true}, // the cut undone: the record written back, as answered
		{name: "a short write whose cut fails", inject: func(w *Workspace) {
			w.write = func(f *os.File, b []byte) (int, error) {
				n, _ := f.Write(b[:len(b)/2])
				return n, eio("write", f.Name())
			}
			w.truncate = func(f *os.File, _ int64) error { return eio("ftruncate", f.Name()) }
		}, says: []string{"a torn part of the record stays at the end of the ledger", "LEDGER_TAMPERED", "the call's own outcome was success"}, next: "LEDGER_TAMPERED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			dir := faultWorkspace(t)
			args := []string{"--workspace", dir, "--output-dir", "runs", "--ledger", "ledger.jsonl"}
			first := callApp(t, nil, inspectRequest(), args...)
			is.Equal(first.code, "")
			ledger := filepath.Join(dir, "ledger.jsonl")
			before := fileBytes(t, ledger)
			request := `{"request_id":"i2","tool":"inspect_inputs","arguments":{}}`
			if tt.analyze {
				request = `{"request_id":"r1","tool":"analyze","arguments":{"expected_source_digest":"` + first.result["source_digest"].(string) + `"}}`
			}

			r := callApp(t, tt.inject, request, args...)
			t.Log(r.raw)
			after := fileBytes(t, ledger)
			if tt.recorded {
				is.Equal(r.code, "") // the answer the record holds: the call's own
				is.Equal(r.exit, 0)
			} else {
				is.Equal(r.code, "IO_OR_NUMERIC_ERROR")
				for _, want := range tt.says {
					is.True(strings.Contains(r.message, want)) // says what is on disk
				}
			}
			if !tt.shows {
				if tt.next == "" {
					is.Equal(after, before) // nothing of the call in the ledger
				}
			} else {
				is.True(strings.HasPrefix(after, before))
				var rec struct {
					ResponseSHA256 string `json:"response_sha256"`
				}
				is.NoErr(json.Unmarshal([]byte(strings.TrimPrefix(after, before)), &rec))
				sum := sha256.Sum256(bytes.TrimSuffix([]byte(r.raw), []byte("\n")))
				is.Equal(rec.ResponseSHA256, hex.EncodeToString(sum[:])) // the record is of the answer sent
			}

			next := callApp(t, nil, `{"request_id":"i3","tool":"inspect_inputs","arguments":{}}`, args...)
			is.Equal(next.code, tt.next)
			if tt.next == "" {
				var out bytes.Buffer
				is.Equal(stdio.Ledger([]string{"--workspace", dir, "--ledger", "ledger.jsonl"}, &out, wireWith(nil)), 0) // the chain holds
			}
		})
	}
}
