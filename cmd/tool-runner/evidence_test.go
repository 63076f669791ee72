//go:build unix

package main

// Real-filesystem, real-subprocess tests of analyze's evidence commit
// (protocol §6) that need processes: the writer lock held by another
// process, pending directories, concurrent and killed analyzes. Every call
// runs the real tool-runner as a separate process. Collisions, the write
// boundary and the cancel file are testdata/script's collision, output_dir
// and cancel.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/internal/testutil"
)

// A lock held by another process answers OUTPUT_BUSY at once: exit 1,
// retryable, nothing committed, no pending directory, and the holder keeps
// running and keeps its lock. Once the holder dies (SIGKILL), the lock dies
// with it and the next analyze succeeds, though .writer.lock stays.
func TestABusyLockAnswersOutputBusyAndSparesItsHolder(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	runs := filepath.Join(ws, "runs")
	lock := filepath.Join(runs, ".writer.lock")
	is.NoErr(os.MkdirAll(runs, 0o755))
	holder := startLockHolder(t, lock)
	digest := digestOf(t, ws)

	// A hang guard only: an analyze that waited for the lock would wait
	// forever; killing the holder after a minute turns that into a failure.
	guard := time.AfterFunc(time.Minute, func() { _ = holder.Process.Kill() })
	o := call(t, ws, analyzeRequest("r1", digest), "--workspace", ws, "--output-dir", "runs")
	is.True(guard.Stop()) // the holder was never killed by the guard
	is.Equal(o.code(), "OUTPUT_BUSY")
	is.Equal(o.exit, 1)
	is.Equal(o.resp["ok"], false)
	is.Equal(o.resp["status"], "error")
	is.Equal(isRetryable(o), true)
	is.Equal(o.resp["result"], nil)
	is.Equal(o.resp["artifacts"], map[string]any{})
	is.Equal(runsIn(t, runs), []string(nil))    // nothing committed
	is.Equal(pendingIn(t, runs), []string(nil)) // no pending directory
	is.Equal(entriesIn(t, runs), []string{".writer.lock"})

	// The holder is unaffected: still running, still holding the lock.
	is.Equal(holder.ProcessState, nil)
	is.NoErr(holder.Process.Signal(syscall.Signal(0)))
	is.True(errors.Is(tryLock(t, lock), unix.EWOULDBLOCK))

	// Killed, the holder takes its lock with it.
	is.NoErr(holder.Process.Signal(syscall.SIGKILL))
	_ = holder.Wait()
	is.NoErr(tryLock(t, lock))
	o = call(t, ws, analyzeRequest("r1", digest), "--workspace", ws, "--output-dir", "runs")
	is.Equal(o.exit, 0)
	is.Equal(o.resp["status"], "success")
	checkCompleteRun(t, ws, "runs", "r1")
}

// No pending directory outlives the call that made it: after a success, a
// collision, a busy lock and a stale digest, the output directory holds the
// committed runs and .writer.lock, nothing else.
func TestNoPendingDirectorySurvivesACall(t *testing.T) {
	ws := fixture(t)
	runs := filepath.Join(ws, "runs")
	digest := digestOf(t, ws)
	analyzeIn := func(t *testing.T, id, digest string) outcome {
		return call(t, ws, analyzeRequest(id, digest), "--workspace", ws, "--output-dir", "runs")
	}
	steps := []struct {
		name string
		do   func(t *testing.T) outcome
		code string // "" for success
	}{
		{"a success", func(t *testing.T) outcome { return analyzeIn(t, "r1", digest) }, ""},
		{"a collision", func(t *testing.T) outcome { return analyzeIn(t, "r1", digest) }, "OUTPUT_COLLISION"},
		{"a busy lock", func(t *testing.T) outcome {
			holder := startLockHolder(t, filepath.Join(runs, ".writer.lock"))
			defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
			return analyzeIn(t, "r2", digest)
		}, "OUTPUT_BUSY"},
		{"a stale digest", func(t *testing.T) outcome { return analyzeIn(t, "r3", strings.Repeat("0", 64)) }, "STALE_CONTEXT"},
		{"a second success", func(t *testing.T) outcome { return analyzeIn(t, "r4", digest) }, ""},
	}
	var committed []string
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			is := is.New(t)
			o := st.do(t)
			is.Equal(o.code(), st.code)
			if st.code == "" {
				committed = append(committed, o.resp["request_id"].(string))
			}
			is.Equal(pendingIn(t, runs), []string(nil))                                  // no pending directory
			is.Equal(entriesIn(t, runs), append([]string{".writer.lock"}, committed...)) // the runs and the lock, nothing else
		})
	}
}

