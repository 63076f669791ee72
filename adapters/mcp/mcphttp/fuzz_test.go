package mcphttp_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/metricproof/metricproof/adapters/mcp/internal/mcptest"
	"github.com/metricproof/metricproof/adapters/mcp/mcphttp"
)

// FuzzHTTPBody posts an arbitrary body to /mcp, as each revision sends it,
// then a ping. Whatever arrives, it gets one HTTP answer: a JSON-RPC
// error body with 400 (or the SDK's own answer to a method it does not
// serve), a result or error with 200, 202 for a notification, never a
// failure of the server's; the ping after it is answered; and nothing is
// written to the workspace (there is no --output-dir).
func FuzzHTTPBody(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","arguments":{"expected_source_digest":"x"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","NAME":"inspect_inputs","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"metricproof://runs/r1/result.json"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":1,"method":"bogus"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		"", " ", "\xff", "{", "null",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	w := mcptest.NewWorld(f)
	svc := w.Service()
	handler, err := mcphttp.NewHandler(svc.Calls, svc.ListLimit)
	if err != nil {
		f.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	f.Cleanup(srv.Close)
	before := mcptest.ListFiles(f, w.FS)
	post := func(t *testing.T, body string, newest bool) (int, string, []byte) {
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if newest {
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("no answer to %q: %v", body, err)
		}
		defer res.Body.Close()
		data, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, res.Header.Get("Content-Type"), data
	}
	f.Fuzz(func(t *testing.T, body string, newest bool) {
		status, ctype, data := post(t, body, newest)
		switch {
		case status == http.StatusAccepted:
		case status == http.StatusOK, ctype == "application/json":
			if ctype == "text/event-stream" {
				i := bytes.Index(data, []byte("data: "))
				if i < 0 {
					t.Fatalf("an event stream without data for %q: %q", body, data)
				}
				data = bytes.TrimSpace(data[i+len("data: "):])
				data, _, _ = bytes.Cut(data, []byte("\n"))
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(data, &m); err != nil || string(m["jsonrpc"]) != `"2.0"` {
				t.Fatalf("status %d for %q: not one JSON-RPC message: %q", status, body, data)
			}
			_, isResult := m["result"]
			_, isError := m["error"]
			if isResult == isError {
				t.Fatalf("neither a result nor an error for %q: %q", body, data)
			}
			if status != http.StatusOK && !isError {
				t.Fatalf("status %d with a result for %q", status, body)
			}
		case status == http.StatusBadRequest || status == http.StatusNotFound:
			// the SDK's own answer, in plain text, to what the checker let through
		default:
			t.Fatalf("status %d for %q: %q", status, body, data)
		}
		if s, _, _ := post(t, `{"jsonrpc":"2.0","id":"after","method":"ping"}`, false); s != http.StatusOK {
			t.Fatalf("the ping after %q got %d", body, s)
		}
		if after := mcptest.ListFiles(t, w.FS); after != before {
			t.Fatalf("the workspace changed:\nbefore %s\nafter  %s", before, after)
		}
	})
}
