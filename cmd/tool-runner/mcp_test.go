//go:build unix

package main

// End-to-end tests of "tool-runner mcp" (protocol §9): the real binary (this
// test binary, installed by testscript.Main, so one engine serves both
// transports) driven by the SDK's own client over real pipes, and over raw
// pipes for what a real client cannot send.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/internal/testutil"
)

// mcpSession starts "tool-runner mcp --workspace ws args..." and connects
// the SDK's client to it over its standard input and output. At cleanup it
// closes the session and checks that the server said nothing on stderr but
// its start warning (startWarning).
func mcpSession(t *testing.T, ws string, args ...string) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command(runnerPath(t), append([]string{"mcp", "--workspace", ws}, args...)...)
	cmd.Dir = ws
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "metricproof-e2e", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		if stderr.String() != startWarning() {
			t.Errorf("the server wrote to stderr: %q", stderr.String())
		}
	})
	return cs
}

// mcpResponse is a tool result's response object.
type mcpResponse struct {
	raw     string
	body    map[string]any
	isError bool
	// links are the resource links after the text block.
	links []*sdk.ResourceLink
}

func (r mcpResponse) code() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (r mcpResponse) result() map[string]any {
	m, _ := r.body["result"].(map[string]any)
	return m
}

// mcpCall calls a tool and checks what every result must be (one text
// block holding the structured content, isError exactly when ok is false,
// the tool's name and a request_id always there, no absolute path) and,
// when schemas holds the tool's served outputSchema, that the structured
// content validates against it.
func mcpCall(t *testing.T, cs *sdk.ClientSession, schemas map[string]*jsonschema.Schema, tool string, args any) mcpResponse {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("%s: no content", tool)
	}
	text, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("%s: content %T", tool, res.Content[0])
	}
	r := mcpResponse{raw: text.Text, isError: res.IsError}
	for _, c := range res.Content[1:] { // after the text, only resource links
		link, ok := c.(*sdk.ResourceLink)
		if !ok {
			t.Fatalf("%s: content after the text is %T", tool, c)
		}
		r.links = append(r.links, link)
	}
	if err := json.Unmarshal([]byte(text.Text), &r.body); err != nil {
		t.Fatalf("%s: text is not JSON: %v", tool, err)
	}
	structured, _ := json.Marshal(res.StructuredContent)
	var fromStructured map[string]any
	if err := json.Unmarshal(structured, &fromStructured); err != nil {
		t.Fatal(err)
	}
	is := is.New(t)
	is.Equal(fromStructured, r.body)            // the same object twice
	is.Equal(res.IsError, r.body["ok"] != true) // isError exactly when not ok
	is.Equal(r.body["tool"], tool)              // the tool, always
	is.True(r.body["request_id"] != nil)        // the call ID, always
	// No absolute path; truncated's keys are JSON Pointers into the answer.
	withoutPointers := r.raw
	if i := strings.LastIndex(r.raw, `,"truncated":{`); i >= 0 {
		withoutPointers = r.raw[:i]
		for p := range r.body["truncated"].(map[string]any) {
			is.True(strings.HasPrefix(p, "/result/")) // a pointer into the result
		}
	}
	is.Equal(absolutePath.FindString(withoutPointers), "")
	if sch := schemas[tool]; sch != nil {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(text.Text))
		is.NoErr(err)
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s: the answer does not validate against its outputSchema: %v\n%s", tool, err, text.Text)
		}
	}
	return r
}

// servedSchemas lists the tools and compiles each served outputSchema with
// a validator that is not the SDK's.
func servedSchemas(t *testing.T, cs *sdk.ClientSession) ([]*sdk.Tool, map[string]*jsonschema.Schema) {
	t.Helper()
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Schema{}
	for _, tool := range list.Tools {
		for kind, s := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			data, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			c := jsonschema.NewCompiler()
			c.DefaultDraft(jsonschema.Draft7) // what hosts' validators assume
			loc := "mem://" + tool.Name + "/" + kind
			if err := c.AddResource(loc, doc); err != nil {
				t.Fatal(err)
			}
			sch, err := c.Compile(loc)
			if err != nil {
				t.Fatalf("%s %sSchema does not compile: %v", tool.Name, kind, err)
			}
			if kind == "output" {
				schemas[tool.Name] = sch
			}
		}
	}
	return list.Tools, schemas
}

