//go:build unix

package main

// Real-process tests of SIGINT and SIGTERM over the one-shot transport: a
// signal is a cancellation, never a kill. The call stops at its next
// cancel check and answers CANCELLED (exit 3), or finishes if it was past
// its last check; either way exactly one JSON line, no pending directory,
// and every run that became visible verifies.
//
// A process can only catch a signal once its handler is installed, which
// tool-runner does first thing in run. The tests wait until the runner is
// blocked reading its standard input, which it reads only after that
// (readingStdin), so no signal below can land before the handler.

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/internal/testutil"
)

// 40 SIGINTs and 40 SIGTERMs, each landing on a running analyze of the
// maximum inputs at a moment spread from the delivery of its request to
// its end: every answer is one JSON line, success (exit 0, the run
// committed and verifying) or CANCELLED (exit 3, nothing committed); no
// pending directory is ever left, and no signal kills. Both outcomes
// occur, so the sweep really reached both sides of the last cancel check.
//
// The moments are stratified, SIGINT and SIGTERM taking turns: the first
// half of the attempts each land at a random moment of the next of 40
// equal slices of one analyze's duration; the second half sweep again,
// finely, from 75% to 105% of it, where the last check, the commit and the
// 1.7 MB response are. That duration is re-estimated as the sweep goes
// (the median of the last five calls that ran to their end), since the
// machine may be busier at one moment than at another.
func TestSignalsAtAnyMomentOfAnAnalyzeCancelOrLetItFinish(t *testing.T) {
	testutil.SkipUnlessLong(t)
	is := is.New(t)
	perSignal := 40
	if testing.Short() {
		perSignal = 8
	}
	ws := maxFixture(t)
	runs := filepath.Join(ws, "runs")
	digest := digestOf(t, ws)
	args := []string{"--workspace", ws, "--output-dir", "runs"}
	began := time.Now()

	// For the log: how long a whole INVALID_JSON call takes from the
	// process's start, against how soon a runner is ready for signals.
	var invalid, ready []time.Duration
	for range 5 {
		start := time.Now()
		is.Equal(call(t, ws, "not json", args...).code(), "INVALID_JSON")
		invalid = append(invalid, time.Since(start))
		start = time.Now()
		p := startRunner(t, ws, args...)
		readingStdin(t, p)
		ready = append(ready, time.Since(start))
		p.send(t, "not json")
		p.finish(t)
	}
	slices.Sort(invalid)
	slices.Sort(ready)
	t.Logf("an INVALID_JSON call takes %v from start to exit; a runner is ready for signals %v after its start (medians of 5)", invalid[2], ready[2])

	// How long uncontended analyzes take from the delivery of their
	// request to their exit, into a directory of their own.
	var full []time.Duration
	for i := range 5 {
		p := startRunner(t, ws, "--workspace", ws, "--output-dir", "timing")
		readingStdin(t, p)
		start := time.Now()
		p.send(t, analyzeRequest(fmt.Sprintf("timing-%d", i), digest))
		is.Equal(p.finish(t).exit, 0)
		full = append(full, time.Since(start))
	}
	t.Logf("one analyze of the maximum inputs: %v", full)

	rng := rand.New(rand.NewPCG(7, 8))
	attempts := 2 * perSignal
	counts := map[string]int{}
	points := map[string]int{}
	calls := 0
	for i := range attempts {
		sig := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}[i%2]
		half := attempts / 2
		from, width, slice := 0.0, 1.0, i
		if i >= half {
			from, width, slice = 0.75, 0.30, i-half
		}
		at := from + width*(float64(slice)+rng.Float64())/float64(half) // a fraction of one analyze
		// A call that ends before its signal is a success that proved
		// nothing about signals: run another, a little earlier each time
		// (as a fraction of the median duration, which tracks the calls
		// just seen), until the signal lands on a running call.
		for try := 0; ; try++ {
			recent := slices.Clone(full[len(full)-5:])
			slices.Sort(recent)
			delay := time.Duration(at * float64(recent[2]))
			id := fmt.Sprintf("sig-%02d-%d", i, try)
			calls++
			s := signalAfter(t, ws, analyzeRequest(id, digest), delay, []syscall.Signal{sig}, args...)
			is.True(!s.killed) // caught, never a kill
			o := s.outcome
			switch o.exit {
			case 0:
				is.Equal(o.resp["ok"], true)
				checkCompleteRun(t, ws, "runs", id)
				full = append(full, s.ran)
			case 3:
				is.True(s.signalled)
				is.Equal(o.code(), "CANCELLED")
				is.Equal(o.resp["status"], "cancelled")
				is.Equal(o.resp["request_id"], id)
				_, err := os.Lstat(filepath.Join(runs, id))
				is.True(errors.Is(err, os.ErrNotExist)) // nothing committed
			default:
				t.Fatalf("%v at %v: exit %d: %s", sig, delay, o.exit, o.raw)
			}
			is.Equal(pendingIn(t, runs), []string(nil)) // the call removed its own pending directory
			switch {
			case !s.signalled && try < 10:
				counts["ended before its signal, run again"]++
				at *= 0.95
				continue
			case !s.signalled:
				t.Fatalf("attempt %d: 11 calls in a row ended before their signal, the last at %.0f%% of the median duration", i, 100*at)
			case o.exit == 0:
				counts["success: signalled after its last check"]++
			default:
				counts["CANCELLED"]++
				points[checkPoint(o.message())]++
			}
			break
		}
	}
	t.Logf("%d signals on running analyzes (%d calls) in %v: %v; CANCELLED at %v; 0 kills",
		attempts, calls, time.Since(began).Round(time.Millisecond), counts, points)
	is.True(counts["CANCELLED"] > 0)                               // signals landed before the last check
	is.True(counts["success: signalled after its last check"] > 0) // and after it
	is.Equal(len(runsIn(t, runs)), calls-counts["CANCELLED"])
	for _, id := range runsIn(t, runs) {
		checkCompleteRun(t, ws, "runs", id)
	}
}