// result.json holds no time and no run ID: two runs over the same sources
// and engine have byte-identical result.json, equal to the response's
// result, and different receipts.
func TestTwoRunIDsOverTheSameSourcesGiveIdenticalResultBytes(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	o1 := analyze(t, ws, "runs", "first")
	o2 := analyze(t, ws, "runs", "second")
	read := func(id, name string) []byte {
		data, err := os.ReadFile(filepath.Join(ws, "runs", id, name))
		is.NoErr(err)
		return data
	}
	r1, r2 := read("first", "result.json"), read("second", "result.json")
	is.True(bytes.Equal(r1, r2))
	is.True(!bytes.Equal(read("first", "receipt.json"), read("second", "receipt.json")))
	var saved map[string]any
	is.NoErr(json.Unmarshal(r1, &saved))
	is.Equal(saved, o1.result())
	is.Equal(o1.result(), o2.result())
}

// Eight analyze processes started together on one output directory. With
// one run ID, exactly one commits and every other answers OUTPUT_BUSY or
// OUTPUT_COLLISION; the run verifies. With eight run IDs, each answers
// success or OUTPUT_BUSY (retryable) and nothing else; every run that
// exists is complete and verifies; no pending directory remains.
func TestConcurrentAnalyzesCommitEachRunAtMostOnce(t *testing.T) {
	const n = 8
	for _, sameID := range []bool{true, false} {
		name := "distinct run IDs"
		if sameID {
			name = "one run ID"
		}
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			ws := fixture(t)
			digest := digestOf(t, ws)
			runs := filepath.Join(ws, "runs")
			mustMkdir(t, runs)

			procs := make([]*runnerProc, n)
			ids := make([]string, n)
			for i := range procs {
				ids[i] = "same"
				if !sameID {
					ids[i] = fmt.Sprintf("run-%d", i)
				}
				procs[i] = startRunner(t, ws, "--workspace", ws, "--output-dir", "runs")
			}
			// Everyone is running and waiting for input: release them together.
			for i, p := range procs {
				p.send(t, analyzeRequest(ids[i], digest))
			}
			counts := map[string]int{}
			for i, p := range procs {
				o := p.finish(t)
				c := o.code()
				if c == "" {
					c = "success"
					is.Equal(o.exit, 0)
				}
				counts[c]++
				if c == "OUTPUT_BUSY" {
					is.Equal(isRetryable(o), true)
				}
				if sameID {
					is.True(c == "success" || c == "OUTPUT_BUSY" || c == "OUTPUT_COLLISION") // only success, busy or collision
				} else {
					is.True(c == "success" || c == "OUTPUT_BUSY") // only success or busy
					_, err := os.Lstat(filepath.Join(runs, ids[i]))
					is.Equal(err == nil, c == "success") // run exists exactly when it succeeded
				}
			}
			t.Logf("%d processes at once: %v", n, counts)
			if sameID {
				is.Equal(counts["success"], 1)
			} else {
				is.True(counts["success"] >= 1) // whoever locked first committed
			}
			is.Equal(pendingIn(t, runs), []string(nil))
			for _, id := range runsIn(t, runs) {
				checkCompleteRun(t, ws, "runs", id)
			}
			is.Equal(len(runsIn(t, runs)), counts["success"])
		})
	}
}

