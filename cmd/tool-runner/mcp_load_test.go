//go:build unix

package main

// Real-process tests of protocol §9's Load and strictness bounds: memory
// bounded whatever a client sends (peak RSS, VmHWM, is the contract's own
// figure: 96 MiB), calls answered exactly once, waiting calls cancelled
// without computing, ids answered exactly as sent, and the 2026-07-28
// revision's stateless requests under the same line checks.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/adapters/engine"
	"github.com/metricproof/metricproof/adapters/mcp"
	"github.com/metricproof/metricproof/internal/testutil"
)

// maxRSSKiB is protocol §9's bound on the server's peak RSS.
const maxRSSKiB = 96 << 10

// loadServer is "tool-runner mcp" over raw pipes, for many large answers:
// each line it writes is decoded to what the tests look at as it arrives,
// and the rest is dropped, so that the test process stays small too.
type loadServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    chan loadAnswer
	stderr bytes.Buffer
}

// loadAnswer is one line the server wrote, reduced.
type loadAnswer struct {
	raw     string // the line, when under 64 KiB
	id      string // the id's JSON text
	rpcCode int64  // a JSON-RPC error's code, else 0
	isError bool   // a tool result's isError
	code    string // the tool's error code
	message string // the tool's error message
	request string // the tool's request_id
	tool    string
}

