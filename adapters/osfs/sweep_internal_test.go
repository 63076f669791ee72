//go:build unix

package osfs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/stdio"
	"github.com/metricproof/metricproof/ports"
)

// seams are the workspace's I/O seams, each wrapped so that its n-th call
// (counting from 1) fails with EIO, and every call is counted.
func seams() map[string]func(w *Workspace, n int, calls *int) {
	var mu sync.Mutex // a commit fsyncs its files from several goroutines
	fail := func(calls *int, n int) bool {
		mu.Lock()
		defer mu.Unlock()
		*calls++
		return *calls == n
	}
	eio := func(op, name string) error { return &fs.PathError{Op: op, Path: name, Err: syscall.EIO} }
	return map[string]func(w *Workspace, n int, calls *int){
		"mkdir": func(w *Workspace, n int, calls *int) {
			next := w.mkdir
			w.mkdir = func(d *os.Root, name string, perm fs.FileMode) error {
				if fail(calls, n) {
					return eio("mkdirat", name)
				}
				return next(d, name, perm)
			}
		},
		"openFile": func(w *Workspace, n int, calls *int) {
			next := w.openFile
			w.openFile = func(d *os.Root, name string, flag int, perm fs.FileMode) (*os.File, error) {
				if fail(calls, n) {
					return nil, eio("openat", name)
				}
				return next(d, name, flag, perm)
			}
		},
		"write": func(w *Workspace, n int, calls *int) {
			next := w.write
			w.write = func(f *os.File, data []byte) (int, error) {
				if fail(calls, n) {
					return 0, eio("write", f.Name())
				}
				return next(f, data)
			}
		},
		"short write": func(w *Workspace, n int, calls *int) {
			next := w.write
			w.write = func(f *os.File, data []byte) (int, error) {
				if fail(calls, n) && len(data) > 1 {
					k, _ := next(f, data[:len(data)/2]) // half of it reaches the file
					return k, eio("write", f.Name())
				}
				return next(f, data)
			}
		},
		"sync": func(w *Workspace, n int, calls *int) {
			next := w.sync
			w.sync = func(f *os.File) error {
				if fail(calls, n) {
					return eio("fsync", f.Name())
				}
				return next(f)
			}
		},
		"rename": func(w *Workspace, n int, calls *int) {
			next := w.rename
			w.rename = func(d *os.File, from, to string) error {
				if fail(calls, n) {
					return syscall.EIO
				}
				return next(d, from, to)
			}
		},
		"chmod": func(w *Workspace, n int, calls *int) {
			next := w.chmod
			w.chmod = func(f *os.File, mode fs.FileMode) error {
				if fail(calls, n) {
					return eio("fchmod", f.Name())
				}
				return next(f, mode)
			}
		},
		"truncate": func(w *Workspace, n int, calls *int) {
			next := w.truncate
			w.truncate = func(f *os.File, size int64) error {
				if fail(calls, n) {
					return eio("ftruncate", f.Name())
				}
				return next(f, size)
			}
		},
	}
}

