package mcphttp_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/adapters/mcp/internal/mcptest"
	"github.com/metricproof/metricproof/adapters/mcp/mcphttp"
	"github.com/metricproof/metricproof/adapters/remote"
)

// answer is what a client learns from one JSON-RPC answer: the error's
// code, message and id (as JSON text), or the code of a tool's answer.
type answer struct {
	code    int64
	message string
	id      string
	tool    string // the tool answer's error code, for a tool result
}

// answerOf reads one JSON-RPC answer.
func answerOf(t *testing.T, data []byte) answer {
	t.Helper()
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int64
			Message string
		}
		Result *struct {
			Content []struct{ Text string }
		}
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("not a JSON-RPC answer: %q", data)
	}
	a := answer{id: string(m.ID)}
	switch {
	case m.Error != nil:
		a.code, a.message = m.Error.Code, m.Error.Message
	case m.Result != nil && len(m.Result.Content) > 0:
		var r struct{ Error struct{ Code string } }
		_ = json.Unmarshal([]byte(m.Result.Content[0].Text), &r)
		a.tool = r.Error.Code
	}
	return a
}

// recordOf is what a ledger record says of a call, but where, when and by
// whom: its tool, its code, and the SHA256 of its arguments.
func recordOf(r map[string]any) [3]any {
	return [3]any{r["tool"], r["code"], r["input_sha256"]}
}

// initialize is the first line of a raw stdio session.
const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// stdioRecords is the in-memory ledger's records; none before the first.
func stdioRecords(t *testing.T, w *mcptest.World) []map[string]any {
	t.Helper()
	if exists, _ := afero.Exists(w.FS, mcptest.WSRoot+"/calls.jsonl"); !exists {
		return nil
	}
	return mcptest.LedgerLines(t, w)
}