// protocol §9's must-show: a real MCP client, started fresh, against the
// binary on a fresh copy of the fixture. It lists exactly the three tools
// with closed schemas and the annotations of §9; inspects; analyzes with the
// digest, with and without run_id; verifies both runs; and gets isError
// with the right code for an extra argument, a wrong digest and an unknown
// run. Every answer validates against its tool's served outputSchema.
func TestARealMCPClientUsesTheThreeTools(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	cs := mcpSession(t, ws, "--output-dir", "runs")
	tools, schemas := servedSchemas(t, cs)

	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
		in, out := tool.InputSchema.(map[string]any), tool.OutputSchema.(map[string]any)
		is.Equal(in["type"], "object")
		is.Equal(in["additionalProperties"], false) // closed
		is.Equal(out["type"], "object")
		is.Equal(out["additionalProperties"], false)
		for _, s := range []map[string]any{in, out} {
			data, _ := json.Marshal(s)
			for _, key := range []string{`"$ref"`, `"$defs"`, `"$id"`, `"$schema"`} {
				is.True(!bytes.Contains(data, []byte(key))) // self-contained, no $id
			}
		}
		is.True(tool.Title != "" && len(tool.Description) > 80)
		readOnly := tool.Name != "analyze"
		a := tool.Annotations
		is.Equal(a.ReadOnlyHint, readOnly)
		is.Equal(a.IdempotentHint, readOnly)
		is.True(a.DestructiveHint != nil && !*a.DestructiveHint)
		is.True(a.OpenWorldHint != nil && !*a.OpenWorldHint)
	}
	is.Equal(names, []string{"analyze", "inspect_inputs", "verify_result"}) // exactly three, sorted

	inspected := mcpCall(t, cs, schemas, "inspect_inputs", map[string]any{})
	is.Equal(inspected.code(), "")
	digest := inspected.result()["source_digest"].(string)

	withID := mcpCall(t, cs, schemas, "analyze", map[string]any{"expected_source_digest": digest, "run_id": "mcp-001"})
	is.Equal(withID.code(), "")
	is.Equal(withID.body["request_id"], "mcp-001")
	withoutID := mcpCall(t, cs, schemas, "analyze", map[string]any{"expected_source_digest": digest})
	is.Equal(withoutID.code(), "")
	assigned := withoutID.body["request_id"].(string)
	for _, run := range []string{"mcp-001", assigned} {
		v := mcpCall(t, cs, schemas, "verify_result", map[string]any{"run_id": run})
		is.Equal(v.code(), "")
		is.Equal(v.result()["integrity"], "verified")
		checkCompleteRun(t, ws, "runs", run)
	}

	for _, tt := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{"inspect_inputs", map[string]any{"path": "/etc/passwd"}, "INVALID_ARGUMENTS"},
		{"analyze", map[string]any{"expected_source_digest": digest, "force": true}, "INVALID_ARGUMENTS"},
		{"analyze", map[string]any{"expected_source_digest": strings.Repeat("0", 64)}, "STALE_CONTEXT"},
		{"verify_result", map[string]any{"run_id": "no-such-run"}, "MISSING_RESULT"},
	} {
		r := mcpCall(t, cs, schemas, tt.tool, tt.args)
		is.True(r.isError)
		is.Equal(r.code(), tt.code)
	}
}

// One engine, two transports: a run made over MCP verifies with the
// one-shot runner of the same binary, and a one-shot run verifies over MCP.
func TestRunsCrossTheTwoTransports(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	cs := mcpSession(t, ws, "--output-dir", "runs")
	digest := digestOf(t, ws)
	is.Equal(mcpCall(t, cs, nil, "analyze", map[string]any{"expected_source_digest": digest, "run_id": "over-mcp"}).code(), "")
	v := call(t, ws, verifyRequest("v1", "over-mcp"), "--workspace", ws, "--output-dir", "runs")
	is.Equal(v.result()["integrity"], "verified")

	analyze(t, ws, "runs", "one-shot")
	r := mcpCall(t, cs, nil, "verify_result", map[string]any{"run_id": "one-shot"})
	is.Equal(r.result()["integrity"], "verified")
}

// Eight analyzes in flight at once inside one server commit eight runs
// that verify: the server serializes its own commits, so OUTPUT_BUSY is
// only ever about another process.
func TestEightConcurrentMCPAnalyzesAllCommit(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	digest := digestOf(t, ws)
	cs := mcpSession(t, ws, "--output-dir", "runs")
	var wg sync.WaitGroup
	answers := make([]mcpResponse, 8)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := map[string]any{"expected_source_digest": digest}
			if i%2 == 0 {
				args["run_id"] = fmt.Sprintf("c%d", i)
			}
			answers[i] = mcpCall(t, cs, nil, "analyze", args)
		}()
	}
	wg.Wait()
	for _, a := range answers {
		is.Equal(a.code(), "") // no OUTPUT_BUSY, no failure
		checkCompleteRun(t, ws, "runs", a.body["request_id"].(string))
	}
	is.Equal(len(runsIn(t, filepath.Join(ws, "runs"))), 8)
	is.Equal(pendingIn(t, filepath.Join(ws, "runs")), []string(nil))
}

