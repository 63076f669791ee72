package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/adapters/cli"
	"github.com/metricproof/metricproof/adapters/keyfile"
	"github.com/metricproof/metricproof/adapters/mcp"
	"github.com/metricproof/metricproof/adapters/memfs"
	"github.com/metricproof/metricproof/adapters/porttest"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/call"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/ports"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden; review the diff before committing")

// wsRoot is where the in-memory workspace lives.
const wsRoot = "/operator/ws"

// world is an in-memory workspace and the service over it.
type world struct {
	t      testing.TB
	fs     afero.Fs
	ws     *memfs.Workspace
	cancel ports.Canceller // nil: the options' marker
}

func newWorld(t testing.TB) *world {
	t.Helper()
	fs := afero.NewMemMapFs()
	for name, data := range testutil.Fixture(t) {
		if err := fs.MkdirAll(path.Dir(path.Join(wsRoot, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := afero.WriteFile(fs, path.Join(wsRoot, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := memfs.New(fs, wsRoot)
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, fs: fs, ws: ws}
}

func (w *world) wire(o app.Options) (app.Ports, io.Closer, error) {
	cancel := w.cancel
	if cancel == nil {
		cancel = w.ws.Marker(o.CancelFile)
	}
	return app.Ports{Sources: w.ws, Paths: w.ws, Evidence: w.ws, Ledger: w.ws, Cancel: cancel, Keys: keyfile.Reader{},
		Clock:  porttest.FixedClock(time.Date(2026, 12, 1, 7, 30, 0, 0, time.UTC)),
		Engine: porttest.FixedEngine{SHA256: strings.Repeat("e", 64), GoVersion: "go1.26.8"}}, nil, nil
}

// service is the call layer over a service opened with the options of
// "tool-runner mcp" args, and the list limit they give.
type service struct {
	calls     *call.Calls
	listLimit int
}

// service opens the app with the options of "tool-runner mcp" args.
func (w *world) service(args ...string) service {
	w.t.Helper()
	return w.serviceOver(w.wire, args...)
}

// serviceOver is service over another composition of the ports.
func (w *world) serviceOver(wire app.Wire, args ...string) service {
	w.t.Helper()
	o, _, e := cli.Parse(cli.MCP, append([]string{"--workspace", wsRoot}, args...))
	if e != nil {
		w.t.Fatal(e)
	}
	s, err := app.Open(o.Options, wire)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { s.Close() })
	return service{calls: call.New(s), listLimit: o.ListLimit}
}

// session connects an SDK client to the server of svc over the SDK's
// in-memory transports.
func session(t *testing.T, svc service, stop context.Context) *sdk.ClientSession {
	t.Helper()
	server, err := mcp.New(mcp.Config{Calls: svc.calls, Transport: call.Transport{Name: "mcp", ListLimit: svc.listLimit}, Version: "test", Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// response is the §3 object of a tool result.
type response struct {
	RequestID string          `json:"request_id"`
	OK        bool            `json:"ok"`
	Status    string          `json:"status"`
	Tool      string          `json:"tool"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Code string `json:"code"`
	} `json:"error"`
	Artifacts map[string]string `json:"artifacts"`
}

func (r response) code() string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

// callTool calls a tool and checks what every tool result must be: one
// text block holding the same object as the structured content (then only
// resource links), isError exactly when ok is false.
func callTool(t *testing.T, cs *sdk.ClientSession, name string, args any) response {
	t.Helper()
	r, _ := callToolLinks(t, cs, name, args)
	return r
}

// callToolLinks is callTool that also returns the resource links after
// the text block.
func callToolLinks(t *testing.T, cs *sdk.ClientSession, name string, args any) (response, []*sdk.ResourceLink) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("%s: no content", name)
	}
	var links []*sdk.ResourceLink
	for _, c := range res.Content[1:] {
		link, ok := c.(*sdk.ResourceLink)
		if !ok {
			t.Fatalf("%s: content after the text is %T", name, c)
		}
		links = append(links, link)
	}
	text, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T", name, res.Content[0])
	}
	var fromText, fromStructured any
	if err := json.Unmarshal([]byte(text.Text), &fromText); err != nil {
		t.Fatal(err)
	}
	structured, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(structured, &fromStructured); err != nil {
		t.Fatal(err)
	}
	is.New(t).Equal(fromText, fromStructured) // one object, twice
	var r response
	if err := json.Unmarshal([]byte(text.Text), &r); err != nil {
		t.Fatal(err)
	}
	if res.IsError == r.OK {
		t.Fatalf("%s: isError %v with ok %v", name, res.IsError, r.OK)
	}
	if r.Tool != name || r.RequestID == "" {
		t.Fatalf("%s: tool %q, request_id %q", name, r.Tool, r.RequestID)
	}
	return r, links
}

func digestOf(t *testing.T, cs *sdk.ClientSession) string {
	t.Helper()
	r := callTool(t, cs, "inspect_inputs", map[string]any{})
	var res struct {
		SourceDigest string `json:"source_digest"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || res.SourceDigest == "" {
		t.Fatalf("inspect failed: %+v", r)
	}
	return res.SourceDigest
}

// The tools of protocol §9 over the SDK's in-memory transports: inspect;
// analyze with and without run_id (the call ID is the run ID, an assigned
// one is time and 8 hex); verify of both; and the refusals an agent meets.
func TestTheThreeToolsOverMCP(t *testing.T) {
	is := is.New(t)
	w := newWorld(t)
	cs := session(t, w.service("--output-dir", "runs"), context.Background())
	digest := digestOf(t, cs)

	named := callTool(t, cs, "analyze", map[string]any{"expected_source_digest": digest, "run_id": "nightly-1"})
	is.Equal(named.code(), "")
	is.Equal(named.RequestID, "nightly-1")
	is.Equal(named.Artifacts["result"], "runs/nightly-1/result.json")

	assigned := callTool(t, cs, "analyze", map[string]any{"expected_source_digest": digest})
	is.Equal(assigned.code(), "")
	is.True(assignedID(assigned.RequestID)) // 20261201T073000Z-3f9a1c2e
	is.Equal(assigned.Artifacts["result"], "runs/"+assigned.RequestID+"/result.json")

	for _, run := range []string{"nightly-1", assigned.RequestID} {
		v := callTool(t, cs, "verify_result", map[string]any{"run_id": run})
		is.Equal(v.code(), "")
		is.True(strings.Contains(string(v.Result), `"integrity":"verified"`))
		is.True(assignedID(v.RequestID)) // verify's call ID is assigned
	}

	tests := []struct {
		tool string
		args any
		code string
	}{
		{"inspect_inputs", nil, ""}, // absent arguments are {}
		{"inspect_inputs", map[string]any{"path": "/etc"}, "INVALID_ARGUMENTS"},
		{"analyze", map[string]any{"expected_source_digest": digest, "extra": 1}, "INVALID_ARGUMENTS"},
		{"analyze", map[string]any{"expected_source_digest": strings.Repeat("0", 64)}, "STALE_CONTEXT"},
		{"analyze", map[string]any{"expected_source_digest": digest, "run_id": "nightly-1"}, "OUTPUT_COLLISION"},
		{"analyze", map[string]any{"expected_source_digest": digest, "run_id": "../x"}, "INVALID_ARGUMENTS"},
		{"analyze", []any{}, "INVALID_ARGUMENTS"},
		{"verify_result", map[string]any{"run_id": "nope"}, "MISSING_RESULT"},
		{"verify_result", map[string]any{}, "INVALID_ARGUMENTS"},
	}
	for _, tt := range tests {
		r := callTool(t, cs, tt.tool, tt.args)
		is.Equal(r.code(), tt.code) // each refusal its own code
	}
}

// assignedID reports whether id is an ID the server assigns.
func assignedID(id string) bool {
	date, hex, ok := strings.Cut(id, "-")
	_, err := time.Parse("20060102T150405Z", date)
	if !ok || err != nil || len(hex) != 8 {
		return false
	}
	return strings.Trim(hex, "0123456789abcdef") == ""
}

// heldMarker is a cancel marker that holds the call at its nth check until
// the call's context is cancelled, so a cancellation reaches the check
// deterministically. reached is closed when the call is held.
type heldMarker struct {
	mu      sync.Mutex
	n, seen int
	reached chan struct{}
}

func (m *heldMarker) Cancelled(ctx context.Context) (bool, error) {
	m.mu.Lock()
	m.seen++
	hold := m.seen == m.n
	m.mu.Unlock()
	if hold {
		close(m.reached)
		<-ctx.Done()
	}
	return false, nil
}

// notifications/cancelled reaches the three cancel checks of analyze: held
// at each in turn, the cancelled call commits nothing, is recorded as
// cancelled, and the server goes on answering.
func TestACancelledCallCommitsNothing(t *testing.T) {
	for point := 1; point <= 3; point++ {
		t.Run([]string{"", "before work", "before writes", "before the commit"}[point], func(t *testing.T) {
			is := is.New(t)
			w := newWorld(t)
			plain := session(t, w.service("--output-dir", "runs"), context.Background())
			digest := digestOf(t, plain)

			m := &heldMarker{n: point, reached: make(chan struct{})}
			w.cancel = m
			cs := session(t, w.service("--output-dir", "runs", "--ledger", "calls.jsonl"), context.Background())
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "analyze", Arguments: map[string]any{"expected_source_digest": digest, "run_id": "held"}})
				done <- err
			}()
			<-m.reached
			cancel() // the client sends notifications/cancelled
			is.True(<-done != nil)

			// The client gave up at once; the server still answers the call
			// and records that answer. Wait for the record, then the next
			// call goes through.
			records := waitForRecords(t, w, 1)
			is.Equal(records[0]["request_id"], "held")
			is.Equal(records[0]["status"], "cancelled")
			is.Equal(records[0]["code"], "CANCELLED")
			is.Equal(records[0]["run_id"], nil)
			exists, err := afero.Exists(w.fs, wsRoot+"/runs/held")
			is.NoErr(err)
			is.True(!exists) // nothing committed
			is.Equal(callTool(t, cs, "verify_result", map[string]any{"run_id": "held"}).code(), "MISSING_RESULT")
			is.Equal(len(ledgerLines(t, w)), 2)
		})
	}
}

// waitForRecords waits until the in-memory ledger holds n records: a
// cancelled call's record is appended after its client gave up. It is an
// event to wait for, not a time to assert; the bound only stops a hang.
func waitForRecords(t *testing.T, w *world, n int) []map[string]any {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if exists, _ := afero.Exists(w.fs, wsRoot+"/calls.jsonl"); exists {
			if records := ledgerLines(t, w); len(records) >= n {
				return records
			}
		}
	}
	t.Fatalf("the ledger never held %d records", n)
	return nil
}

// ledgerLines decodes the in-memory ledger's records.
func ledgerLines(t *testing.T, w *world) []map[string]any {
	t.Helper()
	data, err := afero.ReadFile(w.fs, wsRoot+"/calls.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var records []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("ledger line %q: %v", line, err)
		}
		records = append(records, r)
	}
	return records
}

// A stop (SIGINT or SIGTERM) cancels the calls in flight: held at its
// check, an analyze answers CANCELLED once the stop arrives.
func TestAStopCancelsTheCallsInFlight(t *testing.T) {
	is := is.New(t)
	w := newWorld(t)
	digest := digestOf(t, session(t, w.service("--output-dir", "runs"), context.Background()))
	m := &heldMarker{n: 2, reached: make(chan struct{})}
	w.cancel = m
	stop, stopNow := context.WithCancel(context.Background())
	cs := session(t, w.service("--output-dir", "runs"), stop)
	got := make(chan response, 1)
	go func() {
		got <- callTool(t, cs, "analyze", map[string]any{"expected_source_digest": digest, "run_id": "stopped"})
	}()
	<-m.reached
	stopNow()
	r := <-got
	is.Equal(r.code(), "CANCELLED")
	is.Equal(r.Status, "cancelled")
	exists, err := afero.Exists(w.fs, wsRoot+"/runs/stopped")
	is.NoErr(err)
	is.True(!exists)
}

// tools/list is byte-identical from call to call and pinned by a reviewed
// golden file: go test ./adapters/mcp -run 'Golden|Instructions' -update,
// then review.
func TestToolsListMatchesTheGoldenFile(t *testing.T) {
	is := is.New(t)
	w := newWorld(t)
	lines := rawSession(t, w.service("--output-dir", "runs"),
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
	)
	first, second := resultOf(t, lines, 2), resultOf(t, lines, 3)
	is.Equal(string(first), string(second)) // byte-identical from call to call
	var compact bytes.Buffer
	is.NoErr(json.Compact(&compact, first))
	is.Equal(compact.String(), string(first)) // the server writes no insignificant white space
	// The golden file is indented for review; compacted, it is the exact
	// bytes the server writes.
	golden := filepath.Join("testdata", "golden", "tools-list.json")
	if *update {
		var indented bytes.Buffer
		is.NoErr(json.Indent(&indented, first, "", "  "))
		is.NoErr(os.MkdirAll(filepath.Dir(golden), 0o755))
		is.NoErr(os.WriteFile(golden, append(indented.Bytes(), '\n'), 0o644))
	}
	want, err := os.ReadFile(golden)
	is.NoErr(err) // a missing golden fails: run with -update and review it
	var wantCompact bytes.Buffer
	is.NoErr(json.Compact(&wantCompact, want))
	is.Equal(string(first), wantCompact.String())
}

// The server's instructions (protocol §9.2) reach a model however its host
// connects: initialize's result (pinned with the rest of the handshake by a
// reviewed golden file) and, under the 2026-07-28 revision, which has no
// handshake, server/discover's. They say the order of the calls, what the
// tools never do and where the evidence is.
func TestTheInstructionsComeWithInitializeAndDiscover(t *testing.T) {
	is := is.New(t)
	w := newWorld(t)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`
	lines := rawSession(t, w.service("--output-dir", "runs"),
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{`+meta+`}}`,
	)
	var initialized, discovered struct{ Instructions string }
	is.NoErr(json.Unmarshal(resultOf(t, lines, 1), &initialized))
	is.NoErr(json.Unmarshal(resultOf(t, lines, 2), &discovered))
	is.Equal(initialized.Instructions, mcp.Instructions) // on initialize
	is.Equal(discovered.Instructions, mcp.Instructions)  // and on discover
	order := []string{"inspect_inputs", "analyze", "verify_result"}
	at := -1
	for _, tool := range order {
		i := strings.Index(mcp.Instructions, tool)
		is.True(i > at) // the calls in their order
		at = i
	}
	for _, said := range []string{"never", "metricproof://runs/{run_id}/{file}", "resources/list", "retryable", "tell the user"} {
		is.True(strings.Contains(mcp.Instructions, said)) // what the tools never do, where the evidence is, what to do on a refusal
	}
	golden := filepath.Join("testdata", "golden", "initialize.json")
	first := resultOf(t, lines, 1)
	if *update {
		var indented bytes.Buffer
		is.NoErr(json.Indent(&indented, first, "", "  "))
		is.NoErr(os.WriteFile(golden, append(indented.Bytes(), '\n'), 0o644))
	}
	want, err := os.ReadFile(golden)
	is.NoErr(err) // a missing golden fails: run with -update and review it
	var wantCompact bytes.Buffer
	is.NoErr(json.Compact(&wantCompact, want))
	is.Equal(string(first), wantCompact.String())
}

// rawSession runs the server of svc over its stdio stream, feeding it
// lines and closing its input, and returns every line it wrote.
func rawSession(t *testing.T, svc service, lines ...string) []string {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		defer outW.Close()
		if err := mcp.ServeStdio(svc.calls, svc.listLimit, "test", inR, outW, context.Background()); err != nil {
			t.Errorf("the session did not start: %v", err)
			_ = inR.CloseWithError(err) // the writer below stops too
		}
	}()
	go func() {
		for _, l := range lines {
			_, _ = io.WriteString(inW, l+"\n")
		}
		inW.Close()
	}()
	var out []string
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 32<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	<-ended
	return out
}