// Every rule of protocol §9 holds per request over HTTP: a POST body gets
// the JSON-RPC answer a stdio line of the same bytes gets (code, message
// and id), and the ledger records the same call, or none. Both run the
// real server in this process: the stdio stream over pipes, the HTTP
// server behind its front with a token that may run every tool.
func TestHTTPAnswersEachBodyAsStdioAnswersTheSameLine(t *testing.T) {
	h := startHTTP(t, httpSetup{})
	token := h.token(t, scopeBoth)
	w := mcptest.NewWorld(t)
	svc := w.Service("--output-dir", "runs", "--ledger", "calls.jsonl")
	list := func(extra string) string { return `{"jsonrpc":"2.0","id":7` + extra + `,"method":"tools/list"}` }
	tests := []struct {
		name, body string
		code       int64  // the JSON-RPC error's code, 0 for a result
		id         string // the answer's id, as JSON text
		tool       string // the tool answer's code, for a tool result
	}{
		{"not JSON", `{`, -32700, `null`, ""},
		{"NaN", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":NaN}`, -32700, `null`, ""},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"tools/list\"}", -32700, `null`, ""},
		{"invalid UTF-8 inside the arguments", toolCall(3, handshake, "verify_result", "{\"run_id\":\"\xff\"}"), -32700, `null`, ""},
		{"a byte order mark first", "\ufeff" + list(""), -32700, `null`, ""},
		{"two documents", list("") + " {}", -32700, `null`, ""},
		{"a batch", `[` + list("") + `]`, -32600, `null`, ""},
		{"a batch of a call of analyze", `[` + toolCall(4, handshake, "analyze", `{}`) + `]`, -32600, `null`, ""},
		{"two ids", `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list"}`, -32600, `null`, ""},
		{"a duplicate key in the envelope", list(`,"method":"tools/list"`), -32600, `7`, ""},
		{"a duplicate key in params", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"inspect_inputs","name":"analyze","arguments":{}}}`, -32600, `5`, ""},
		{"the tool's name twice, one escaped", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"analyze","n\u0061me":"inspect_inputs","arguments":{}}}`, -32600, `5`, ""},
		{"a lone surrogate in the tool's name", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"analyze\ud800","arguments":{}}}`, -32600, `5`, ""},
		{"a duplicate key in the arguments", toolCall(8, handshake, "verify_result", `{"run_id":"a","run_id":"b"}`), 0, `8`, "INVALID_JSON"},
		{"a lone surrogate in the arguments", toolCall(8, handshake, "verify_result", `{"run_id":"\ud800"}`), 0, `8`, "INVALID_JSON"},
		{"an id with a fraction", `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, -32600, `null`, ""},
		{"an id past 2^53", `{"jsonrpc":"2.0","id":9007199254740992,"method":"tools/list"}`, -32600, `null`, ""},
		{"a null id", `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, -32600, `null`, ""},
		{"nested deeper than 1,000 levels", `{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"_meta":{"x":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}}}`, -32600, `6`, ""},
		{"arguments nested deeper than 1,000 levels", toolCall(6, handshake, "inspect_inputs", `{"x":`+strings.Repeat("[", 998)+strings.Repeat("]", 998)+`}`), -32600, `6`, ""},
		{"not JSON-RPC 2.0", `{"jsonrpc":"1.0","id":7,"method":"tools/list"}`, -32600, `7`, ""},
		{"an unknown tool", toolCall(10, handshake, "rm", `{}`), -32602, `10`, ""},
		{"arguments over the request limit", toolCall(11, handshake, "verify_result", `{"run_id":"`+strings.Repeat("é", 70_000)+`"}`), 0, `11`, "REQUEST_LIMIT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			stdioBefore, httpBefore := len(stdioRecords(t, w)), len(h.records(t))
			var stdio []string
			for _, l := range mcptest.RawSession(t, svc, initialize, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, tt.body) {
				if !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":0,"result"`) {
					stdio = append(stdio, l)
				}
			}
			if len(stdio) != 1 {
				t.Fatalf("stdio answered %q", stdio)
			}
			r := h.post(t, exchange{token: token, version: handshake, body: tt.body})
			is.True(strings.HasPrefix(r.header.Get("Content-Type"), "application/json") || strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream"))
			want := answerOf(t, []byte(stdio[0]))
			var got answer
			if strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
				b, _ := json.Marshal(r.rpc(t))
				got = answerOf(t, b)
			} else {
				got = answerOf(t, r.body)
			}
			is.Equal(got, want) // the HTTP answer is the stdio answer
			// and the one the protocol gives
			is.Equal(answer{code: want.code, id: want.id, tool: want.tool}, answer{code: tt.code, id: tt.id, tool: tt.tool})
			if want.code != 0 && want.code != -32602 { // refused before the SDK
				is.Equal(r.status, http.StatusBadRequest)
				is.Equal(string(r.body), stdio[0]) // byte for byte the stdio line
			}
			var stdioRecs, httpRecs [][3]any
			for _, rec := range stdioRecords(t, w)[stdioBefore:] {
				stdioRecs = append(stdioRecs, recordOf(rec))
			}
			for _, rec := range h.records(t)[httpBefore:] {
				httpRecs = append(httpRecs, recordOf(rec))
			}
			is.True(slices.Equal(httpRecs, stdioRecs)) // the same records, or none
		})
	}
}

