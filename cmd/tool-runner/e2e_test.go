//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/internal/testutil"
)

// TestMain installs this test binary as the command "tool-runner" on PATH
// (testscript.Main), so every test below runs the real runner as a separate
// process over its stdio protocol.
func TestMain(m *testing.M) {
	// Under -race every child runner would sleep a second at exit (the race
	// runtime's default atexit_sleep_ms), and these tests start hundreds.
	os.Setenv("GORACE", "atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	testscript.Main(m, map[string]func(){
		"tool-runner": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
		"lock-holder": holdLock,
	})
}

// holdLock is the command "lock-holder [-r] FILE": another process that
// takes the writer lock exactly as analyze does (flock LOCK_EX on FILE,
// created if missing), prints "locked" once it holds it, and keeps it
// until killed. With -r it opens FILE read-only, as any account that may
// read a file can, and takes the same lock. It exits 2 when it cannot.
func holdLock() {
	var f *os.File
	var err error
	if len(os.Args) == 3 && os.Args[1] == "-r" {
		f, err = os.Open(os.Args[2])
	} else {
		f, err = os.OpenFile(os.Args[1], os.O_RDWR|os.O_CREATE, 0o644)
	}
	if err != nil {
		os.Exit(2)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		os.Exit(2)
	}
	os.Stdout.WriteString("locked\n")
	for { // not select{}: the runtime would call that a deadlock and exit
		time.Sleep(time.Hour)
	}
}

// startLockHolder starts lock-holder on path and returns once it holds the
// lock. The test kills it at cleanup if it still runs.
func startLockHolder(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	p, err := exec.LookPath("lock-holder")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(p, path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	buf := make([]byte, len("locked\n"))
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("lock-holder did not take the lock: %v %q", err, buf)
	}
	return cmd
}

// runnerPath is the installed tool-runner.
func runnerPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tool-runner")
	if err != nil {
		t.Fatal("tool-runner is not installed by TestMain:", err)
	}
	return p
}

// outcome is one finished runner process.
type outcome struct {
	raw    string         // all of standard output
	resp   map[string]any // the one response line, decoded
	exit   int
	stderr string
}

func (o outcome) code() string {
	e, _ := o.resp["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (o outcome) message() string {
	e, _ := o.resp["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

func (o outcome) result() map[string]any {
	r, _ := o.resp["result"].(map[string]any)
	return r
}

// call runs the runner in dir with stdin and args, and checks what every
// answer must be (see answerOf).
func call(t *testing.T, dir, stdin string, args ...string) outcome {
	t.Helper()
	return callWith(t, runnerPath(t), dir, stdin, args...)
}

// callWith is call with another runner binary: the same process contract,
// checked the same way. A freshly written executable can be briefly busy
// (ETXTBSY) while another test's fork still holds it open, so starting is
// retried.
func callWith(t *testing.T, exe, dir, stdin string, args ...string) outcome {
	t.Helper()
	var out, errOut bytes.Buffer
	var err error
	for range 100 {
		out.Reset()
		errOut.Reset()
		cmd := exec.Command(exe, args...)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err = cmd.Run(); !errors.Is(err, syscall.ETXTBSY) {
			break
		}
		time.Sleep(10 * time.Millisecond) // the other fork closes the binary when it execs: no event tells this one when
	}
	o := answerOf(t, err, out.String(), errOut.String())
	if strings.Contains(o.raw, dir) {
		t.Errorf("response holds the workspace's absolute path: %s", o.raw)
	}
	return o
}

// answerOf checks what every answer must be: exactly one line of JSON on
// stdout, nothing on stderr, no absolute path; and decodes it.
func answerOf(t *testing.T, waitErr error, stdout, stderr string) outcome {
	t.Helper()
	o := outcome{raw: stdout, stderr: stderr}
	var ee *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &ee):
		o.exit = ee.ExitCode()
	default:
		t.Fatalf("runner did not run: %v", waitErr)
	}
	if o.stderr != "" {
		t.Errorf("stderr is not empty: %q", o.stderr)
	}
	if strings.Count(o.raw, "\n") != 1 || !strings.HasSuffix(o.raw, "\n") {
		t.Fatalf("want exactly one line on stdout, got %q", o.raw)
	}
	if err := json.Unmarshal([]byte(o.raw), &o.resp); err != nil {
		t.Fatalf("stdout is not JSON: %v: %q", err, o.raw)
	}
	if abs := absolutePath.FindString(o.raw); abs != "" {
		t.Errorf("response holds an absolute path %q: %s", abs, o.raw)
	}
	return o
}

// absolutePath finds what looks like an absolute path inside a JSON
// string: at its start, or after a space, "(", ":" or "=" (a URI's "://"
// is not one).
var absolutePath = regexp.MustCompile(`"/[^"]*|[ (:=]/[A-Za-z]`)

// fixture copies the shipped data/ and contracts/ into a fresh workspace.
func fixture(t *testing.T) string {
	t.Helper()
	return fixtureIn(t, t.TempDir())
}

// fixtureIn copies the shipped data/ and contracts/ into the workspace ws
// (directories 0755, files 0644), and returns ws.
func fixtureIn(t *testing.T, ws string) string {
	t.Helper()
	return testutil.CopyFixture(t, ws)
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Requests.
func inspectRequest(id string) string {
	return `{"request_id":"` + id + `","tool":"inspect_inputs","arguments":{}}`
}

func analyzeRequest(id, digest string) string {
	return `{"request_id":"` + id + `","tool":"analyze","arguments":{"expected_source_digest":"` + digest + `"}}`
}

func verifyRequest(id, runID string) string {
	return `{"request_id":"` + id + `","tool":"verify_result","arguments":{"run_id":"` + runID + `"}}`
}

// digestOf inspects the workspace and returns its source digest.
func digestOf(t *testing.T, ws string) string {
	t.Helper()
	o := call(t, ws, inspectRequest("i1"), "--workspace", ws)
	if o.exit != 0 {
		t.Fatalf("inspect failed: %s", o.raw)
	}
	return o.result()["source_digest"].(string)
}

// analyze commits run id in ws/out and fails the test unless it succeeds.
func analyze(t *testing.T, ws, out, id string) outcome {
	t.Helper()
	o := call(t, ws, analyzeRequest(id, digestOf(t, ws)), "--workspace", ws, "--output-dir", out)
	if o.exit != 0 {
		t.Fatalf("analyze failed: %s", o.raw)
	}
	return o
}

// TestScripts runs the CLI stories in testdata/script, each in a $WORK
// holding the shipped fixture in ws, with the commands of scriptCmds.
func TestScripts(t *testing.T) {
	shipped := testutil.Fixture(t)
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Cmds:                scriptCmds(),
		Setup: func(env *testscript.Env) error {
			env.Values[snapshotsKey{}] = map[string]map[string]fsEntry{}
			return testutil.WriteFiles(filepath.Join(env.WorkDir, "ws"), shipped)
		},
	})
}