// A signal in the first moments of the process, before run has installed
// the handler, can only end it as the signal's default action does: that
// is the one way a signal kills the runner. Nothing has been written by
// then: the handler comes before any I/O. Here each signal is sent the
// moment the process has started.
func TestASignalBeforeTheHandlerEndsTheRunnerBeforeAnyWrite(t *testing.T) {
	is := is.New(t)
	attempts := 10
	if testing.Short() {
		attempts = 4
	}
	ws := fixture(t)
	digest := digestOf(t, ws)
	killed, answered := 0, 0
	for i := range attempts {
		before := snapshotTree(t, ws)
		cmd := exec.Command(runnerPath(t), "--workspace", ws, "--output-dir", "runs")
		cmd.Dir = ws
		cmd.Stdin = strings.NewReader(analyzeRequest(fmt.Sprintf("early-%d", i), digest))
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		is.NoErr(cmd.Start())
		is.NoErr(cmd.Process.Signal([]syscall.Signal{syscall.SIGINT, syscall.SIGTERM}[i%2]))
		err := cmd.Wait()
		if killedBySignal(cmd) {
			killed++
			is.Equal(stdout.String(), "")            // no answer, not even a torn one
			sameTree(t, before, snapshotTree(t, ws)) // and nothing written
			continue
		}
		answered++
		o := answerOf(t, err, stdout.String(), stderr.String())
		is.True(o.exit == 0 || o.exit == 3) // caught after all: a success or CANCELLED
	}
	t.Logf("%d signals sent at the start: %d ended the process before its handler, %d were caught", attempts, killed, answered)
}