// resultOf returns the raw result of the response with the given id.
func resultOf(t *testing.T, lines []string, id int) json.RawMessage {
	t.Helper()
	for _, l := range lines {
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.ID != nil && *m.ID == id {
			return m.Result
		}
	}
	t.Fatalf("no response %d in %q", id, lines)
	return nil
}

// protocol §9.7: outside params.arguments the SDK's decoder takes at most
// 1,000 levels (the message itself is level 1): a deeper request is -32600
// under its id, and the session goes on.
func TestTheSDKsDepthLimitIsInvalidRequestUnderItsID(t *testing.T) {
	is := is.New(t)
	w := newWorld(t)
	ping := func(id, levels int) string { // root, params, _meta, then arrays
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"_meta":{"x":%s%s}}}`, id, strings.Repeat("[", levels-3), strings.Repeat("]", levels-3))
	}
	out := rawSession(t, w.service(),
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		ping(1, 1000), ping(2, 1001), `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	for _, tt := range []struct {
		id   int
		code int64
	}{{1, 0}, {2, -32600}, {3, 0}} {
		var m struct {
			Error *struct{ Code int64 }
		}
		is.NoErr(json.Unmarshal([]byte(lineOf(t, out, tt.id)), &m))
		code := int64(0)
		if m.Error != nil {
			code = m.Error.Code
		}
		is.Equal(code, tt.code) // the answer to tt.id
	}
}