// sweepCase is one analyze with a ledger, in a fresh workspace whose
// ledger holds one record (an inspect's) and whose ledger and lock file
// were made 0644 by "an earlier version", so that chmod is on the path.
func sweepSetup(t *testing.T) (dir string, args []string, request string) {
	t.Helper()
	dir = faultWorkspace(t)
	args = []string{"--workspace", dir, "--output-dir", "runs", "--ledger", "ledger.jsonl"}
	first := callApp(t, nil, inspectRequest(), args...)
	if first.code != "" {
		t.Fatalf("the first inspect: %s", first.raw)
	}
	if err := os.MkdirAll(filepath.Join(dir, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"ledger.jsonl", "runs/" + ports.LockFile} {
		if f, err := os.OpenFile(filepath.Join(dir, p), os.O_CREATE|os.O_RDONLY, 0o644); err == nil {
			f.Close()
			os.Chmod(filepath.Join(dir, p), 0o644)
		}
	}
	request = `{"request_id":"r1","tool":"analyze","arguments":{"expected_source_digest":"` + first.result["source_digest"].(string) + `"}}`
	return dir, args, request
}

// Every I/O call of one analyze with a ledger fails in turn, once each
// (EIO; for writes also half a write): whatever the answer, it never
// contradicts the disk. A run said committed is there and verifies; a run
// said not committed is not there, and no pending directory is left; a
// run that may be committed verifies if it is there. The ledger holds a
// new record exactly when the answer sent is the one it hashes (else the
// answer says the call was not recorded), its chain verifies unless the
// answer says a torn part stays, and the next call builds on it.
func TestEveryIOFaultOfOneAnalyzeNeverContradictsTheDisk(t *testing.T) {
	// How many calls each seam gets in a clean analyze.
	counts := map[string]int{}
	dir, args, request := sweepSetup(t)
	live := map[string]*int{}
	r := callApp(t, func(w *Workspace) {
		for name, wrap := range seams() {
			live[name] = new(int)
			wrap(w, -1, live[name])
		}
	}, request, args...)
	if r.code != "" {
		t.Fatalf("the clean analyze: %s", r.raw)
	}
	checkAgainstDisk(t, dir, args, r.raw, inProcess, false)
	for name, c := range live {
		counts[name] = *c
	}
	t.Logf("calls of each seam in one analyze with a ledger: %v", counts)
	all := seams()
	for name, wrap := range all {
		for n := 1; n <= counts[name]; n++ {
			t.Run(fmt.Sprintf("%s %d", name, n), func(t *testing.T) {
				dir, args, request := sweepSetup(t)
				cuts := new(int)
				r := callApp(t, func(w *Workspace) { wrap(w, n, new(int)); all["truncate"](w, -1, cuts) }, request, args...)
				checkAgainstDisk(t, dir, args, r.raw, inProcess, *cuts > 0)
			})
			// A write or a flush that failed is cut back and flushed: each
			// of those, and each later flush, fails too in turn.
			if name != "write" && name != "short write" && name != "sync" {
				continue
			}
			for _, then := range []string{"truncate", "sync"} {
				later := new(int)
				dir, args, request := sweepSetup(t)
				callApp(t, func(w *Workspace) { wrap(w, n, new(int)); all[then](w, -1, later) }, request, args...)
				for m := 1; m <= *later; m++ {
					if then == "sync" && m <= n && name == "sync" {
						continue // the same fault, or one before it: swept alone
					}
					t.Run(fmt.Sprintf("%s %d, then %s %d", name, n, then, m), func(t *testing.T) {
						dir, args, request := sweepSetup(t)
						cuts := new(int)
						r := callApp(t, func(w *Workspace) {
							wrap(w, n, new(int))
							all[then](w, m, new(int))
							all["truncate"](w, -1, cuts)
						}, request, args...)
						checkAgainstDisk(t, dir, args, r.raw, inProcess, *cuts > 0)
					})
				}
				_ = dir
			}
		}
	}
}

// unrecorded reports an answer that protocol §11.1 leaves out of the
// ledger, saying so: none sent (as after a kill); a fault found before
// the ledger could be trusted (the workspace, the options, a damaged or
// unreadable ledger); a call whose own append failed.
func unrecorded(raw string, e *struct{ Code, Message string }) bool {
	if raw == "" {
		return true
	}
	if e == nil {
		return false
	}
	switch e.Code {
	case "MISSING_WORKSPACE", "INVALID_OPTIONS", "LEDGER_TAMPERED":
		return true
	}
	for _, says := range []string{"not recorded", "recording the call in the ledger failed", "the ledger could not be"} {
		if strings.Contains(e.Message, says) {
			return true
		}
	}
	return false
}

// verifier answers verify_result of run r1 in dir's runs: its code, "" on
// success.
type verifier func(t *testing.T, dir string) string

// inProcess is verify_result through the app in this process (with the
// fixed engine of wireWith).
func inProcess(t *testing.T, dir string) string {
	return callApp(t, nil, `{"request_id":"v1","tool":"verify_result","arguments":{"run_id":"r1"}}`, "--workspace", dir, "--output-dir", "runs").code
}

// checkAgainstDisk checks the answer raw (one line) of analyze r1 with
// the ledger ledger.jsonl, which held one record before, against the
// workspace dir; verify is of the engine that made the run; cut tells
// that the call truncated the ledger (a cut back).
func checkAgainstDisk(t *testing.T, dir string, args []string, raw string, verify verifier, cut bool) {
	t.Helper()
	is := is.New(t)
	var answer struct {
		Status string
		Error  *struct{ Code, Message string }
	}
	if raw == "" {
		t.Log("no answer was sent")
	} else {
		is.NoErr(json.Unmarshal([]byte(raw), &answer))
	}
	msg := ""
	if answer.Error != nil {
		msg = answer.Error.Message
	}
	t.Logf("answer: %.300s", raw)

	// The run.
	run := filepath.Join(dir, "runs", "r1")
	_, err := os.Lstat(run)
	committed := err == nil
	switch {
	case raw != "" && answer.Error == nil, strings.Contains(msg, "was committed and stays committed"):
		is.True(committed) // said committed: there
	case strings.Contains(msg, "may be committed"), raw == "":
	default:
		is.True(!committed) // said not committed: not there
	}
	if committed {
		is.Equal(verify(t, dir), "") // a run that is there verifies
	}
	entries, err := os.ReadDir(filepath.Join(dir, "runs"))
	if err == nil {
		for _, e := range entries {
			is.True(!strings.HasPrefix(e.Name(), ports.PendingPrefix)) // no pending directory left
		}
	}

	// The ledger.
	data, err := os.ReadFile(filepath.Join(dir, "ledger.jsonl"))
	is.NoErr(err)
	torn := len(data) > 0 && data[len(data)-1] != '\n'
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	if torn {
		is.True(strings.Contains(msg, "torn part")) // a torn tail is said
		return
	}
	switch len(lines) {
	case 2:
		var rec struct {
			RunID          *string `json:"run_id"`
			ResponseSHA256 string  `json:"response_sha256"`
		}
		is.NoErr(json.Unmarshal([]byte(lines[1]), &rec))
		if raw != "" {
			sum := sha256.Sum256([]byte(strings.TrimSuffix(raw, "\n")))
			is.Equal(rec.ResponseSHA256, hex.EncodeToString(sum[:])) // the record is of the answer sent
		}
		if raw != "" {
			is.Equal(rec.RunID != nil, answer.Error == nil) // and names the run only when it was said committed
		}
	case 1:
		is.True(unrecorded(raw, answer.Error)) // no record: one of the calls §11.1 does not record, and said so
	default:
		t.Fatalf("%d records", len(lines))
	}
	var out bytes.Buffer
	is.Equal(stdio.Ledger([]string{"--workspace", dir, "--ledger", "ledger.jsonl"}, &out, wireWith(nil)), 0) // the chain verifies
	next := callApp(t, nil, `{"request_id":"i2","tool":"inspect_inputs","arguments":{}}`, args...)
	is.Equal(next.code, "") // and the next call builds on it
}
