package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/adapters/mcp"
	"github.com/metricproof/metricproof/adapters/mcp/internal/mcptest"
	"github.com/metricproof/metricproof/app/call"
	"github.com/metricproof/metricproof/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden; review the diff before committing")

// session connects an SDK client to the server of svc over the SDK's
// in-memory transports.
func session(t *testing.T, svc mcptest.Service, stop context.Context) *sdk.ClientSession {
	t.Helper()
	server, err := mcp.New(mcp.Config{Calls: svc.Calls, Transport: call.Transport{Name: "mcp", ListLimit: svc.ListLimit}, Version: "test", Stop: stop})
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

// The tools of protocol §9 over the SDK's in-memory transports: inspect;
// analyze with and without run_id (the call ID is the run ID, an assigned
// one is time and 8 hex); verify of both; and the refusals an agent meets.
func TestTheThreeToolsOverMCP(t *testing.T) {
	is := is.New(t)
	w := mcptest.NewWorld(t)
	cs := session(t, w.Service("--output-dir", "runs"), context.Background())
	digest := mcptest.DigestOf(t, cs)

	named := mcptest.CallTool(t, cs, "analyze", map[string]any{"expected_source_digest": digest, "run_id": "nightly-1"})
	is.Equal(named.Code(), "")
	is.Equal(named.RequestID, "nightly-1")
	is.Equal(named.Artifacts["result"], "runs/nightly-1/result.json")

	assigned := mcptest.CallTool(t, cs, "analyze", map[string]any{"expected_source_digest": digest})
	is.Equal(assigned.Code(), "")
	is.True(assignedID(assigned.RequestID)) // 20261201T073000Z-3f9a1c2e
	is.Equal(assigned.Artifacts["result"], "runs/"+assigned.RequestID+"/result.json")

	for _, run := range []string{"nightly-1", assigned.RequestID} {
		v := mcptest.CallTool(t, cs, "verify_result", map[string]any{"run_id": run})
		is.Equal(v.Code(), "")
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
		r := mcptest.CallTool(t, cs, tt.tool, tt.args)
		is.Equal(r.Code(), tt.code) // each refusal its own code
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
			w := mcptest.NewWorld(t)
			plain := session(t, w.Service("--output-dir", "runs"), context.Background())
			digest := mcptest.DigestOf(t, plain)

			m := &heldMarker{n: point, reached: make(chan struct{})}
			w.Cancel = m
			cs := session(t, w.Service("--output-dir", "runs", "--ledger", "calls.jsonl"), context.Background())
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
			exists, err := afero.Exists(w.FS, mcptest.WSRoot+"/runs/held")
			is.NoErr(err)
			is.True(!exists) // nothing committed
			is.Equal(mcptest.CallTool(t, cs, "verify_result", map[string]any{"run_id": "held"}).Code(), "MISSING_RESULT")
			is.Equal(len(mcptest.LedgerLines(t, w)), 2)
		})
	}
}

// waitForRecords waits until the in-memory ledger holds n records: a
// cancelled call's record is appended after its client gave up. It is an
// event to wait for, not a time to assert; the bound only stops a hang.
func waitForRecords(t *testing.T, w *mcptest.World, n int) []map[string]any {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if exists, _ := afero.Exists(w.FS, mcptest.WSRoot+"/calls.jsonl"); exists {
			if records := mcptest.LedgerLines(t, w); len(records) >= n {
				return records
			}
		}
	}
	t.Fatalf("the ledger never held %d records", n)
	return nil
}

// A stop (SIGINT or SIGTERM) cancels the calls in flight: held at its
// check, an analyze answers CANCELLED once the stop arrives.
func TestAStopCancelsTheCallsInFlight(t *testing.T) {
	is := is.New(t)
	w := mcptest.NewWorld(t)
	digest := mcptest.DigestOf(t, session(t, w.Service("--output-dir", "runs"), context.Background()))
	m := &heldMarker{n: 2, reached: make(chan struct{})}
	w.Cancel = m
	stop, stopNow := context.WithCancel(context.Background())
	cs := session(t, w.Service("--output-dir", "runs"), stop)
	got := make(chan mcptest.Response, 1)
	go func() {
		got <- mcptest.CallTool(t, cs, "analyze", map[string]any{"expected_source_digest": digest, "run_id": "stopped"})
	}()
	<-m.reached
	stopNow()
	r := <-got
	is.Equal(r.Code(), "CANCELLED")
	is.Equal(r.Status, "cancelled")
	exists, err := afero.Exists(w.FS, mcptest.WSRoot+"/runs/stopped")
	is.NoErr(err)
	is.True(!exists)
}

// tools/list is byte-identical from call to call and pinned by a reviewed
// golden file: go test ./adapters/mcp -run 'Golden|Instructions' -update,
// then review.
func TestToolsListMatchesTheGoldenFile(t *testing.T) {
	is := is.New(t)
	w := mcptest.NewWorld(t)
	lines := mcptest.RawSession(t, w.Service("--output-dir", "runs"),
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
	w := mcptest.NewWorld(t)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`
	lines := mcptest.RawSession(t, w.Service("--output-dir", "runs"),
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
	w := mcptest.NewWorld(t)
	ping := func(id, levels int) string { // root, params, _meta, then arrays
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"_meta":{"x":%s%s}}}`, id, strings.Repeat("[", levels-3), strings.Repeat("]", levels-3))
	}
	out := mcptest.RawSession(t, w.Service(),
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
	w := mcptest.NewWorld(t)
	args := `{"x":"` + strings.Repeat("é", 70_000) + `"}` // 140 KB of 70,000 characters
	out := mcptest.RawSession(t, w.Service("--output-dir", "runs", "--ledger", "calls.jsonl"),
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
	recs := mcptest.LedgerLines(t, w)
	is.Equal(len(recs), 1) // the tool call, and nothing else
	is.Equal(recs[0]["code"], "REQUEST_LIMIT")
	is.Equal(recs[0]["request_id"], body.RequestID)
	is.Equal(recs[0]["input_sha256"], testutil.SHA256Hex([]byte(args))) // the bytes as they arrived
	is.Equal(recs[0]["response_sha256"], testutil.SHA256Hex([]byte(text)))
}
