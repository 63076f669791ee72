//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"
)

// A limit, pinned so that it is noticed if it ever changes: started with
// standard output closed (the shell's >&-), the runner finds /dev/null on
// file descriptor 1, since the Go runtime opens it there before main runs.
// Its answer then goes nowhere, its write succeeds, and a success exits 0,
// exactly as with >/dev/null: the two cannot be told apart from inside.
func TestAClosedStandardOutputIsDevNullToTheRunner(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	digest := digestOf(t, ws)

	stdinR, stdinW, err := os.Pipe()
	is.NoErr(err)
	defer stdinW.Close()
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	is.NoErr(err)
	defer stderr.Close()
	// A nil entry in Files starts the process with that descriptor closed.
	proc, err := os.StartProcess(runnerPath(t), []string{"tool-runner", "--workspace", ws, "--output-dir", "runs"},
		&os.ProcAttr{Dir: ws, Env: os.Environ(), Files: []*os.File{stdinR, nil, stderr}})
	is.NoErr(err)
	stdinR.Close()
	t.Cleanup(func() { _ = proc.Kill() })
	inSyscall(t, proc.Pid, unix.SYS_READ, 0) // running main, waiting for its request

	fd1, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(proc.Pid), "fd", "1"))
	is.NoErr(err)
	is.Equal(fd1, "/dev/null") // what >/dev/null would have given it

	_, err = stdinW.WriteString(analyzeRequest("r1", digest))
	is.NoErr(err)
	is.NoErr(stdinW.Close())
	state, err := proc.Wait()
	is.NoErr(err)
	is.Equal(state.ExitCode(), 0) // the answer was "written": a success
	checkCompleteRun(t, ws, "runs", "r1")
	errText, err := os.ReadFile(stderr.Name())
	is.NoErr(err)
	is.Equal(string(errText), "")
}