func startLoadServer(t *testing.T, ws string, env []string, args ...string) *loadServer {
	t.Helper()
	s := &loadServer{t: t, out: make(chan loadAnswer, 16)}
	var out io.Reader
	s.cmd, s.stdin, out = startMCP(t, ws, env, &s.stderr, args...)
	go func() {
		defer close(s.out)
		r := bufio.NewReaderSize(out, 1<<20)
		for {
			l, err := r.ReadBytes('\n')
			if len(l) > 0 {
				s.out <- reduce(l)
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

// startMCP starts "tool-runner mcp --workspace ws args..." in ws, with env
// added to the environment and stderr collected, over pipes; the test
// kills it at cleanup if it still runs.
func startMCP(t *testing.T, ws string, env []string, stderr io.Writer, args ...string) (*exec.Cmd, io.WriteCloser, io.Reader) {
	t.Helper()
	cmd := exec.Command(runnerPath(t), append([]string{"mcp", "--workspace", ws}, args...)...)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, stdin, out
}

// reduce decodes what the tests look at in one line.
func reduce(l []byte) loadAnswer {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Error  *struct{ Code int64 }
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	a := loadAnswer{id: "?"}
	if len(l) < 64<<10 {
		a.raw = string(l)
	}
	if json.Unmarshal(l, &m) != nil {
		return a
	}
	a.id = string(m.ID)
	if m.Error != nil {
		a.rpcCode = m.Error.Code
		return a
	}
	a.isError = m.Result.IsError
	if len(m.Result.Content) > 0 {
		var body struct {
			RequestID string `json:"request_id"`
			Tool      string `json:"tool"`
			Error     *struct{ Code, Message string }
		}
		if json.Unmarshal([]byte(m.Result.Content[0].Text), &body) == nil {
			a.request, a.tool = body.RequestID, body.Tool
			if body.Error != nil {
				a.code, a.message = body.Error.Code, body.Error.Message
			}
		}
	}
	return a
}

func (s *loadServer) send(lines ...string) {
	s.t.Helper()
	sendLines(s.t, s.stdin, lines...)
}

// sendLines writes each line and its newline to a server's input.
func sendLines(t *testing.T, stdin io.Writer, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(stdin, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// next returns the next line the server wrote.
func (s *loadServer) next() loadAnswer {
	s.t.Helper()
	select {
	case a, ok := <-s.out:
		if !ok {
			s.t.Fatal("the server's output ended")
		}
		return a
	case <-time.After(5 * time.Minute): // a hang guard only
		s.t.Fatal("no answer within five minutes")
	}
	return loadAnswer{}
}

// peakKiB is the server's peak RSS so far (VmHWM), in KiB.
func (s *loadServer) peakKiB() int {
	s.t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		s.t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kib, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				s.t.Fatal(err)
			}
			return kib
		}
	}
	s.t.Fatal("no VmHWM")
	return 0
}

// finish closes the input and returns what is left, and the exit status.
func (s *loadServer) finish() ([]loadAnswer, int) {
	s.t.Helper()
	s.stdin.Close()
	var rest []loadAnswer
	for a := range s.out {
		rest = append(rest, a)
	}
	return rest, waitMCP(s.t, s.cmd, &s.stderr)
}

// waitMCP waits for a server started by startMCP to exit and returns its
// exit status; the test fails if it wrote to stderr anything but its start
// warning.
func waitMCP(t *testing.T, cmd *exec.Cmd, stderr *bytes.Buffer) int {
	t.Helper()
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if stderr.String() != startWarning() {
		t.Errorf("stderr: %q", stderr.String())
	}
	return code
}

// startWarning is what "tool-runner mcp" writes on stderr at start when
// its engine cannot be rebuilt (protocol §9.1): the runner of these tests
// is the test binary, built by go test, which no one can rebuild, so a
// healthy session says so in one line and nothing else.
func startWarning() string { return mcp.EngineWarning(engine.Settings()) }

func toolLine(id, tool, arguments string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, arguments)
}

// protocol §9, Load, the must-show: 600 calls sent at once, 200 of each tool,
// at §8's maximum inputs, are each answered exactly once, every analyze
// commits its run, and the server's peak RSS stays within 96 MiB.
func TestMCP600CallsAtOnceAtTheMaximumAreAnsweredOnceWithin96MiB(t *testing.T) {
	testutil.SkipUnlessLong(t)
	if testing.Short() {
		t.Skip("600 calls at the maximum inputs")
	}
	is := is.New(t)
	ws := maxFixture(t)
	digest := digestOf(t, ws)
	analyze(t, ws, "runs", "base")
	s := startLoadServer(t, ws, nil, "--output-dir", "runs")
	s.send(initialize("2025-06-18"), initialized)
	is.Equal(s.next().id, "0")
	const each = 200
	var batch strings.Builder
	for i := range each {
		batch.WriteString(toolLine(fmt.Sprintf(`"i%d"`, i), "inspect_inputs", `{}`) + "\n")
		batch.WriteString(toolLine(fmt.Sprintf(`"a%d"`, i), "analyze", fmt.Sprintf(`{"expected_source_digest":%q,"run_id":"load-%d"}`, digest, i)) + "\n")
		batch.WriteString(toolLine(fmt.Sprintf(`"v%d"`, i), "verify_result", `{"run_id":"base"}`) + "\n")
	}
	sent := make(chan error, 1)
	go func() { // the server reads as it can: past 16 MiB held it stops
		_, err := io.WriteString(s.stdin, batch.String())
		sent <- err
	}()
	answered := map[string]int{}
	for range 3 * each {
		a := s.next()
		answered[a.id]++
		if a.rpcCode != 0 || a.isError {
			t.Errorf("call %s: JSON-RPC error %d, tool error %s %s", a.id, a.rpcCode, a.code, a.message)
		}
	}
	is.NoErr(<-sent)
	peak := s.peakKiB()
	rest, exit := s.finish()
	is.Equal(len(rest), 0) // nothing more
	is.Equal(exit, 0)
	is.Equal(len(answered), 3*each) // every call answered ...
	for id, n := range answered {
		if n != 1 {
			t.Errorf("call %s answered %d times", id, n) // ... exactly once
		}
	}
	is.Equal(len(runsIn(t, filepath.Join(ws, "runs"))), each+1) // every analyze committed
	t.Logf("peak RSS of the server: %d KiB (bound %d KiB)", peak, maxRSSKiB)
	is.True(peak <= maxRSSKiB) // protocol §9: 96 MiB
}

// protocol §9, Load: resource reads count against the compute slots until
// their answers are written, so a client that pipelines hundreds of reads
// of the largest files a run can hold, and reads the answers late, cannot
// take the server past 96 MiB. The files: result.json at §8's maximum,
// and damaged ones of 4 MiB whose text JSON would escape into several
// times their size (control characters, "<", quotes). Before, each read
// gave its slot back once it had the bytes, and the answers waiting to be
// written piled up: 368 MiB for 200 reads of a 1.5 MB result.json, 1.9 GB
// for 40 reads of 4 MiB of U+0001.
func TestMCPPipelinedReadsOfTheLargestFilesStayWithin96MiB(t *testing.T) {
	testutil.SkipUnlessLong(t)
	if testing.Short() {
		t.Skip("hundreds of reads of 4 MiB files")
	}
	is := is.New(t)
	ws := maxFixture(t)
	analyze(t, ws, "runs", "base")
	damaged := map[string]byte{"ctl": 0x01, "lt": '<', "quote": '"'}
	for name, b := range damaged {
		dir := filepath.Join(ws, "runs", "dmg-"+name)
		is.NoErr(os.Mkdir(dir, 0o755))
		is.NoErr(os.WriteFile(filepath.Join(dir, "result.json"), bytes.Repeat([]byte{b}, 4<<20), 0o644))
	}
	s := startLoadServer(t, ws, nil, "--output-dir", "runs")
	s.send(initialize("2025-06-18"), initialized)
	is.Equal(s.next().id, "0")
	runs := []string{"base", "dmg-ctl", "dmg-lt", "dmg-quote"}
	const each = 50
	var batch strings.Builder
	for i := range each {
		for _, run := range runs {
			fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":"%s-%d","method":"resources/read","params":{"uri":"metricproof://runs/%s/result.json"}}`+"\n", run, i, run)
		}
	}
	_, err := io.WriteString(s.stdin, batch.String()) // about 24 KB: it fits in the pipe at once
	is.NoErr(err)
	// Read no answer until the server has read at least 40 of the files or
	// has stopped reading (a hang guard, not a measure): only then does
	// what it holds while its answers wait show in its peak.
	waitUntilRead(t, s.cmd.Process.Pid, 40*(4<<20))
	answered := map[string]int{}
	for range len(runs) * each {
		a := s.next()
		answered[a.id]++
		if a.rpcCode != 0 {
			t.Errorf("read %s: JSON-RPC error %d", a.id, a.rpcCode)
		}
	}
	peak := s.peakKiB()
	rest, exit := s.finish()
	is.Equal(len(rest), 0)
	is.Equal(exit, 0)
	is.Equal(len(answered), len(runs)*each) // every read answered ...
	for id, n := range answered {
		if n != 1 {
			t.Errorf("read %s answered %d times", id, n) // ... exactly once
		}
	}
	t.Logf("peak RSS of the server: %d KiB (bound %d KiB)", peak, maxRSSKiB)
	is.True(peak <= maxRSSKiB) // protocol §9: 96 MiB
}

// waitUntilRead returns once the process pid has read n bytes (rchar of
// /proc/PID/io) or its count has not moved for a second.
func waitUntilRead(t *testing.T, pid int, n int64) {
	t.Helper()
	last, still := int64(-1), 0
	for still < 10 {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
		if err != nil {
			t.Fatal(err)
		}
		var rchar int64
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "rchar: "); ok {
				rchar, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		if rchar >= n {
			return
		}
		if rchar == last {
			still++
		} else {
			last, still = rchar, 0
		}
		time.Sleep(100 * time.Millisecond) // /proc/PID/io tells no one when it moves: it is polled
	}
}

// tinyValues is a JSON array of about n bytes of zeros.
func tinyValues(n int) string {
	return "[" + strings.Repeat("0,", (n-2)/2) + "0]"
}

// protocol §9: one 16 MiB line of tiny JSON values, inside params.arguments or
// outside, may not take the server past 96 MiB, and the session goes on.
// Inside, the tool answers REQUEST_LIMIT; outside, more than 1 MiB (or,
// under it, more than 65,536 values) is -32600 with the id; a line of tiny
// values within both bounds is answered by the tool.
func TestMCPALineOfTinyValuesStaysWithin96MiBAndTheSessionGoesOn(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 50 MiB through a pipe")
	}
	is := is.New(t)
	s := startLoadServer(t, fixture(t), nil)
	s.send(initialize("2025-06-18"), initialized)
	s.next()
	head := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"inspect_inputs","arguments":%s%s}}`
	tests := []struct {
		name            string
		arguments, meta string
		rpcCode         int64
		code            string
	}{
		{"16 MiB inside arguments", `{"x":` + tinyValues(16<<20-200) + `}`, "", 0, "REQUEST_LIMIT"},
		{"16 MiB outside arguments", `{}`, `,"_meta":{"x":` + tinyValues(16<<20-200) + `}`, -32600, ""},
		{"1 MiB outside arguments, more than 65,536 values", `{}`, `,"_meta":{"x":` + tinyValues(1<<20-200) + `}`, -32600, ""},
		{"65,000 values outside arguments", `{}`, `,"_meta":{"x":` + tinyValues(130_000) + `}`, 0, ""},
	}
	for i, tt := range tests {
		s.send(fmt.Sprintf(head, i+1, tt.arguments, tt.meta))
		a := s.next()
		is.Equal(a.id, strconv.Itoa(i+1)) // tt.name: answered under its id
		is.Equal(a.rpcCode, tt.rpcCode)   // tt.name
		is.Equal(a.code, tt.code)         // tt.name
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 100+i))
		is.Equal(s.next().id, strconv.Itoa(100+i)) // the session goes on
		peak := s.peakKiB()
		t.Logf("%s: peak RSS %d KiB", tt.name, peak)
		if testutil.Long() { // a peak RSS is the long suite's to assert (docs/development.md)
			is.True(peak <= maxRSSKiB) // tt.name: within 96 MiB
		}
	}
	_, exit := s.finish()
	is.Equal(exit, 0)
}

// protocol §9: a valid id is a string or an integer within ±(2^53−1), and the
// answer carries exactly the id sent; 2^53, 2^63−1 and the like are -32600
// with id null. The SDK reads ids as float64: before, 9007199254740993 was
// answered as …992, and an analyze with id …993 followed by an inspect
// with id …992 had the inspect refused as in flight and the analyze's
// success (a committed run) delivered under the inspect's id.
func TestMCPIDsAreAnsweredExactlyAsSent(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	digest := digestOf(t, ws)
	s := startLoadServer(t, ws, nil, "--output-dir", "runs")
	s.send(initialize("2025-06-18"), initialized)
	s.next()
	for _, id := range []string{"9007199254740991", "-9007199254740991", `"9007199254740993"`} {
		s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		a := s.next()
		is.Equal(a.id, id) // answered under itself, to the digit
		is.Equal(a.rpcCode, int64(0))
	}
	for _, id := range []string{"9007199254740992", "-9007199254740992", "9007199254740993", "9223372036854775807", "1.0", "1e0"} {
		s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		a := s.next()
		is.Equal(a.id, "null") // id
		is.Equal(a.rpcCode, int64(-32600))
	}

	// The pair that misrouted: both refused, nothing run, nothing committed.
	s.send(toolLine("9007199254740993", "analyze", `{"expected_source_digest":"`+digest+`","run_id":"misrouted"}`),
		toolLine("9007199254740992", "inspect_inputs", `{}`))
	for range 2 {
		a := s.next()
		is.Equal(a.id, "null")
		is.Equal(a.rpcCode, int64(-32600))
	}
	_, err := os.Stat(filepath.Join(ws, "runs", "misrouted"))
	is.True(os.IsNotExist(err)) // nothing committed

	// Two calls at the top of the range, each answered under its own id
	// with its own tool.
	s.send(toolLine("9007199254740991", "analyze", `{"expected_source_digest":"`+digest+`","run_id":"top"}`),
		toolLine("9007199254740990", "inspect_inputs", `{}`))
	got := map[string]loadAnswer{}
	for range 2 {
		a := s.next()
		got[a.id] = a
	}
	is.Equal(got["9007199254740991"].tool, "analyze")
	is.Equal(got["9007199254740991"].request, "top")
	is.Equal(got["9007199254740991"].code, "")
	is.Equal(got["9007199254740990"].tool, "inspect_inputs")
	checkCompleteRun(t, ws, "runs", "top")
	_, exit := s.finish()
	is.Equal(exit, 0)
}

// protocol §9, Load: a notifications/cancelled reaches a call waiting for a
// compute slot at once; it answers CANCELLED without computing, and is
// recorded as cancelled. The server has one slot (GOMAXPROCS=1), held by
// an analyze that waits, inside its commit, for the ledger's exclusive
// lock while this test holds the ledger shared; the calls behind it wait.
func TestMCPWaitingCallsCancelledAnswerCancelledWithoutComputing(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	digest := digestOf(t, ws)
	ledger := filepath.Join(ws, "calls.jsonl")
	s := startLoadServer(t, ws, []string{"GOMAXPROCS=1"}, "--output-dir", "runs", "--ledger", "calls.jsonl")
	s.send(initialize("2025-06-18"), initialized)
	s.next()
	s.send(toolLine("0", "inspect_inputs", `{}`)) // creates the ledger
	is.Equal(s.next().code, "")
	f, err := os.Open(ledger)
	is.NoErr(err)
	defer f.Close()
	is.NoErr(unix.Flock(int(f.Fd()), unix.LOCK_SH)) // the analyze's commit waits for it

	s.send(toolLine("1", "analyze", `{"expected_source_digest":"`+digest+`","run_id":"held"}`))
	const waiting = 5
	for i := range waiting {
		tool, args := "inspect_inputs", `{}`
		if i%2 == 1 {
			tool, args = "verify_result", `{"run_id":"held"}`
		}
		s.send(toolLine(strconv.Itoa(10+i), tool, args))
	}
	for i := range waiting {
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"test"}}`, 10+i))
	}
	// Lines are read in order, and a cancellation is applied before the
	// next line is read: once the ping is answered, every waiting call is
	// cancelled. Where it waited depends on how far the analyze got: a call
	// still queued for a compute slot answers once its cancelled record is
	// appended (after the ledger is let go); a call that got a slot after
	// the analyze left it waits, for its ledger check, behind the analyze's
	// blocked flock, and a cancellation there ends at once, unrecorded
	// (protocol §11: a ledger that could not be locked records nothing).
	s.send(`{"jsonrpc":"2.0","id":99,"method":"ping"}`)
	answers := map[string]loadAnswer{}
	for {
		a := s.next()
		if a.id == "99" {
			break
		}
		answers[a.id] = a
	}
	is.NoErr(unix.Flock(int(f.Fd()), unix.LOCK_UN))
	for len(answers) < waiting+1 {
		a := s.next()
		answers[a.id] = a
	}
	is.Equal(answers["1"].code, "") // the analyze committed
	checkCompleteRun(t, ws, "runs", "held")
	atSlot := 0
	for i := range waiting {
		a := answers[strconv.Itoa(10+i)]
		is.Equal(a.code, "CANCELLED") // a waiting call, which never started
		switch {
		case strings.Contains(a.message, "while waiting for a compute slot"):
			atSlot++
		case strings.Contains(a.message, "waited for another process's lock on the ledger; nothing was run"):
		default:
			t.Fatalf("call %d: cancelled elsewhere than while waiting: %s", 10+i, a.message)
		}
	}
	_, exit := s.finish()
	is.Equal(exit, 0)
	lines := ledgerLines(t, ledger)
	recs, _ := checkChain(t, lines)
	is.Equal(len(recs), atSlot+2) // inspect 0, the analyze, and each call cancelled at a slot
	cancelled := 0
	for _, r := range recs {
		if r["status"] == "cancelled" {
			cancelled++
		}
	}
	is.Equal(cancelled, atSlot) // each recorded as cancelled
}