// rawServer is "tool-runner mcp" over raw pipes.
type rawServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr bytes.Buffer
}

func startRawServer(t *testing.T, ws string, args ...string) *rawServer {
	t.Helper()
	s := &rawServer{t: t, lines: make(chan string, 1024)}
	var out io.Reader
	s.cmd, s.stdin, out = startMCP(t, ws, nil, &s.stderr, args...)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 32<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	return s
}

func (s *rawServer) send(lines ...string) {
	s.t.Helper()
	sendLines(s.t, s.stdin, lines...)
}

// next returns the next line the server wrote, decoded.
func (s *rawServer) next() map[string]any {
	s.t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			s.t.Fatal("the server's output ended")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			s.t.Fatalf("not a JSON-RPC line: %q", l)
		}
		return m
	case <-time.After(time.Minute): // a hang guard only
		s.t.Fatal("no answer within a minute")
	}
	return nil
}

// exchange sends one line and returns the one answer it gets.
func (s *rawServer) exchange(line string) map[string]any {
	s.t.Helper()
	s.send(line)
	return s.next()
}

// finish closes the input and waits: every remaining line, and the exit.
func (s *rawServer) finish() ([]map[string]any, int) {
	s.t.Helper()
	s.stdin.Close()
	var rest []map[string]any
	for l := range s.lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			s.t.Fatalf("not a JSON-RPC line: %q", l)
		}
		rest = append(rest, m)
	}
	return rest, waitMCP(s.t, s.cmd, &s.stderr)
}

