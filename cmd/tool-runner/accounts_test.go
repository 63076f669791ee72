//go:build unix

package main

// Another local account against the program's lock files (protocol §6 and
// §11, issue 15's first repro), with real processes: a child started as
// an unprivileged account (nobody) through syscall.Credential, which
// needs root, as CI runs. Everything the child touches lies in a
// directory it can traverse: t.TempDir() is 0700, and there no mode of
// the files inside would matter.

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"
)

// otherAccount is an unprivileged account and a directory it can
// traverse, holding copies of the runner under the names the test binary
// answers to.
type otherAccount struct {
	cred *syscall.Credential
	dir  string // 0755, under the system's temporary directory
	bin  string // dir/bin, holding tool-runner and lock-holder
}

// newOtherAccount skips the test unless it runs as root.
func newOtherAccount(t *testing.T) *otherAccount {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("starting a child as another account needs root (CI runs as root)")
	}
	uid, gid := uint32(65534), uint32(65534)
	if u, err := user.Lookup("nobody"); err == nil {
		if n, err := strconv.ParseUint(u.Uid, 10, 32); err == nil {
			uid = uint32(n)
		}
		if n, err := strconv.ParseUint(u.Gid, 10, 32); err == nil {
			gid = uint32(n)
		}
	}
	dir, err := os.MkdirTemp("", "metricproof-accounts-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a := &otherAccount{cred: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}, dir: dir, bin: filepath.Join(dir, "bin")}
	mustMkdir(t, a.bin)
	for _, name := range []string{"tool-runner", "lock-holder"} {
		copyExecutable(t, runnerPath(t), filepath.Join(a.bin, name))
	}
	return a
}

// copyExecutable copies the binary at from to to, mode 0755.
func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// command is one of the copies, to be run as the other account.
func (a *otherAccount) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(a.bin, name), args...)
	cmd.Dir = a.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: a.cred}
	return cmd
}

// holdsLock starts lock-holder -r on path as the other account: it opens
// the file read-only and takes flock LOCK_EX. It reports whether the
// account got the lock; a holder that did keeps it until the test ends
// (or until the returned stop is called).
func (a *otherAccount) holdsLock(t *testing.T, path string) (locked bool, stop func()) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := startRetrying(t, func() *exec.Cmd {
		cmd := a.command("lock-holder", "-r", path)
		cmd.Stdout = w
		return cmd
	})
	w.Close()
	stop = func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)
	buf := make([]byte, len("locked\n"))
	if _, err := io.ReadFull(r, buf); err == nil && string(buf) == "locked\n" {
		return true, stop
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("lock-holder neither locked nor refused: %v", err)
	}
	return false, stop
}

// run runs tool-runner as the other account in ws with stdin, and checks
// its answer as call does.
func (a *otherAccount) run(t *testing.T, ws, stdin string, args ...string) outcome {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := startRetrying(t, func() *exec.Cmd {
		out.Reset()
		errOut.Reset()
		cmd := a.command("tool-runner", args...)
		cmd.Dir = ws
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		return cmd
	})
	return answerOf(t, cmd.Wait(), out.String(), errOut.String())
}

// openWorkspace copies the fixture into a new workspace under a.dir that
// the other account may read (directories 0755, files 0644).
func (a *otherAccount) openWorkspace(t *testing.T, name string) string {
	t.Helper()
	return fixtureIn(t, filepath.Join(a.dir, name))
}