// fsEntry is what a snapshot keeps of one file system entry.
type fsEntry struct {
	mode  fs.FileMode
	mtime int64  // nanoseconds
	data  string // a regular file's bytes
	link  string // a symlink's target
}

// snapshotTree records every entry under root, root included, without
// following symlinks; an absent root gives an empty snapshot.
func snapshotTree(t *testing.T, root string) map[string]fsEntry {
	t.Helper()
	snap, err := readTree(root)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// readTree is snapshotTree's work: every entry under root, root included,
// without following symlinks; an absent root gives an empty snapshot.
func readTree(root string) (map[string]fsEntry, error) {
	snap := map[string]fsEntry{}
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		e := fsEntry{mode: fi.Mode(), mtime: fi.ModTime().UnixNano()}
		switch {
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.data = string(data)
		case fi.Mode()&fs.ModeSymlink != 0:
			if e.link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		snap[filepath.ToSlash(rel)] = e
		return nil
	})
	if err != nil && !(errors.Is(err, fs.ErrNotExist) && len(snap) == 0) {
		return nil, err
	}
	return snap, nil
}

// sameTree reports every entry added, removed or changed between two
// snapshots.
func sameTree(t *testing.T, before, after map[string]fsEntry) {
	t.Helper()
	for _, c := range treeChanges(before, after) {
		t.Error(c)
	}
}

// treeChanges names every entry added, removed or changed between two
// snapshots, one sentence each, in name order.
func treeChanges(before, after map[string]fsEntry) []string {
	var changes []string
	for _, name := range slices.Sorted(maps.Keys(before)) {
		b := before[name]
		a, ok := after[name]
		switch {
		case !ok:
			changes = append(changes, fmt.Sprintf("%s was removed", name))
		case a != b:
			changes = append(changes, fmt.Sprintf("%s changed: before %s, after %s", name, briefEntry(b), briefEntry(a)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[name]; !ok {
			changes = append(changes, fmt.Sprintf("%s was created", name))
		}
	}
	return changes
}

// briefEntry describes an entry for a failure message, its bytes
// shortened: the mode as ls shows it, the time in nanoseconds.
func briefEntry(e fsEntry) string {
	data := e.data
	if len(data) > 40 {
		data = data[:40] + "..."
	}
	return fmt.Sprintf("{mode %v, mtime %d, data %q, link %q}", e.mode, e.mtime, data, e.link)
}
