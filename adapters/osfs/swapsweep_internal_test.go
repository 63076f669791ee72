//go:build unix

package osfs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/ports"
)

// swap is one thing whoever may write in the workspace does to the
// ledger or the output directory while a call runs. It returns the
// workspace-relative ledger files the call's record may be in afterwards.
type swap struct {
	name string
	do   func(t *testing.T, dir, outside string)
	// ledgers are where the record may be: the file the call opened,
	// under its name now.
	ledgers []string
	// runs is where the run may be: the output directory the call
	// opened, under its name now.
	runs string
}

func swaps() []swap {
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	aside := func(t *testing.T, dir string) string {
		l := filepath.Join(dir, "logs", "ledger.jsonl")
		must(t, os.Rename(l, l+".old"))
		return l
	}
	return []swap{
		{"the ledger's directory for a symlink to data", func(t *testing.T, dir, _ string) {
			l := filepath.Join(dir, "logs")
			must(t, os.Rename(l, l+".real"))
			must(t, os.Symlink("data", l))
		}, []string{"logs.real/ledger.jsonl"}, "runs"},
		{"the ledger for a FIFO", func(t *testing.T, dir, _ string) {
			must(t, unix.Mkfifo(aside(t, dir), 0o600))
		}, []string{"logs/ledger.jsonl.old"}, "runs"},
		{"the ledger for a directory", func(t *testing.T, dir, _ string) {
			must(t, os.Mkdir(aside(t, dir), 0o700))
		}, []string{"logs/ledger.jsonl.old"}, "runs"},
		{"the ledger for a hard link to a file outside", func(t *testing.T, dir, outside string) {
			must(t, os.Link(outside, aside(t, dir)))
		}, []string{"logs/ledger.jsonl.old"}, "runs"},
		{"the ledger for a symlink to a file outside", func(t *testing.T, dir, outside string) {
			must(t, os.Symlink(outside, aside(t, dir)))
		}, []string{"logs/ledger.jsonl.old"}, "runs"},
		{"the output directory for a symlink to data", func(t *testing.T, dir, _ string) {
			o := filepath.Join(dir, "runs")
			must(t, os.Rename(o, o+".real"))
			must(t, os.Symlink("data", o))
		}, []string{"logs/ledger.jsonl"}, "runs.real"},
	}
}

// Whoever may write in the workspace swaps the ledger (for a FIFO, a
// directory, a hard link or a symlink to a file outside), its directory
// or the output directory (for a symlink to data) at every step of one
// analyze with a ledger: before each of its I/O calls in turn. Whatever
// step it hits, the file outside and data keep their bytes, the record
// lands at most once, in the ledger the call opened, exactly when the
// answer says it was recorded and of that answer, and a run said
// committed is there (in the directory the call opened) and verifies.
func TestASwapAtEveryStepOfOneAnalyzeNeverMisleadsARecordOrARun(t *testing.T) {
	// The steps of a clean analyze: every call of every seam, in order.
	dir, args, request, _ := swapSetup(t)
	steps := new(int)
	r := callApp(t, func(w *Workspace) { stepper(w, steps, -1, nil) }, request, args...)
	if r.code != "" {
		t.Fatalf("the clean analyze: %s", r.raw)
	}
	_ = dir
	t.Logf("%d steps", *steps)
	for _, sw := range swaps() {
		for n := 1; n <= *steps+1; n++ {
			t.Run(fmt.Sprintf("%s, before step %d", sw.name, n), func(t *testing.T) {
				is := is.New(t)
				dir, args, request, outside := swapSetup(t)
				data := treeBytes(t, filepath.Join(dir, "data"))
				before := fileBytes(t, outside)
				var once sync.Once
				r := callApp(t, func(w *Workspace) {
					stepper(w, new(int), n, func() { once.Do(func() { sw.do(t, dir, outside) }) })
				}, request, args...)
				once.Do(func() { sw.do(t, dir, outside) }) // past the last step: after the call
				t.Logf("answer: %.240s", r.raw)

				is.Equal(fileBytes(t, outside), before)                  // the file outside is as it was
				is.Equal(treeBytes(t, filepath.Join(dir, "data")), data) // and data

				// The record: at most once, in a ledger the call opened, of
				// the answer sent, exactly when the answer says recorded.
				sum := sha256.Sum256([]byte(strings.TrimSuffix(r.raw, "\n")))
				found := 0
				for _, l := range sw.ledgers {
					data, err := os.ReadFile(filepath.Join(dir, l))
					if err != nil {
						continue
					}
					for _, line := range strings.SplitAfter(string(data), "\n") {
						var rec struct {
							RequestID      *string `json:"request_id"`
							ResponseSHA256 string  `json:"response_sha256"`
						}
						if json.Unmarshal([]byte(line), &rec) == nil && rec.RequestID != nil && *rec.RequestID == "r1" {
							is.Equal(rec.ResponseSHA256, hex.EncodeToString(sum[:])) // of the answer sent
							found++
						}
					}
				}
				var answer struct {
					Error *struct{ Code, Message string }
				}
				is.NoErr(json.Unmarshal([]byte(r.raw), &answer))
				if unrecorded(r.raw, answer.Error) {
					is.Equal(found, 0)
				} else {
					is.Equal(found, 1)
				}

				// The run.
				_, err := os.Lstat(filepath.Join(dir, sw.runs, "r1"))
				committed := err == nil
				msg := ""
				if answer.Error != nil {
					msg = answer.Error.Message
				}
				switch {
				case answer.Error == nil, strings.Contains(msg, "was committed and stays committed"):
					is.True(committed)
				case strings.Contains(msg, "may be committed"):
				default:
					is.True(!committed)
				}
				if committed {
					v := callApp(t, nil, `{"request_id":"v1","tool":"verify_result","arguments":{"run_id":"r1"}}`, "--workspace", dir, "--output-dir", sw.runs)
					is.Equal(v.code, "") // it verifies
				}
				if entries, err := os.ReadDir(filepath.Join(dir, sw.runs)); err == nil {
					for _, e := range entries {
						is.True(!strings.HasPrefix(e.Name(), ports.PendingPrefix)) // no pending directory left
					}
				}
			})
		}
	}
}