// modeOf is the permission bits of path.
func modeOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// The repro, before and after. A file of mode 0644 that the operator made
// is one another account can open read-only and hold the flock of: that
// is the attack (held on the ledger, every analyze waited 10 s and
// committed a run without its record; held on .writer.lock, every analyze
// was OUTPUT_BUSY). The program makes both lock files 0600, so the other
// account cannot even open them, and analyzes go on. Lock files an
// earlier version made 0644 are set to 0600 by the next call that uses
// them, and from then on are closed to the other account as well.
func TestAnotherAccountCannotHoldTheProgramsLockFiles(t *testing.T) {
	a := newOtherAccount(t)
	is := is.New(t)

	plain := filepath.Join(a.dir, "plain.lock")
	writeFile(t, plain, nil)
	is.Equal(modeOf(t, plain), os.FileMode(0o644))
	locked, stop := a.holdsLock(t, plain)
	is.True(locked)                                         // the threat is real: a 0644 file's lock is the other account's to hold
	is.True(errors.Is(tryLock(t, plain), unix.EWOULDBLOCK)) // and it excludes the operator
	stop()

	ws := a.openWorkspace(t, "ws")
	digest := digestOf(t, ws)
	args := []string{"--workspace", ws, "--output-dir", "runs", "--ledger", "ledger.jsonl"}
	o := call(t, ws, analyzeRequest("r1", digest), args...)
	is.Equal(o.exit, 0)
	lockFiles := []string{filepath.Join(ws, "runs", ".writer.lock"), filepath.Join(ws, "ledger.jsonl")}
	check := func(when string) {
		t.Helper()
		for _, f := range lockFiles {
			is.Equal(modeOf(t, f), os.FileMode(0o600)) // made private
			locked, _ := a.holdsLock(t, f)
			if locked {
				t.Fatalf("%s: the other account holds the lock of %s", when, filepath.Base(f))
			}
		}
		o := call(t, ws, analyzeRequest("r-"+when, digest), args...)
		is.Equal(o.code(), "") // and analyzes go on
	}
	check("created")

	// As an earlier version left them.
	for _, f := range lockFiles {
		is.NoErr(os.Chmod(f, 0o644))
		locked, stop := a.holdsLock(t, f)
		is.True(locked) // open to the other account again
		stop()
	}
	o = call(t, ws, analyzeRequest("r2", digest), args...)
	is.Equal(o.code(), "") // the next call uses both, and makes both private
	check("repaired")
	records, _ := verifiedLedger(t, ws, "ledger.jsonl")
	is.Equal(records, int64(4))
}

// A lock file open to group or others whose mode the process may not
// change (another account owns it) is refused, INVALID_OUTPUT with the
// remedy "chmod 600" and no path, before anything is written; a ledger in
// that state does not get the call's record.
func TestALockFileThisUserCannotMakePrivateIsRefused(t *testing.T) {
	a := newOtherAccount(t)
	is := is.New(t)
	ws := a.openWorkspace(t, "ws")
	digest := digestOf(t, ws)
	// The operator's (root's) files, writable by everyone, in directories
	// the other account may not write.
	writeFile(t, filepath.Join(ws, "runs", ".writer.lock"), nil)
	writeFile(t, filepath.Join(ws, "ledger.jsonl"), nil)
	for _, f := range []string{filepath.Join(ws, "runs", ".writer.lock"), filepath.Join(ws, "ledger.jsonl")} {
		is.NoErr(os.Chmod(f, 0o666))
	}
	before := snapshotTree(t, ws)

	o := a.run(t, ws, analyzeRequest("r1", digest), "--workspace", ws, "--output-dir", "runs")
	is.Equal(o.code(), "INVALID_OUTPUT")
	is.True(strings.Contains(o.message(), "chmod 600"))
	is.True(strings.Contains(o.message(), ".writer.lock"))
	is.True(!strings.Contains(o.message(), a.dir)) // no path

	o = a.run(t, ws, inspectRequest("i1"), "--workspace", ws, "--ledger", "ledger.jsonl")
	is.Equal(o.code(), "INVALID_OUTPUT")
	is.True(strings.Contains(o.message(), "chmod 600"))
	is.True(strings.Contains(o.message(), "not recorded"))
	is.True(!strings.Contains(o.message(), a.dir))
	sameTree(t, before, snapshotTree(t, ws)) // nothing written, no mode changed, no record
}