// A token with the read scope alone never runs analyze, however the call
// is framed: the scope is decided on the method and tool the server's own
// check reads, as the SDK will (names matched case-sensitively), and a
// body it could read two ways is refused before the scope, with the
// JSON-RPC error stdio gives it. Nothing is recorded and no run is made.
func TestHTTPAReadTokenNeverRunsAnalyzeWhateverTheFraming(t *testing.T) {
	h := startHTTP(t, httpSetup{})
	token := h.token(t, scopeRead)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","arguments":{}}}`
	tests := []struct {
		name, body string
		status     int
		code       int64 // the JSON-RPC error's, for a 400
	}{
		{"one message", call, 403, 0},
		{"a batch of one", "[" + call + "]", 400, -32600},
		{"a batch after white space", " \r\n\t[" + call + "]", 400, -32600},
		{"a batch of two, analyze second", `[{"jsonrpc":"2.0","id":2,"method":"tools/list"},` + call + "]", 400, -32600},
		{"the name twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"inspect_inputs","name":"analyze","arguments":{}}}`, 400, -32600},
		{"the name twice, one escaped", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","n\u0061me":"inspect_inputs","arguments":{}}}`, 400, -32600},
		{"params twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"inspect_inputs"},"params":{"name":"analyze","arguments":{}}}`, 400, -32600},
		{"the method twice", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"analyze","arguments":{}}}`, 400, -32600},
		{"a name twice in the arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","arguments":{"a":1,"a":2}}}`, 403, 0},
		{"the name in another case second", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","Name":"inspect_inputs","arguments":{}}}`, 403, 0},
		{"the method in another case second", `{"jsonrpc":"2.0","id":1,"method":"tools/call","Method":"tools/list","params":{"name":"analyze","arguments":{}}}`, 403, 0},
		{"params in another case second", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","arguments":{}},"Params":{"name":"inspect_inputs"}}`, 403, 0},
		{"a lone surrogate in the name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze\ud800","arguments":{}}}`, 400, -32600},
		{"invalid UTF-8 in the arguments", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"analyze\",\"arguments\":{\"a\":\"\xff\"}}}", 400, -32700},
		{"a byte order mark first", "\ufeff" + call, 400, -32700},
		{"a notification", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"analyze","arguments":{}}}`, 403, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r := h.post(t, exchange{token: token, version: handshake, body: tt.body})
			is.Equal(r.status, tt.status)
			if tt.code != 0 {
				is.Equal(r.header.Get("Content-Type"), "application/json")
				is.Equal(answerOf(t, r.body).code, tt.code)
			}
			is.Equal(len(h.records(t)), 0) // nothing ran
			is.Equal(len(h.runs(t)), 0)
		})
	}
}

// The handler of /mcp not behind the front (as FuzzHTTPBody and the
// benchmarks run it) checks each body itself: a body the front would
// refuse gets, from the handler alone, the JSON-RPC error a stdio line of
// the same bytes gets, with status 400.
func TestHTTPWithoutTheFrontEachBodyIsChecked(t *testing.T) {
	w := mcptest.NewWorld(t)
	svc := w.Service()
	handler, err := mcphttp.NewHandler(svc.Calls, svc.ListLimit)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, body string
		status     int
		refusal    string // the stdio answer to the same line; "" for none
	}{
		{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a message is one JSON object; batches are not accepted"}}`},
		{"a duplicate key in the envelope", `{"jsonrpc":"2.0","id":7,"method":"ping","method":"ping"}`, 400, `{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid Request: a duplicate key, or a string that is not valid Unicode, outside params.arguments"}}`},
		{"an id past 2^53", `{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: id must be a string or an integer from -(2^53-1) to 2^53-1"}}`},
		{"a blank body", " ", 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the body is empty"}}`},
		{"a cancellation naming no call", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.5}}`, 202, ""},
		{"a ping", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			is.Equal(rec.Code, tt.status)
			if tt.refusal != "" {
				is.Equal(strings.TrimSpace(rec.Body.String()), tt.refusal)
			}
		})
	}
}

// Behind the front, the handler serves the body the front checked (its
// reading goes on with the request), not a reading of its own: a front
// whose reader reads another body than the one sent gets that other
// body's answer. Were the body checked again here, the answer would be
// the sent one's.
func TestHTTPBehindTheFrontTheBodyIsCheckedOnce(t *testing.T) {
	is := is.New(t)
	w := mcptest.NewWorld(t)
	svc := w.Service()
	handler, err := mcphttp.NewHandler(svc.Calls, svc.ListLimit)
	is.NoErr(err)
	front, err := remote.Listen(remote.Options{Addr: "127.0.0.1:0", MCP: handler, Stderr: io.Discard,
		Read: func([]byte) (remote.Reading, []byte) {
			return mcphttp.Read([]byte(`{"jsonrpc":"2.0","id":7,"method":"ping"}`))
		}})
	is.NoErr(err)
	defer front.Close()
	u, err := url.Parse(front.URL())
	is.NoErr(err)
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Host = u.Host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	front.ServeHTTP(rec, req)
	is.Equal(rec.Code, http.StatusOK)
	is.True(strings.Contains(rec.Body.String(), `"id":7`))  // the checked body's answer
	is.True(!strings.Contains(rec.Body.String(), `"id":1`)) // not the sent one's
}