// A signal while the runner waits for its request (none sent yet, standard
// input left open) answers CANCELLED at once, with request_id and tool
// null since no request was read: the runner does not wait for the end of
// its input.
func TestASignalWhileWaitingForTheRequestAnswersCancelledAtOnce(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			is := is.New(t)
			ws := fixture(t)
			p := startRunner(t, ws, "--workspace", ws, "--output-dir", "runs")
			readingStdin(t, p)
			is.NoErr(p.cmd.Process.Signal(sig))
			o := p.finish(t) // standard input is still open
			is.Equal(o.exit, 3)
			is.Equal(o.code(), "CANCELLED")
			is.Equal(o.resp["status"], "cancelled")
			is.Equal(o.resp["request_id"], nil)
			is.Equal(o.resp["tool"], nil)
			is.True(strings.Contains(o.message(), "while its request was being read"))
			is.Equal(entriesIn(t, ws), []string{"contracts", "data"}) // nothing written
		})
	}
}

// SIGINT and SIGTERM at moments spread over a verify_result of the
// maximum inputs: one JSON line each, verified (exit 0) or CANCELLED (exit
// 3), no kill, and nothing in the workspace changes. Verify checks for
// cancellation before its work only (protocol §6), so most signals find it
// past that check, and it finishes.
func TestSignalsDuringVerifyAnswerOnceAndWriteNothing(t *testing.T) {
	testutil.SkipUnlessLong(t)
	is := is.New(t)
	attempts := 20
	if testing.Short() {
		attempts = 6
	}
	ws := maxFixture(t)
	analyze(t, ws, "runs", "r1")
	args := []string{"--workspace", ws, "--output-dir", "runs"}
	before := snapshotTree(t, ws)

	var took []time.Duration
	for range 3 {
		p := startRunner(t, ws, args...)
		readingStdin(t, p)
		start := time.Now()
		p.send(t, verifyRequest("v1", "r1"))
		is.Equal(p.finish(t).exit, 0)
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	span := took[1]
	rng := rand.New(rand.NewPCG(9, 10))
	counts := map[string]int{}
	for i := range attempts {
		sig := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}[i%2]
		delay := time.Duration((float64(i) + rng.Float64()) / float64(attempts) * float64(span))
		s := signalAfter(t, ws, verifyRequest("v1", "r1"), delay, []syscall.Signal{sig}, args...)
		is.True(!s.killed)
		switch s.outcome.exit {
		case 0:
			is.Equal(s.outcome.result()["integrity"], "verified")
			if s.signalled {
				counts["verified, signalled after its check"]++
			} else {
				counts["verified, ended before its signal"]++
			}
		case 3:
			is.True(s.signalled)
			is.Equal(s.outcome.code(), "CANCELLED")
			counts["CANCELLED"]++
		default:
			t.Fatalf("%v at %v: exit %d: %s", sig, delay, s.outcome.exit, s.outcome.raw)
		}
	}
	t.Logf("%d attempts over a verify of %v: %v; 0 kills", attempts, took[1], counts)
	// Signals reached running verifies (its one cancel check comes first,
	// so most land after it, and the call still answers, once).
	is.True(counts["verified, signalled after its check"] > 0)
	sameTree(t, before, snapshotTree(t, ws))
}

// A second signal changes nothing: the handler stays installed until the
// process exits, so further SIGINTs and SIGTERMs are caught and dropped
// (the call is already cancelled), and the one answer is still written
// with its own exit status. Here a storm of them, alternating, from the
// moment the runner waits for its request until it has exited.
func TestFurtherSignalsAreIgnoredAndTheAnswerStillComes(t *testing.T) {
	is := is.New(t)
	rounds := 5
	if testutil.Long() && !testing.Short() {
		rounds = 20 // the long suite's storm
	}
	ws := fixture(t)
	sent := 0
	for range rounds {
		p := startRunner(t, ws, "--workspace", ws, "--output-dir", "runs")
		readingStdin(t, p)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		var waitErr error
	storm:
		for i := 0; ; i++ {
			select {
			case waitErr = <-done:
				break storm
			default:
			}
			if p.cmd.Process.Signal([]syscall.Signal{syscall.SIGINT, syscall.SIGTERM}[i%2]) == nil {
				sent++
			}
			time.Sleep(20 * time.Microsecond) // the storm's pace: many signals, without starving the runner
		}
		if killedBySignal(p.cmd) {
			t.Fatalf("killed by %v, after writing %q", p.cmd.ProcessState.Sys().(syscall.WaitStatus).Signal(), p.stdout.String())
		}
		o := answerOf(t, waitErr, p.stdout.String(), p.stderr.String())
		is.Equal(o.exit, 3)
		is.Equal(o.code(), "CANCELLED")
	}
	t.Logf("%d rounds, %d signals sent in all", rounds, sent)
	if testutil.Long() { // that a signal came after the first is a race to observe: the long suite's
		is.True(sent > 2*rounds) // each round got more than one
	}
}