// SIGKILL at any moment of an analyze over the maximum inputs never leaves
// anything that can be taken for a run: every visible entry of the output
// directory is a complete run (exactly the three files, checksums matching
// the bytes) that verifies. A killed writer's hidden .pending-* directory
// may stay for the operator; it is counted, never read as a run. The lock
// dies with each killed writer, so the next analyze succeeds.
func TestKillingAnalyzeAtAnyMomentLeavesOnlyCompleteRuns(t *testing.T) {
	testutil.SkipUnlessLong(t)
	killAnalyzeAtAnyMoment(t, nil)
}

// The same for signed runs (protocol §10): the attestation is staged and
// fsynced with the other three files and committed by the same rename, so
// every visible run holds exactly four files, is signed by the key, its
// attestation verifies by these tests' own code, and it verifies with the
// key trusted.
func TestKillingASignedAnalyzeAtAnyMomentLeavesOnlyCompleteSignedRuns(t *testing.T) {
	testutil.SkipUnlessLong(t)
	key := newTestKey(t, t.TempDir(), "key")
	killAnalyzeAtAnyMoment(t, &key)
}

// killAnalyzeAtAnyMoment is the kill test, signing with key unless it is
// nil.
func killAnalyzeAtAnyMoment(t *testing.T, key *testKey) {
	is := is.New(t)
	ws := maxFixture(t)
	runs := filepath.Join(ws, "runs")
	digest := digestOf(t, ws)
	var keyArgs []string
	if key != nil {
		keyArgs = []string{"--signing-key", key.privPath}
	}
	args := append([]string{"--workspace", ws, "--output-dir", "runs"}, keyArgs...)
	// checkRun asserts that a visible run is complete, and signed by the
	// key when there is one.
	checkRun := func(id string) {
		t.Helper()
		checkCompleteRun(t, ws, "runs", id)
		if key != nil {
			checkSignedBy(t, ws, "runs", id, *key)
		}
	}

	// How long one uncontended analyze takes here, into a directory of
	// its own.
	full := medianAnalyze(t, ws, digest, append([]string{"--workspace", ws, "--output-dir", "timing"}, keyArgs...))

	// Half the attempts sweep evenly from 0 to 1.2 times that; the other
	// half sweep again, finely, across the stretch where the sweep saw the
	// outcome turn from "nothing written" to "committed", which holds the
	// writes and the commit.
	attempts := 40
	if testing.Short() {
		attempts = 12
	}
	coarse := attempts / 2
	var killedBefore, killedMidCommit, killedAfterCommit, finished int
	lastEmpty, firstCommitted := time.Duration(0), time.Duration(float64(full)*1.2)
	attempt := func(i int, delay time.Duration) {
		id := fmt.Sprintf("kill-%02d", i)
		pendingBefore := len(pendingIn(t, runs))
		signaled, _, err := runKilledAfter(t, ws, analyzeRequest(id, digest), delay, args...)

		_, runErr := os.Lstat(filepath.Join(runs, id))
		committed := runErr == nil
		leftPending := len(pendingIn(t, runs)) > pendingBefore
		switch {
		case !signaled:
			finished++
			is.NoErr(err)      // an analyze that ran to its end succeeded
			is.True(committed) // and committed
		case leftPending:
			killedMidCommit++
			is.True(!committed) // a pending directory left means no run
		case committed:
			killedAfterCommit++
		default:
			killedBefore++
		}
		if i < coarse {
			switch {
			case committed:
				firstCommitted = min(firstCommitted, delay)
			case !leftPending:
				lastEmpty = max(lastEmpty, delay)
			}
		}
	}
	for i := range coarse {
		attempt(i, time.Duration(float64(full)*1.2*float64(i)/float64(coarse-1)))
	}
	lo, hi := min(lastEmpty, firstCommitted), max(lastEmpty, firstCommitted)
	for i := coarse; i < attempts; i++ {
		attempt(i, lo+time.Duration(float64(hi-lo)*float64(i-coarse)/float64(attempts-coarse-1)))
	}
	pending := pendingIn(t, runs)
	t.Logf("%d attempts, delays 0..%v then %v..%v: %d killed before writing, %d killed mid-write leaving a pending directory, %d killed after the commit, %d ran to the end; %d pending directories left",
		attempts, time.Duration(float64(full)*1.2), lo, hi, killedBefore, killedMidCommit, killedAfterCommit, finished, len(pending))
	is.Equal(len(pending), killedMidCommit)
	if !testing.Short() {
		// The sweep reached both sides of the commit: kills that left
		// nothing, and calls whose run stands.
		is.True(killedBefore > 0)
		is.True(killedAfterCommit+finished > 0)
	}
	for _, name := range pending {
		t.Logf("left for the operator: %s holding %v", name, entriesIn(t, filepath.Join(runs, name)))
		// A pending name is not even a valid run ID, so no call can read
		// one as a run.
		v := call(t, ws, verifyRequest("v1", name), args...)
		is.Equal(v.code(), "INVALID_ARGUMENTS")
	}

	for _, id := range runsIn(t, runs) {
		checkRun(id)
	}
	is.Equal(len(runsIn(t, runs)), killedAfterCommit+finished)
	for _, name := range entriesIn(t, runs) {
		is.True(!strings.HasPrefix(name, ".") || name == ".writer.lock" || strings.HasPrefix(name, ".pending-")) // hidden: only the lock and pending directories
	}

	// No stale lock: the next analyze commits.
	o := call(t, ws, analyzeRequest("after-kills", digest), args...)
	is.Equal(o.exit, 0)
	checkRun("after-kills")
	is.Equal(len(pendingIn(t, runs)), len(pending)) // and another writer's pending directories stay
}