// swapSetup is a workspace whose ledger logs/ledger.jsonl holds one
// record, an output directory runs, and a file outside the workspace
// holding the same bytes as the ledger (so that a link to it passes for
// the ledger).
func swapSetup(t *testing.T) (dir string, args []string, request, outside string) {
	t.Helper()
	dir = faultWorkspace(t)
	for _, d := range []string{"logs", "runs"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args = []string{"--workspace", dir, "--output-dir", "runs", "--ledger", "logs/ledger.jsonl"}
	first := callApp(t, nil, inspectRequest(), args...)
	if first.code != "" {
		t.Fatalf("the first inspect: %s", first.raw)
	}
	outside = filepath.Join(t.TempDir(), "team.cfg")
	if err := os.WriteFile(outside, []byte(fileBytes(t, filepath.Join(dir, "logs", "ledger.jsonl"))), 0o600); err != nil {
		t.Fatal(err)
	}
	request = `{"request_id":"r1","tool":"analyze","arguments":{"expected_source_digest":"` + first.result["source_digest"].(string) + `"}}`
	return dir, args, request, outside
}

// stepper counts every call of every seam of w in *steps, and calls at
// before the n-th.
func stepper(w *Workspace, steps *int, n int, at func()) {
	var mu sync.Mutex // a commit fsyncs its files from several goroutines
	step := func() {
		mu.Lock()
		defer mu.Unlock()
		*steps++
		if *steps == n && at != nil {
			at()
		}
	}
	mkdir, openFile, write, sync, rename, chmod, truncate := w.mkdir, w.openFile, w.write, w.sync, w.rename, w.chmod, w.truncate
	w.mkdir = func(d *os.Root, name string, perm fs.FileMode) error { step(); return mkdir(d, name, perm) }
	w.openFile = func(d *os.Root, name string, flag int, perm fs.FileMode) (*os.File, error) {
		step()
		return openFile(d, name, flag, perm)
	}
	w.write = func(f *os.File, data []byte) (int, error) { step(); return write(f, data) }
	w.sync = func(f *os.File) error { step(); return sync(f) }
	w.rename = func(d *os.File, from, to string) error { step(); return rename(d, from, to) }
	w.chmod = func(f *os.File, mode fs.FileMode) error { step(); return chmod(f, mode) }
	w.truncate = func(f *os.File, size int64) error { step(); return truncate(f, size) }
}

// treeBytes maps every regular file under root to its bytes.
func treeBytes(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		out[p] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