func initialize(version string) string {
	return `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
}

const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

func errorCode(m map[string]any) any {
	e, _ := m["error"].(map[string]any)
	return e["code"]
}

// toolText decodes the response object of a tools/call answer.
func toolText(t *testing.T, m map[string]any) (map[string]any, bool) {
	t.Helper()
	res, _ := m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("not a tool result: %v", m)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(content[0].(map[string]any)["text"].(string)), &body); err != nil {
		t.Fatal(err)
	}
	isError, _ := res["isError"].(bool)
	return body, isError
}

// initialize accepts every protocol version of protocol §9 and answers an
// unknown one with 2025-11-25; serverInfo is metricproof with the module
// version, and the capabilities are tools and resources.
func TestMCPInitializeSpeaksEveryVersionHostsUse(t *testing.T) {
	ws := fixture(t)
	for _, tt := range []struct{ asked, answered string }{
		{"2024-11-05", "2024-11-05"},
		{"2025-03-26", "2025-03-26"},
		{"2025-06-18", "2025-06-18"},
		{"2025-11-25", "2025-11-25"},
		{"1999-01-01", "2025-11-25"},
	} {
		t.Run(tt.asked, func(t *testing.T) {
			is := is.New(t)
			s := startRawServer(t, ws)
			m := s.exchange(initialize(tt.asked))
			res := m["result"].(map[string]any)
			is.Equal(res["protocolVersion"], tt.answered)
			is.Equal(res["capabilities"], map[string]any{"tools": map[string]any{}, "resources": map[string]any{}})
			info := res["serverInfo"].(map[string]any)
			is.Equal(info["name"], "metricproof")
			is.True(info["version"] != "")
			s.send(initialized)
			list := s.exchange(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			is.Equal(len(list["result"].(map[string]any)["tools"].([]any)), 3)
			_, exit := s.finish()
			is.Equal(exit, 0)
		})
	}
}

// Over raw pipes, what no SDK client sends: each refusal of protocol §9 gets
// its answer, and the session goes on (a ping after each is answered).
func TestMCPRefusesBrokenLinesAndGoesOn(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	s := startRawServer(t, ws, "--output-dir", "runs")
	s.exchange(initialize("2025-06-18"))
	s.send(initialized)
	tests := []struct {
		name, line string
		id         any // the answer's id
		rpcCode    any // a JSON-RPC error code, or nil for a tool result
		toolCode   string
	}{
		{"a duplicate key inside arguments", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"verify_result","arguments":{"run_id":"a","run_id":"b"}}}`, float64(10), nil, "INVALID_JSON"},
		{"NaN inside arguments", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{"x":NaN}}}`, nil, float64(-32700), ""},
		{"a NaN line", `NaN`, nil, float64(-32700), ""},
		{"a garbage line", `this is not json`, nil, float64(-32700), ""},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"ping\",\"x\":\"\xff\"}", nil, float64(-32700), ""},
		{"a batch", `[{"jsonrpc":"2.0","id":13,"method":"ping"}]`, nil, float64(-32600), ""},
		{"a JSON array", `[]`, nil, float64(-32600), ""},
		{"a duplicate key outside arguments", `{"jsonrpc":"2.0","id":14,"method":"ping","method":"ping"}`, float64(14), float64(-32600), ""},
		{"a duplicate key in params", `{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"inspect_inputs","name":"analyze","arguments":{}}}`, float64(15), float64(-32600), ""},
		{"an id given twice", `{"jsonrpc":"2.0","id":16,"id":17,"method":"ping"}`, nil, float64(-32600), ""},
		{"a duplicate key, with a string id", `{"jsonrpc":"2.0","id":"s16","method":"ping","method":"ping"}`, "s16", float64(-32600), ""},
		{"not JSON-RPC 2.0", `{"jsonrpc":"1.0","id":18,"method":"ping"}`, float64(18), float64(-32600), ""},
		{"an unknown tool", `{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"rm_rf","arguments":{}}}`, float64(19), float64(-32602), ""},
		{"arguments not an object", `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"inspect_inputs","arguments":[1]}}`, float64(20), nil, "INVALID_ARGUMENTS"},
		{"a fractional id", `{"jsonrpc":"2.0","id":5.5,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{}}}`, nil, float64(-32600), ""},
		{"an id in exponent form", `{"jsonrpc":"2.0","id":1e1,"method":"ping"}`, nil, float64(-32600), ""},
		{"an id past int64", `{"jsonrpc":"2.0","id":99999999999999999999,"method":"ping"}`, nil, float64(-32600), ""},
		{"a null id", `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, nil, float64(-32600), ""},
		{"a boolean id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, nil, float64(-32600), ""},
		{"a line ending in CRLF", "{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"tools/call\",\"params\":{\"name\":\"inspect_inputs\"}}\r", float64(21), nil, ""},
	}
	// What the SDK would answer with the same code is told apart by the
	// message: these are the server's own refusals.
	says := map[string]string{
		"a batch":      "batches are not accepted",
		"a JSON array": "batches are not accepted",
		"a null id":    "id must be a string or an integer",
	}
	for i, tt := range tests {
		m := s.exchange(tt.line)
		is.Equal(m["id"], tt.id) // tt.name
		if tt.rpcCode != nil {
			is.Equal(errorCode(m), tt.rpcCode) // tt.name
			if want, ok := says[tt.name]; ok {
				msg, _ := m["error"].(map[string]any)["message"].(string)
				is.True(strings.Contains(msg, want)) // tt.name
			}
		} else {
			body, isError := toolText(t, m)
			code := ""
			if e, ok := body["error"].(map[string]any); ok {
				code = e["code"].(string)
			}
			is.Equal(code, tt.toolCode) // tt.name
			is.Equal(isError, tt.toolCode != "")
		}
		s.send("") // blank lines are skipped
		pong := s.exchange(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 1000+i))
		is.Equal(pong["id"], float64(1000+i)) // the session goes on
	}
	rest, exit := s.finish()
	is.Equal(len(rest), 0)
	is.Equal(exit, 0)
}