// --- helpers ---

// isRetryable is the response's error.retryable, false when there is no error.
func isRetryable(o outcome) bool {
	e, _ := o.resp["error"].(map[string]any)
	r, _ := e["retryable"].(bool)
	return r
}

// tryLock takes and at once drops flock(LOCK_EX|LOCK_NB) on path through a
// fresh open file description, and returns the flock error.
func tryLock(t *testing.T, path string) error {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	}
	return err
}

// mustMkdir creates path and its parents.
func mustMkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

// mustSymlink creates the symlink link to target, and link's parents.
func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	mustMkdir(t, filepath.Dir(link))
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// entriesIn lists the names in dir, sorted; nil when dir does not exist.
func entriesIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// pendingIn lists dir's pending directories (names starting ".pending-").
func pendingIn(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	for _, name := range entriesIn(t, dir) {
		if strings.HasPrefix(name, ".pending-") {
			names = append(names, name)
		}
	}
	return names
}

// runsIn lists what dir offers as runs: every name not starting with '.'.
func runsIn(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	for _, name := range entriesIn(t, dir) {
		if !strings.HasPrefix(name, ".") {
			names = append(names, name)
		}
	}
	return names
}

// checkCompleteRun asserts that ws/out/id is a complete run: a directory
// holding exactly result.json, receipt.json and checksums.json (and
// attestation.json, exactly when the receipt names a signer), all regular
// files, whose checksums and receipt match the bytes, whose attestation
// verifies with the signer's key by these tests' own code, and which
// verify_result answers verified.
func checkCompleteRun(t *testing.T, ws, out, id string) {
	t.Helper()
	dir := filepath.Join(ws, out, id)
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		t.Fatalf("run %s is not a directory: %v", id, err)
	}
	receiptBytes, err := os.ReadFile(filepath.Join(dir, "receipt.json"))
	if err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	signer := signerOfRun(t, receiptBytes)
	names := []string{"checksums.json", "receipt.json", "result.json"}
	if signer != nil {
		names = []string{"attestation.json", "checksums.json", "receipt.json", "result.json"}
	}
	if got := entriesIn(t, dir); !slices.Equal(got, names) {
		t.Fatalf("run %s holds %v, want %v", id, got, names)
	}
	files := map[string][]byte{}
	for _, name := range names {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("run %s: %s is not a regular file: %v", id, name, err)
		}
		if files[name], err = os.ReadFile(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	var sums map[string]string
	if err := json.Unmarshal(files["checksums.json"], &sums); err != nil {
		t.Fatalf("run %s: checksums.json: %v", id, err)
	}
	var receipt struct {
		RunID        string `json:"run_id"`
		ResultSHA256 string `json:"result_sha256"`
	}
	if err := json.Unmarshal(files["receipt.json"], &receipt); err != nil {
		t.Fatalf("run %s: receipt.json: %v", id, err)
	}
	want := map[string]string{"receipt.json": testutil.SHA256Hex(files["receipt.json"]), "result.json": testutil.SHA256Hex(files["result.json"])}
	switch {
	case len(sums) != 2 || sums["receipt.json"] != want["receipt.json"] || sums["result.json"] != want["result.json"]:
		t.Errorf("run %s: checksums %v, bytes hash to %v", id, sums, want)
	case receipt.ResultSHA256 != want["result.json"]:
		t.Errorf("run %s: receipt's result_sha256 %s, result hashes to %s", id, receipt.ResultSHA256, want["result.json"])
	case receipt.RunID != id:
		t.Errorf("run %s: receipt names run %q", id, receipt.RunID)
	}
	if signer != nil {
		if p := attestationProblem(files, signer); p != "" {
			t.Errorf("run %s: attestation.json: %s", id, p)
		}
	}
	v := call(t, ws, verifyRequest("v1", id), "--workspace", ws, "--output-dir", out)
	if v.exit != 0 || v.result()["integrity"] != "verified" {
		t.Errorf("run %s does not verify: %s", id, v.raw)
	}
}

