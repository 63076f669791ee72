package mcphttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/adapters/mcp/internal/mcptest"
	"github.com/metricproof/metricproof/adapters/mcp/mcphttp"
	"github.com/metricproof/metricproof/adapters/remote"
)

// FuzzTheScopeIsDecidedOnTheToolTheSDKRuns gives arbitrary bodies to the
// front's reader (the server's §9.7 check) and, when it lets one through,
// to the SDK's stateless Streamable HTTP handler over tools named as ours
// (each noting which ran): a tool the SDK runs is the one the reader named
// for a tools/call, so a scope decided on the reader's answer is the scope
// of what runs. Whatever the reader refuses, it refuses as a stdio line of
// the same bytes is refused (but a blank body, which stdio skips).
func FuzzTheScopeIsDecidedOnTheToolTheSDKRuns(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","Name":"inspect_inputs","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME":"analyze","name":"inspect_inputs","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"inspect_inputs","name":"analyze","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"inspect_inputs","n\u0061me":"analyze"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze"},"Params":{"name":"inspect_inputs"}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"tools/call","method":"tools/list","params":{"name":"analyze"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","arguments":{"a":1,"a":2}}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"analyze","arguments":{}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","arguments":{}}}]`,
		"", " ", "\xff", "{", "\ufeff{}",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	var ran []string
	server := sdk.NewServer(&sdk.Implementation{Name: "names", Version: "v0"}, nil)
	for _, name := range []string{"inspect_inputs", "analyze", "verify_result"} {
		server.AddTool(&sdk.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				ran = append(ran, req.Params.Name)
				return &sdk.CallToolResult{}, nil
			})
	}
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, remote.StreamableOptions())
	w := mcptest.NewWorld(f)
	svc := w.Service()
	f.Fuzz(func(t *testing.T, body string, newest bool) {
		reading, refusal := mcphttp.Read([]byte(body))
		method, tool := reading.Method, reading.Tool
		if refusal != nil {
			if strings.TrimSpace(body) == "" || strings.ContainsAny(body, "\r\n") {
				return // blank, which stdio skips; or not one stdio line as it is
			}
			var answers []string
			for _, l := range mcptest.RawSession(t, svc, initialize, body) {
				if !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":0,"result"`) {
					answers = append(answers, l)
				}
			}
			if len(answers) != 1 || answers[0] != string(refusal) {
				t.Fatalf("refused over HTTP with %s, over stdio answered %q", refusal, answers)
			}
			return
		}
		ran = ran[:0]
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if newest {
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		}
		handler.ServeHTTP(httptest.NewRecorder(), req)
		for _, name := range ran {
			if method != "tools/call" || name != tool {
				t.Fatalf("the reader read %q %q, the SDK ran %q", method, tool, name)
			}
		}
	})
}