// A signal that lands while the 1.7 MB analyze response is being written
// cannot tear it: the runner is held in the middle of its write (the test
// reads the first 4 KiB, then stops reading, and the pipe holds 64 KiB),
// three signals arrive, and the rest of the line still comes, whole: one
// JSON line, exit 0, the run committed and verifying.
func TestSignalsDuringTheResponseWriteCannotTearIt(t *testing.T) {
	is := is.New(t)
	ws := maxFixture(t)
	digest := digestOf(t, ws)
	cmd := exec.Command(runnerPath(t), "--workspace", ws, "--output-dir", "runs")
	cmd.Dir = ws
	cmd.Stdin = strings.NewReader(analyzeRequest("r1", digest))
	stdout, err := cmd.StdoutPipe()
	is.NoErr(err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	is.NoErr(cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	head := make([]byte, 4096)
	_, err = io.ReadFull(stdout, head) // the answer has begun: the run is committed
	is.NoErr(err)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGINT} {
		inSyscall(t, cmd.Process.Pid, unix.SYS_WRITE, 1) // still inside its write, waiting for the reader
		is.NoErr(cmd.Process.Signal(sig))
	}
	rest, err := io.ReadAll(stdout)
	is.NoErr(err)
	o := answerOf(t, cmd.Wait(), string(head)+string(rest), stderr.String())
	is.True(!killedBySignal(cmd))
	is.True(len(o.raw) > 1<<20) // far more than a pipe holds: the write was really held
	is.Equal(o.exit, 0)
	is.Equal(o.resp["ok"], true)
	checkCompleteRun(t, ws, "runs", "r1")
}

// --- helpers ---

// signalled is one runner that was meant to get signals.
type signalled struct {
	killed    bool          // ended by a signal instead of answering
	signalled bool          // still running when its first signal was sent
	ran       time.Duration // from the delivery of its request to its exit
	outcome   outcome
}

// signalAfter starts the runner in dir with args, waits until it is ready
// (blocked reading its request), sends stdin and closes it, waits until the
// runner has read past its request (so a signal cannot land while standard
// input is still being read, where CANCELLED has no request_id), and sends
// the signals once delay has passed since, unless it has exited by then.
func signalAfter(t *testing.T, dir, stdin string, delay time.Duration, sigs []syscall.Signal, args ...string) signalled {
	t.Helper()
	p := startRunner(t, dir, args...)
	readingStdin(t, p)
	before := bytesRead(t, p.cmd.Process.Pid)
	p.send(t, stdin)
	readPast(t, p.cmd.Process.Pid, before+int64(len(stdin)))
	start := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	var s signalled
	var err error
	select {
	case err = <-exited:
	case <-time.After(delay):
		// Not yet reaped, so the signal reaches the process; one that
		// became a zombie meanwhile does not count as signalled.
		s.signalled = processState(p.cmd.Process.Pid) != "Z"
		for _, sig := range sigs {
			_ = p.cmd.Process.Signal(sig)
		}
		err = <-exited
	}
	s.ran = time.Since(start)
	if s.killed = killedBySignal(p.cmd); s.killed {
		if p.stdout.Len() != 0 {
			t.Errorf("a killed runner wrote %d bytes", p.stdout.Len())
		}
		return s
	}
	s.outcome = answerOf(t, err, p.stdout.String(), p.stderr.String())
	return s
}

// bytesRead is how many bytes process pid has read with read(2) and its
// kin so far: rchar of /proc/PID/io, or -1 once it has exited.
func bytesRead(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		if processState(pid) == "Z" || errors.Is(err, os.ErrNotExist) {
			return -1
		}
		t.Fatalf("cannot see what the runner has read: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no rchar in /proc/PID/io")
	return 0
}

// readPast returns once process pid has read more than n bytes in all
// (or has exited). Given n = what it had read while blocked on standard
// input plus the request's length, more than n means it has read its
// request to the end and gone on to read something else: its sources or
// its run's files, which it reads only once its request is decoded.
func readPast(t *testing.T, pid int, n int64) {
	t.Helper()
	guard := time.Now().Add(time.Minute) // a hang guard only
	for time.Now().Before(guard) {
		if got := bytesRead(t, pid); got < 0 || got > n || processState(pid) == "Z" {
			return
		}
		time.Sleep(100 * time.Microsecond) // /proc/PID/io tells no one when it moves: it is polled
	}
	t.Fatalf("the runner read no more than its request within a minute")
}

// readingStdin returns once one of the runner's threads is blocked in
// read(2) on its standard input. The runner installs its signal handler
// first thing in run, and reads its request only after, so from then on
// SIGINT and SIGTERM are caught.
func readingStdin(t *testing.T, p *runnerProc) {
	t.Helper()
	inSyscall(t, p.cmd.Process.Pid, unix.SYS_READ, 0)
}

// inSyscall returns once one of the threads of process pid is inside the
// system call nr on file descriptor fd, as /proc/PID/task/*/syscall shows
// (the call's number, then its first argument).
func inSyscall(t *testing.T, pid int, nr uintptr, fd int) {
	t.Helper()
	want := fmt.Sprintf("%d %#x ", nr, fd)
	guard := time.Now().Add(time.Minute) // a hang guard only
	for time.Now().Before(guard) {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/syscall", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			b, err := os.ReadFile(task)
			switch {
			case errors.Is(err, os.ErrPermission):
				t.Fatalf("cannot see what the runner is doing: %v", err)
			case err == nil && strings.HasPrefix(string(b), want):
				return
			}
		}
		if processState(pid) == "Z" {
			t.Fatalf("the runner exited before system call %d on fd %d", nr, fd)
		}
		time.Sleep(200 * time.Microsecond) // /proc/PID/task/*/syscall tells no one when it changes: it is polled
	}
	t.Fatalf("the runner never made system call %d on fd %d", nr, fd)
}

