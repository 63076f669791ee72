//go:build unix

package main

// Bursts of real processes on one ledger (protocol §11, issues 15 and 23):
// waits for the ledger's lock sleep in the kernel and last while the line
// moves, so that every process of a burst gets its turn however long the
// line, and analyze holds the ledger's lock across its commit, so that no
// run is ever committed without its record. They are long tests
// (METRICPROOF_LONG=1): hundreds of processes.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/internal/testutil"
)

// burstRunnerEnv names another tool-runner binary for the burst tests to
// start instead of the installed one: README ("Measuring a burst") builds
// the base revision and the current one and runs the same burst on each.
const burstRunnerEnv = "METRICPROOF_BURST_RUNNER"

// burstRunner is the runner binary a burst starts.
func burstRunner(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(burstRunnerEnv); p != "" {
		return p
	}
	return runnerPath(t)
}

// burstCall is one process of a burst: what it was asked, and its answer.
type burstCall struct {
	req, out string // the request; the output directory ("" for none)
	proc     *runnerProc
	answer   outcome
}

// burstFigures sums up a burst: how many calls failed (by code), how many
// runs were committed without exactly one record, and the CPU the
// processes used.
type burstFigures struct {
	calls, committed int
	failures         map[string]int // code → calls
	unrecorded       int            // committed runs with no record
	recordedTwice    int            // committed runs with more than one
	cpu              time.Duration  // user + system of every process
	wall             time.Duration  // from the release of the requests to the last exit
}

func (f burstFigures) String() string {
	codes := make([]string, 0, len(f.failures))
	for c, n := range f.failures {
		codes = append(codes, fmt.Sprintf("%s×%d", c, n))
	}
	sort.Strings(codes)
	return fmt.Sprintf("%d calls: %d runs committed, failures %v, %d committed runs without a record, %d recorded twice; children's CPU %.2f s, wall %.2f s",
		f.calls, f.committed, codes, f.unrecorded, f.recordedTwice, f.cpu.Seconds(), f.wall.Seconds())
}

// runBurst starts n one-shot processes of exe on ws with one shared
// ledger, each waiting for its request: the even ones analyze into an
// output directory of their own, the odd ones alternately inspect and
// verify the run "base" of runs/. Once all have started, every request is
// written at once. It returns the calls with their answers.
func runBurst(t *testing.T, exe, ws string, n int) ([]*burstCall, burstFigures) {
	t.Helper()
	digest := digestOf(t, ws)
	calls := make([]*burstCall, n)
	for i := range calls {
		c := &burstCall{out: "runs"}
		switch {
		case i%2 == 0:
			c.out = fmt.Sprintf("burst/o%03d", i)
			c.req = analyzeRequest(fmt.Sprintf("a%03d", i), digest)
		case i%4 == 1:
			c.req = inspectRequest(fmt.Sprintf("i%03d", i))
		default:
			c.req = verifyRequest(fmt.Sprintf("v%03d", i), "base")
		}
		c.proc = startProc(t, exe, ws, "--workspace", ws, "--output-dir", c.out, "--ledger", "ledger.jsonl")
		calls[i] = c
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Go(func() { c.proc.sendQuietly(c.req) })
	}
	wg.Wait()
	exited := make([]time.Duration, n)
	errs := make([]error, n)
	for i, c := range calls {
		wg.Go(func() {
			errs[i] = c.proc.cmd.Wait()
			exited[i] = time.Since(start)
		})
	}
	wg.Wait()
	f := burstFigures{calls: n, failures: map[string]int{}}
	for i, c := range calls {
		c.answer = answerOf(t, errs[i], c.proc.stdout.String(), c.proc.stderr.String())
		f.cpu += c.proc.cmd.ProcessState.UserTime() + c.proc.cmd.ProcessState.SystemTime()
		if code := c.answer.code(); code != "" {
			f.failures[code]++
		}
		f.wall = max(f.wall, exited[i])
	}
	return calls, f
}