// runnerProc is a runner process started with its standard input still
// open, so that several can be released at the same moment.
type runnerProc struct {
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	stdout, stderr bytes.Buffer
}

// startRunner starts the runner in dir with args; it waits for its request.
func startRunner(t *testing.T, dir string, args ...string) *runnerProc {
	t.Helper()
	return startProc(t, runnerPath(t), dir, args...)
}

// send writes the request and closes standard input.
func (p *runnerProc) send(t *testing.T, req string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, req); err != nil {
		t.Fatal(err)
	}
	if err := p.stdin.Close(); err != nil {
		t.Fatal(err)
	}
}

// finish waits for the process and checks its answer as call does.
func (p *runnerProc) finish(t *testing.T) outcome {
	t.Helper()
	return answerOf(t, p.cmd.Wait(), p.stdout.String(), p.stderr.String())
}

// medianAnalyze is how long one analyze of ws with args takes here,
// measured as runKilledAfter times its kills, from the process's start to
// its exit: the median of five, each its own run.
func medianAnalyze(t *testing.T, ws, digest string, args []string) time.Duration {
	t.Helper()
	var took []time.Duration
	for i := range 5 {
		signaled, d, err := runKilledAfter(t, ws, analyzeRequest(fmt.Sprintf("timing-%d", i), digest), -1, args...)
		if signaled || err != nil {
			t.Fatalf("a timing analyze failed: signaled %v, %v", signaled, err)
		}
		took = append(took, d)
	}
	slices.Sort(took)
	t.Logf("one uncontended analyze: %v, the median of %v", took[len(took)/2], took)
	return took[len(took)/2]
}

// runKilledAfter starts the runner in dir with stdin and args, sends it
// SIGKILL once delay has passed since its start (never when delay is
// negative), and waits for it. It reports whether the signal ended the
// process, how long it ran, and the error of its end.
func runKilledAfter(t *testing.T, dir, stdin string, delay time.Duration, args ...string) (signaled bool, ran time.Duration, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard only
	defer cancel()
	cmd := exec.CommandContext(ctx, runnerPath(t), args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if delay >= 0 {
		time.Sleep(delay)                       // the moment of the kill is what the sweep varies
		_ = cmd.Process.Signal(syscall.SIGKILL) // fails only when it already exited
	}
	err = cmd.Wait()
	ran = time.Since(start)
	status, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return status.Signaled() && status.Signal() == syscall.SIGKILL, ran, err
}