// waitsForFlock returns once process pid has a flock request on the file
// at path that waits in the kernel, as /proc/locks shows it ("->"): the
// runner has reached its wait for a lock the test holds.
func waitsForFlock(t *testing.T, pid int, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ino := ":" + strconv.FormatUint(fi.Sys().(*syscall.Stat_t).Ino, 10)
	want := strconv.Itoa(pid)
	guard := time.Now().Add(time.Minute) // a hang guard only
	for time.Now().Before(guard) {
		data, err := os.ReadFile("/proc/locks")
		if err != nil {
			t.Skipf("no /proc/locks to see the runner's wait in: %v", err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			// "1: -> FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
			f := strings.Fields(line)
			if len(f) > 6 && f[1] == "->" && f[2] == "FLOCK" && f[5] == want && strings.HasSuffix(f[6], ino) {
				return
			}
		}
		if processState(pid) == "Z" {
			t.Fatal("the runner exited before it waited for the lock")
		}
		// /proc/locks tells no one when a wait begins: it is polled.
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the runner never waited for the lock")
}

// processState is the state letter of /proc/PID/stat ("R", "S", "Z", …),
// "" when there is no such process.
func processState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// pid (comm) state …: comm may hold spaces, so cut after its ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2])
}

// killedBySignal reports whether the finished cmd was ended by a signal.
func killedBySignal(cmd *exec.Cmd) bool {
	status, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && status.Signaled()
}

// checkPoint names the cancel check a CANCELLED message reports.
func checkPoint(msg string) string {
	if m := checkedAt.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	if strings.Contains(msg, "while its request was being read") {
		return "while reading the request"
	}
	return msg
}

var checkedAt = regexp.MustCompile(`\(checked ([^)]*)\)`)