// startProc starts the runner binary exe in dir with args; it waits for
// its request.
func startProc(t *testing.T, exe, dir string, args ...string) *runnerProc {
	t.Helper()
	p := &runnerProc{}
	p.cmd = startRetrying(t, func() *exec.Cmd {
		p.stdout.Reset()
		p.stderr.Reset()
		cmd := exec.Command(exe, args...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = &p.stdout, &p.stderr
		var err error
		if p.stdin, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		return cmd
	})
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p
}

// startRetrying starts the command build makes, again with a new one
// while a freshly written binary is still open for writing in another
// test's fork (ETXTBSY).
func startRetrying(t *testing.T, build func() *exec.Cmd) *exec.Cmd {
	t.Helper()
	for range 100 {
		cmd := build()
		err := cmd.Start()
		if err == nil {
			return cmd
		}
		if !errors.Is(err, syscall.ETXTBSY) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // the other fork closes the binary when it execs: no event tells this one when
	}
	t.Fatal("the runner's binary stayed busy")
	return nil
}

// sendQuietly writes the request and closes standard input, from any
// goroutine; a process that already answered (it refused before reading)
// makes the write fail, which its answer shows.
func (p *runnerProc) sendQuietly(req string) {
	_, _ = p.stdin.Write([]byte(req))
	_ = p.stdin.Close()
}

// committedRuns lists every run committed under ws's output directories
// of calls: output directory/run ID → SHA256 of its result.json.
func committedRuns(t *testing.T, ws string, calls []*burstCall) map[string]string {
	t.Helper()
	runs := map[string]string{}
	seen := map[string]bool{}
	for _, c := range calls {
		if seen[c.out] {
			continue
		}
		seen[c.out] = true
		for _, id := range runsIn(t, filepath.Join(ws, c.out)) {
			data, err := os.ReadFile(filepath.Join(ws, c.out, id, "result.json"))
			if err != nil {
				t.Fatalf("run %s/%s has no result.json: %v", c.out, id, err)
			}
			runs[id] = testutil.SHA256Hex(data)
		}
	}
	return runs
}

// checkBurstLedger checks the ledger after a burst with the test's own
// hashes: an unbroken chain; every answered call recorded exactly once
// (by its response's SHA256); every committed run named by exactly one
// record, with its result's SHA256. It counts into f what it finds, and
// returns the records.
func checkBurstLedger(t *testing.T, ws string, answered []string, runs map[string]string, f *burstFigures) []record {
	t.Helper()
	recs, _ := checkChain(t, ledgerLines(t, filepath.Join(ws, "ledger.jsonl")))
	byResponse := map[string]int{}
	byRun := map[string]int{}
	for _, r := range recs {
		byResponse[r["response_sha256"].(string)]++
		if id, ok := r["run_id"].(string); ok {
			byRun[id]++
			if runs[id] != "" && r["result_sha256"] != runs[id] {
				t.Errorf("the record of run %s names result %v, the run's result hashes to %s", id, r["result_sha256"], runs[id])
			}
		}
	}
	for _, sum := range answered {
		if byResponse[sum] != 1 {
			t.Errorf("an answered call is recorded %d times", byResponse[sum])
		}
	}
	f.committed = len(runs)
	for id := range runs {
		switch byRun[id] {
		case 0:
			f.unrecorded++
		case 1:
		default:
			f.recordedTwice++
		}
	}
	return recs
}

// A burst of one-shot processes started together on 2 cores, one shared
// ledger (issue 15's second repro: 400 in the full run, 40 under -short):
// half analyze, each into an output directory of its own, the others
// inspect or verify. Every call is answered with success: no wait for the
// ledger's lock gives up, since waiters sleep in the kernel, the holders
// get the CPU, and a wait lasts while the line moves (issue 23: with a
// fixed 10 s bound, 24–192 calls of 400 failed on a loaded machine). Every committed run has exactly one record, every
// answer is recorded once, and the chain verifies, by the test's own
// hashes and by "tool-runner ledger".
func TestABurstOfOneShotProcessesIsAnsweredAndRecordedWhole(t *testing.T) {
	testutil.SkipUnlessLong(t)
	n := 400
	if testing.Short() {
		n = 40
	}
	is := is.New(t)
	ws := fixture(t)
	exe := burstRunner(t)
	if o := callWith(t, exe, ws, analyzeRequest("base", digestOf(t, ws)), "--workspace", ws, "--output-dir", "runs"); o.exit != 0 {
		t.Fatalf("the base run failed: %s", o.raw)
	}
	calls, f := runBurst(t, exe, ws, n)
	runs := committedRuns(t, ws, calls)
	delete(runs, "base")
	var answered []string
	for _, c := range calls {
		answered = append(answered, responseSHA256(c.answer))
	}
	recs := checkBurstLedger(t, ws, answered, runs, &f)
	t.Logf("%s", f)
	is.Equal(f.failures, map[string]int{}) // every call succeeded: no lock wait ran out
	is.Equal(f.committed, n/2)             // every analyze committed its run
	is.Equal(f.unrecorded, 0)              // and every run has its record
	is.Equal(f.recordedTwice, 0)
	is.Equal(len(recs), n) // one record per call, none more
	records, _ := verifiedLedger(t, ws, "ledger.jsonl")
	is.Equal(records, int64(n))
}

// An MCP server and one-shot processes on one ledger at once: the server's
// calls (analyzes of its own output directory, inspections,
// verifications, sent at once) and the processes' calls all get their
// turn at the ledger's lock, every call is recorded once, and every run
// either made has exactly one record.
func TestABurstOverMCPAndOneShotTogetherKeepsTheLedgerWhole(t *testing.T) {
	testutil.SkipUnlessLong(t)
	n, m := 100, 60 // one-shot processes; MCP calls
	if testing.Short() {
		n, m = 20, 12
	}
	is := is.New(t)
	ws := fixture(t)
	analyze(t, ws, "runs", "base")
	digest := digestOf(t, ws)
	server := startRawServer(t, ws, "--output-dir", "mcp-runs", "--ledger", "ledger.jsonl")
	server.exchange(initialize("2025-06-18"))
	server.send(initialized)

	done := make(chan struct{})
	go func() {
		defer close(done)
		var batch strings.Builder
		for i := range m {
			switch i % 3 {
			case 0:
				fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"analyze","arguments":{"expected_source_digest":%q,"run_id":"m%03d"}}}`+"\n", i+1, digest, i)
			case 1:
				fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{}}}`+"\n", i+1)
			default:
				fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"verify_result","arguments":{"run_id":"m000"}}}`+"\n", i+1)
			}
		}
		_, _ = server.stdin.Write([]byte(batch.String()))
	}()
	calls, f := runBurst(t, runnerPath(t), ws, n)
	<-done
	mcpAnswers, exit := server.finish()
	is.Equal(exit, 0)
	is.Equal(len(mcpAnswers), m) // every MCP call answered once

	var answered []string
	mcpCodes := map[string]int{}
	for _, c := range calls {
		answered = append(answered, responseSHA256(c.answer))
	}
	for _, a := range mcpAnswers {
		res, _ := a["result"].(map[string]any)
		content, _ := res["content"].([]any)
		if len(content) == 0 {
			t.Fatalf("not a tool result: %v", a)
		}
		text := content[0].(map[string]any)["text"].(string)
		answered = append(answered, testutil.SHA256Hex([]byte(text)))
		var body map[string]any
		is.NoErr(json.Unmarshal([]byte(text), &body))
		if e, ok := body["error"].(map[string]any); ok {
			mcpCodes[e["code"].(string)]++
		}
	}
	runs := committedRuns(t, ws, append(calls, &burstCall{out: "mcp-runs"}))
	delete(runs, "base")
	recs := checkBurstLedger(t, ws, answered, runs, &f)
	t.Logf("one-shot: %s; MCP failures %v", f, mcpCodes)
	is.Equal(f.failures, map[string]int{}) // every one-shot call succeeded
	// A verify may run before m000 is committed (MISSING_RESULT); nothing
	// else fails.
	is.True(slices.Equal(keysOf(mcpCodes), []string{}) || slices.Equal(keysOf(mcpCodes), []string{"MISSING_RESULT"}))
	is.Equal(f.committed, n/2+(m+2)/3) // every analyze committed its run
	is.Equal(f.unrecorded, 0)
	is.Equal(f.recordedTwice, 0)
	is.Equal(len(recs), n+m)
	records, _ := verifiedLedger(t, ws, "ledger.jsonl")
	is.Equal(records, int64(n+m))
}

// keysOf is the sorted keys of a count map.
func keysOf(m map[string]int) []string {
	keys := []string{}
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