// Every call sent just before end of input is answered before the server
// exits 0: end of input is held back until the calls in flight are done.
func TestMCPAnswersEveryCallSentBeforeEndOfInput(t *testing.T) {
	is := is.New(t)
	ws := maxFixture(t)
	digest := digestOf(t, ws)
	s := startRawServer(t, ws, "--output-dir", "runs")
	s.exchange(initialize("2025-06-18"))
	s.send(initialized)
	const n = 6
	for i := range n {
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"analyze","arguments":{"expected_source_digest":"%s","run_id":"eof-%d"}}}`, i, digest, i))
	}
	rest, exit := s.finish() // closes stdin at once
	is.Equal(exit, 0)
	is.Equal(len(rest), n) // every call answered
	var ids []float64
	for _, m := range rest {
		body, isError := toolText(t, m)
		is.True(!isError)
		ids = append(ids, m["id"].(float64))
		checkCompleteRun(t, ws, "runs", body["request_id"].(string))
	}
	slices.Sort(ids)
	is.Equal(ids, []float64{0, 1, 2, 3, 4, 5})
}

// SIGINT and SIGTERM stop the server as protocol §9 says: no new calls, the
// call in flight stops at its next cancel check (or finishes), its answer
// is written, and the server exits 0 with nothing on stderr. Nothing partial
// is left, and a committed run verifies.
func TestMCPStopsOnASignalAfterAnsweringTheCallInFlight(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			is := is.New(t)
			ws := maxFixture(t)
			digest := digestOf(t, ws)
			outcomes := map[string]int{}
			defer func() {
				t.Logf("%v", outcomes)
				is.True(outcomes["CANCELLED"] > 0) // the signal really reached a call in flight
			}()
			// The delays spread the signal over an analyze; on a loaded
			// machine all of them may land after its last check. The last
			// attempt holds the ledger's lock meanwhile (a shared flock,
			// as another process may), so its analyze cannot commit
			// before the signal: it is in flight for certain, and cancelled.
			for i, delay := range []time.Duration{0, 5 * time.Millisecond, 20 * time.Millisecond, 500 * time.Millisecond, -1} {
				args := []string{"--output-dir", "runs"}
				var held *os.File
				if delay < 0 {
					ledger := filepath.Join(ws, fmt.Sprintf("held-%d.jsonl", i))
					f, err := os.OpenFile(ledger, os.O_CREATE|os.O_RDWR, 0o600)
					is.NoErr(err)
					defer f.Close()
					is.NoErr(unix.Flock(int(f.Fd()), unix.LOCK_SH))
					held, args, delay = f, append(args, "--ledger", filepath.Base(ledger)), 0
				}
				s := startRawServer(t, ws, args...)
				s.exchange(initialize("2025-06-18"))
				s.send(initialized)
				id := fmt.Sprintf("sig-%d", i)
				s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","arguments":{"expected_source_digest":"%s","run_id":"%s"}}}`, digest, id))
				// Lines are read in order: once the ping is answered, the
				// call has been taken and is in flight (or done).
				s.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
				answers := map[float64]map[string]any{}
				for answers[2] == nil {
					m := s.next()
					answers[m["id"].(float64)] = m
				}
				time.Sleep(delay) // the moment of the signal is what the attempts vary
				is.NoErr(s.cmd.Process.Signal(sig))
				unlocked := make(chan struct{})
				if held != nil {
					// A call cancelled before its commit waits here for
					// the lock to append its record (a cancellation while
					// it waits for the lock itself answers at once).
					fd := int(held.Fd())
					go func() {
						defer close(unlocked)
						// Not needed for the answer: room for the cancelled
						// call to reach its record's wait, the path this
						// attempt means to take (the abandoned kernel wait
						// of its commit still shows in /proc/locks, so the
						// record's cannot be told from it there).
						time.Sleep(200 * time.Millisecond)
						_ = unix.Flock(fd, unix.LOCK_UN)
					}()
				} else {
					close(unlocked)
				}
				m := answers[1]
				if m == nil {
					m = s.next()
				}
				body, _ := toolText(t, m)
				code := ""
				if e, ok := body["error"].(map[string]any); ok {
					code = e["code"].(string)
				}
				is.True(code == "" || code == "CANCELLED") // success or cancelled, never torn
				if held != nil {
					is.Equal(code, "CANCELLED") // it could not commit before the signal
				}
				outcomes[codeOr(code, "success")]++
				<-unlocked // before the file is closed
				rest, exit := s.finish()
				is.Equal(len(rest), 0)
				is.Equal(exit, 0)
				is.Equal(pendingIn(t, filepath.Join(ws, "runs")), []string(nil))
				if code == "" {
					checkCompleteRun(t, ws, "runs", id)
				}
			}
		})
	}
}