// protocol §9: the 2026-07-28 revision has no handshake. server/discover and a
// tools/call carrying the revision's _meta (protocol version and the
// client's capabilities) are answered as the SDK does, and the line checks
// hold for them unchanged.
func TestMCPTheStatelessRevisionKeepsTheLineChecks(t *testing.T) {
	is := is.New(t)
	s := startLoadServer(t, fixture(t), nil)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`

	s.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`)
	a := s.next()
	is.Equal(a.id, "1")
	is.Equal(a.rpcCode, int64(0))
	var discover struct {
		Result struct {
			SupportedVersions []string `json:"supportedVersions"`
			Capabilities      struct {
				Tools *struct{} `json:"tools"`
			} `json:"capabilities"`
			ResultType string `json:"resultType"`
			Meta       struct {
				ServerInfo struct{ Name string } `json:"io.modelcontextprotocol/serverInfo"`
			} `json:"_meta"`
		} `json:"result"`
	}
	is.NoErr(json.Unmarshal([]byte(a.raw), &discover))
	is.True(strings.Contains(strings.Join(discover.Result.SupportedVersions, " "), "2026-07-28"))
	is.True(discover.Result.Capabilities.Tools != nil)
	is.Equal(discover.Result.ResultType, "complete")
	is.Equal(discover.Result.Meta.ServerInfo.Name, "metricproof") // the revision names the server in every result

	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{},` + meta + `}}`)
	a = s.next()
	is.Equal(a.id, "2")
	is.Equal(a.tool, "inspect_inputs")
	is.Equal(a.code, "") // the tool's answer, without initialize

	tests := []struct {
		name, line string
		id         string
		rpcCode    int64
		code       string
	}{
		{"a duplicate key in the revision's _meta", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, "3", -32600, ""},
		{"NaN in the revision's _meta", `{"jsonrpc":"2.0","id":4,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"x":NaN}}}}`, "null", -32700, ""},
		{"an id past 2^53", `{"jsonrpc":"2.0","id":9007199254740992,"method":"server/discover","params":{` + meta + `}}`, "null", -32600, ""},
		{"a duplicate key inside arguments", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"verify_result","arguments":{"run_id":"a","run_id":"b"},` + meta + `}}`, "5", 0, "INVALID_JSON"},
		{"arguments longer than 65,536 characters", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{"x":"` + strings.Repeat("x", 70_000) + `"},` + meta + `}}`, "6", 0, "REQUEST_LIMIT"},
		{"capabilities past 65,536 values", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"experimental":{"x":` + tinyValues(140_000) + `}}}}}`, "7", -32600, ""},
	}
	for _, tt := range tests {
		s.send(tt.line)
		a := s.next()
		is.Equal(a.id, tt.id)           // tt.name
		is.Equal(a.rpcCode, tt.rpcCode) // tt.name
		is.Equal(a.code, tt.code)       // tt.name
	}
	_, exit := s.finish()
	is.Equal(exit, 0)
}