// Arguments longer than the request limit never reach the SDK, which would
// hold megabytes of them four times over (protocol §9.7): the tool still
// answers REQUEST_LIMIT under the call's id, recorded with the SHA256 of
// the raw arguments as they arrived; under another tool's name the SDK
// still answers -32602, and a ping carrying such arguments is still a ping.
func TestArgumentsOverTheLimitAreAnsweredWithoutTheSDKHoldingThem(t *testing.T) {
	is := is.New(t)
	w := newWorld(t)
	args := `{"x":"` + strings.Repeat("é", 70_000) + `"}` // 140 KB of 70,000 characters
	out := rawSession(t, w.service("--output-dir", "runs", "--ledger", "calls.jsonl"),
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","arguments":`+args+`}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rm_rf","arguments":`+args+`}}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"arguments":`+args+`}}`,
	)
	var first struct{ Result *sdk.CallToolResult }
	is.NoErr(json.Unmarshal([]byte(lineOf(t, out, 1)), &first))
	is.True(first.Result.IsError)
	text := first.Result.Content[0].(*sdk.TextContent).Text
	var body struct {
		RequestID string `json:"request_id"`
		Error     struct{ Code, Message string }
	}
	is.NoErr(json.Unmarshal([]byte(text), &body))
	is.Equal(body.Error.Code, "REQUEST_LIMIT")
	is.True(assignedID(body.RequestID)) // a run_id inside arguments over the limit is not read
	is.True(strings.Contains(lineOf(t, out, 2), `"code":-32602`))
	is.True(strings.Contains(lineOf(t, out, 3), `"result":{}`))
	recs := ledgerLines(t, w)
	is.Equal(len(recs), 1) // the tool call, and nothing else
	is.Equal(recs[0]["code"], "REQUEST_LIMIT")
	is.Equal(recs[0]["request_id"], body.RequestID)
	is.Equal(recs[0]["input_sha256"], testutil.SHA256Hex([]byte(args))) // the bytes as they arrived
	is.Equal(recs[0]["response_sha256"], testutil.SHA256Hex([]byte(text)))
}