// An option fault of "tool-runner mcp" is one line on stderr naming its
// code, nothing on stdout, exit 2, and nothing written; the boundaries of
// the output directory, cancel file and ledger are checked at start.
func TestMCPOptionFaultsStopTheServerAtStart(t *testing.T) {
	ws := fixture(t)
	writeFile(t, filepath.Join(ws, "report.txt"), []byte("a file\n"))
	tests := []struct {
		args []string
		code string
	}{
		{[]string{"--nope"}, "INVALID_OPTIONS"},
		{[]string{"--workspace", ws, "extra"}, "INVALID_OPTIONS"},
		{[]string{"--workspace", ws, "--output-dir"}, "INVALID_OPTIONS"},
		{[]string{}, "MISSING_WORKSPACE"},
		{[]string{"--workspace", filepath.Join(ws, "missing")}, "MISSING_WORKSPACE"},
		{[]string{"--workspace", ws, "--output-dir", "data"}, "PATH_BOUNDARY"},
		{[]string{"--workspace", ws, "--output-dir", "../outside"}, "PATH_BOUNDARY"},
		{[]string{"--workspace", ws, "--output-dir", "report.txt"}, "INVALID_OUTPUT"},
		{[]string{"--workspace", ws, "--cancel-file", "../stop"}, "PATH_BOUNDARY"},
		{[]string{"--workspace", ws, "--ledger", "data/calls.jsonl"}, "PATH_BOUNDARY"},
		{[]string{"--workspace", ws, "--ledger", "missing/calls.jsonl"}, "INVALID_OUTPUT"},
		{[]string{"--workspace", ws, "--signing-key", filepath.Join(ws, "no-key.pem")}, "INVALID_OPTIONS"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			is := is.New(t)
			before := snapshotTree(t, ws)
			cmd := exec.Command(runnerPath(t), append([]string{"mcp"}, tt.args...)...)
			cmd.Dir = ws
			cmd.Stdin = strings.NewReader(initialize("2025-06-18") + "\n")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			is.True(ok)
			is.Equal(ee.ExitCode(), 2)
			is.Equal(stdout.String(), "") // not a JSON-RPC byte
			is.Equal(strings.Count(stderr.String(), "\n"), 1)
			is.True(strings.HasPrefix(stderr.String(), tt.code+": "))
			is.True(!strings.Contains(stderr.String(), ws)) // no absolute path
			sameTree(t, before, snapshotTree(t, ws))
		})
	}
	t.Run("mcp only as the first argument", func(t *testing.T) {
		o := call(t, ws, inspectRequest("i1"), "--workspace", ws, "mcp")
		is.New(t).Equal(o.code(), "INVALID_OPTIONS")
	})
	t.Run("help", func(t *testing.T) {
		is := is.New(t)
		out, err := exec.Command(runnerPath(t), "mcp", "--help").Output()
		is.NoErr(err)
		is.True(strings.HasPrefix(string(out), "usage: tool-runner mcp"))
	})
}

// Eight concurrent calls inside one MCP server, of every tool, with a
// ledger: one record each, transport "mcp", in an unbroken chain that the
// test checks with its own hash of each line. Each record holds the SHA256
// of the exact params.arguments bytes sent and of the text content
// answered. Goroutines share one server, so this proves that the ledger's
// lock excludes them too, not only other processes.
func TestEightConcurrentMCPCallsMakeAnUnbrokenChain(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	digest := digestOf(t, ws)
	s := startRawServer(t, ws, "--output-dir", "runs", "--ledger", "calls.jsonl")
	s.exchange(initialize("2025-06-18"))
	s.send(initialized)
	args := map[int]string{}
	for i := range 8 {
		switch i % 4 {
		case 0:
			args[i] = `{"expected_source_digest":"` + digest + `","run_id":"chain-` + fmt.Sprint(i) + `"}`
		case 1:
			args[i] = `{}`
		case 2:
			args[i] = `{"run_id":"nope"}`
		case 3:
			args[i] = `{"expected_source_digest":"` + digest + `",  "extra":1}`
		}
	}
	tools := []string{"analyze", "inspect_inputs", "verify_result", "analyze"}
	for i := range 8 { // sent at once: the server runs them concurrently
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, i, tools[i%4], args[i]))
	}
	answers, exit := s.finish()
	is.Equal(exit, 0)
	is.Equal(len(answers), 8)
	byRequest := map[string]map[string]any{}
	for _, m := range answers {
		res, ok := m["result"].(map[string]any)
		if !ok {
			t.Fatalf("not a tool result: %v", m)
		}
		text := res["content"].([]any)[0].(map[string]any)["text"].(string)
		body, _ := toolText(t, m)
		body["_text"], body["_id"] = text, m["id"]
		byRequest[body["request_id"].(string)] = body
	}
	lines := ledgerLines(t, filepath.Join(ws, "calls.jsonl"))
	recs, _ := checkChain(t, lines)
	is.Equal(len(recs), 8) // one record per call
	for _, r := range recs {
		is.Equal(r["transport"], "mcp")
		body := byRequest[r["request_id"].(string)]
		is.True(body != nil) // the record names a call that was answered
		is.Equal(r["tool"], body["tool"])
		is.Equal(r["response_sha256"], testutil.SHA256Hex([]byte(body["_text"].(string))))
		i := int(body["_id"].(float64))
		is.Equal(r["input_sha256"], testutil.SHA256Hex([]byte(args[i]))) // the raw bytes as sent
		ok := body["ok"] == true
		is.Equal(r["status"] == "success", ok)
		if r["run_id"] != nil {
			is.Equal(r["run_id"], body["request_id"])
			checkCompleteRun(t, ws, "runs", r["run_id"].(string))
		}
	}
	records, _ := verifiedLedger(t, ws, "calls.jsonl")
	is.Equal(records, int64(8))
}

// The key options serve the MCP server as they serve the one-shot runner:
// a server with --signing-key commits signed runs (artifacts name the
// attestation), one with --trusted-key verifies them with signature_valid
// and refuses a run signed by another key; key faults stop it at start.
func TestMCPSignsAndVerifiesWithTheOperatorsKeys(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	keys := t.TempDir()
	key, other := newTestKey(t, keys, "key"), newTestKey(t, keys, "other")
	digest := digestOf(t, ws)

	signer := mcpSession(t, ws, "--output-dir", "runs", "--signing-key", key.privPath)
	a := mcpCall(t, signer, nil, "analyze", map[string]any{"expected_source_digest": digest, "run_id": "signed-1"})
	is.Equal(a.code(), "")
	is.Equal(a.body["artifacts"].(map[string]any)["attestation"], "runs/signed-1/attestation.json")

	trusting := mcpSession(t, ws, "--output-dir", "runs", "--trusted-key", key.pubPath)
	v := mcpCall(t, trusting, nil, "verify_result", map[string]any{"run_id": "signed-1"})
	is.Equal(v.code(), "")
	is.Equal(v.result()["checks"], signedChecks())

	doubting := mcpSession(t, ws, "--output-dir", "runs", "--trusted-key", other.pubPath)
	is.Equal(mcpCall(t, doubting, nil, "verify_result", map[string]any{"run_id": "signed-1"}).code(), "SIGNATURE_INVALID")

	// A private key readable by others is refused at start: one stderr
	// line, exit 2, and the key's path is not in it.
	is.NoErr(os.Chmod(key.privPath, 0o644))
	cmd := exec.Command(runnerPath(t), "mcp", "--workspace", ws, "--output-dir", "runs", "--signing-key", key.privPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	is.True(ok && ee.ExitCode() == 2)
	is.True(strings.HasPrefix(stderr.String(), "INVALID_OPTIONS: "))
	is.True(!strings.Contains(stderr.String(), keys))
}

// A call whose id is already in flight is refused -32600 with that id, and
// the server still ends at end of input: the SDK answers such a call with
// no response, so it must never reach the SDK, or the server would wait on
// it forever.
func TestMCPRefusesAnIDAlreadyInFlightAndStillEnds(t *testing.T) {
	is := is.New(t)
	ws := maxFixture(t)
	digest := digestOf(t, ws)
	s := startRawServer(t, ws, "--output-dir", "runs")
	s.exchange(initialize("2025-06-18"))
	s.send(initialized)
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","arguments":{"expected_source_digest":"%s","run_id":"dup"}}}`, digest)
	s.send(call, call)
	answers, exit := s.finish()
	is.Equal(exit, 0) // it ends
	var refused, answered int
	for _, m := range answers {
		is.Equal(m["id"], float64(1))
		if errorCode(m) == float64(-32600) {
			refused++
		} else {
			answered++
		}
	}
	is.Equal(refused, 1)  // the second, while the first was in flight
	is.Equal(answered, 1) // the first
	checkCompleteRun(t, ws, "runs", "dup")
}

// An id is free again as soon as its answer is on the wire: a client that
// reuses it the moment it reads the answer is answered, never refused as
// in flight.
func TestMCPAnIDIsFreeAgainOnceAnswered(t *testing.T) {
	is := is.New(t)
	s := startRawServer(t, fixture(t))
	s.exchange(initialize("2025-06-18"))
	s.send(initialized)
	for range 3000 { // the window was a few instructions wide: many tries
		m := s.exchange(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		is.Equal(m["error"], nil) // answered, not refused
		is.Equal(m["id"], float64(1))
	}
	_, exit := s.finish()
	is.Equal(exit, 0)
}

// The 16 MiB bound holds to the byte: a line of exactly 16 MiB (with LF or
// CRLF) is read; one byte more, or a megabyte more (never held whole), is
// answered -32600, and the session goes on.
func TestMCPLineLimitIsExact(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 65 MiB through a pipe")
	}
	is := is.New(t)
	s := startRawServer(t, fixture(t))
	s.exchange(initialize("2025-06-18"))
	pad := func(id, total int) string {
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"pad":"`, id)
		tail := `"}}`
		return head + strings.Repeat("x", total-len(head)-len(tail)) + tail
	}
	s.send(pad(1, 16<<20))
	is.Equal(s.next()["id"], float64(1)) // exactly 16 MiB: answered
	s.send(pad(2, 16<<20) + "\r")
	is.Equal(s.next()["id"], float64(2)) // and with CRLF
	s.send(pad(3, 16<<20+1))
	is.Equal(errorCode(s.next()), float64(-32600)) // one byte more
	s.send(pad(4, 17<<20))
	is.Equal(errorCode(s.next()), float64(-32600)) // far more
	is.Equal(s.exchange(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)["id"], float64(5))
	_, exit := s.finish()
	is.Equal(exit, 0)
}

// Each call checks the ledger's place again (protocol §9): a ledger directory
// swapped, while the server runs, for a symlink into a committed run, or
// to another directory, is refused, unrecorded; the run gains no entry and
// still verifies, and the old ledger gains no line.
func TestMCPChecksTheLedgersPlaceOnEveryCall(t *testing.T) {
	for _, target := range []string{"runs/run1", "elsewhere"} {
		t.Run(target, func(t *testing.T) {
			is := is.New(t)
			ws := fixture(t)
			digest := digestOf(t, ws)
			mustMkdir(t, filepath.Join(ws, "logs"))
			mustMkdir(t, filepath.Join(ws, "elsewhere"))
			s := startRawServer(t, ws, "--output-dir", "runs", "--ledger", "logs/calls.jsonl")
			s.exchange(initialize("2025-06-18"))
			s.send(initialized)
			first, _ := toolText(t, s.exchange(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","arguments":{"expected_source_digest":"%s","run_id":"run1"}}}`, digest)))
			is.Equal(first["ok"], true)

			is.NoErr(os.Rename(filepath.Join(ws, "logs"), filepath.Join(ws, "old-logs")))
			mustSymlink(t, target, filepath.Join(ws, "logs"))
			body, isError := toolText(t, s.exchange(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{}}}`))
			is.True(isError)
			is.Equal(body["error"].(map[string]any)["code"], "PATH_BOUNDARY")
			_, exit := s.finish()
			is.Equal(exit, 0)
			is.Equal(entriesIn(t, filepath.Join(ws, "runs", "run1")), []string{"checksums.json", "receipt.json", "result.json"}) // no entry gained
			checkCompleteRun(t, ws, "runs", "run1")
			is.Equal(len(ledgerLines(t, filepath.Join(ws, "old-logs", "calls.jsonl"))), 1) // the refusal is not recorded
			_, err := os.Stat(filepath.Join(ws, "elsewhere", "calls.jsonl"))
			is.True(os.IsNotExist(err)) // nor written elsewhere
		})
	}
}

// A call cancelled before the server got to it still answers as a tool
// (protocol §9: CANCELLED or nothing, never a JSON-RPC error) and is recorded
// (protocol §11). The SDK answers such a call itself, with a JSON-RPC error
// and no handler; the server must not let that answer through. Calls and
// cancellations go in one write, so many are cancelled while queued.
func TestMCPACallCancelledBeforeItRanIsStillAToolAnswerAndRecorded(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	s := startRawServer(t, ws, "--output-dir", "runs", "--ledger", "calls.jsonl")
	s.exchange(initialize("2025-06-18"))
	s.send(initialized)
	const n = 20
	var batch strings.Builder
	for i := range n {
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"verify_result","arguments":{"run_id":"x"}}}`+"\n", i+1)
	}
	for i := range n {
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`+"\n", i+1)
	}
	_, err := io.WriteString(s.stdin, batch.String())
	is.NoErr(err)
	answers, exit := s.finish()
	is.Equal(exit, 0)
	is.Equal(len(answers), n) // every call answered once
	cancelled := 0
	for _, m := range answers {
		if m["error"] != nil {
			t.Fatalf("a JSON-RPC error for a tool call: %v", m)
		}
		body, _ := toolText(t, m)
		switch code := body["error"].(map[string]any)["code"]; code {
		case "CANCELLED":
			cancelled++
		case "MISSING_RESULT": // it ran before its cancellation came
		default:
			t.Fatalf("unexpected code %v", code)
		}
	}
	t.Logf("%d of %d cancelled", cancelled, n)
	lines := ledgerLines(t, filepath.Join(ws, "calls.jsonl"))
	is.Equal(len(lines), n) // every call recorded
}
