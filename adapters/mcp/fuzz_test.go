package mcp_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/adapters/mcp/mcphttp"
)

// FuzzSession feeds an initialized session arbitrary lines, then a ping,
// then ends its input. Whatever arrives, the session goes on (the ping
// after the lines is answered: nothing but end of input ends it) and ends
// (it never waits on a call it took), the initialize before them is
// answered, every line it writes is one JSON-RPC 2.0 response or
// notification, and nothing is written to the workspace (there is no
// --output-dir, so no call may write).
func FuzzSession(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"analyze","arguments":{"expected_source_digest":"` + strings.Repeat("0", 64) + `","run_id":"r1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"verify_result","arguments":{"run_id":"r1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{},"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"inspect_inputs","arguments":{}}}` + "\n" + `{"jsonrpc":"2.0","id":"x","method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		`{"jsonrpc":"1.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"again","version":"1"}}}`,
		"\xff\r\n{",
		"",
		// ids at the edges of ±(2^53−1), and past them
		`{"jsonrpc":"2.0","id":9007199254740991,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":-9007199254740991,"method":"tools/call","params":{"name":"inspect_inputs"}}` + "\n" + `{"jsonrpc":"2.0","id":-0,"method":"ping"}`,
		// the 2026-07-28 revision: no handshake, _meta on every request
		`{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"experimental":{"x":[0,0,0]}}}}}`,
		// calls cancelled before and after they arrive, and in between
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}` + "\n" + `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"verify_result","arguments":{"run_id":"r"}}}` + "\n" + `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{}}}` + "\n" + `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{}}}` + "\n" + `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7.0}}`,
		// arguments that are not the tool's, next to a large params
		`{"jsonrpc":"2.0","id":8,"method":"ping","params":{"arguments":[0,0,0,0],"_meta":{"x":[[],[],{}]}}}`,
		// what would end the SDK's own transport: too deep for its decoder,
		// trailing white space, a response without an id
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{"x":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}}}`,
		`{"jsonrpc":"2.0","id":11,"method":"ping"}   ` + "\t",
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{"x":"\ud800","y":1e999999}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"rm_rf","arguments":{"x":1,"x":2}}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		w := newWorld(t)
		before := listFiles(t, w.fs)
		const last = `"the session goes on: 7f3c"`
		lines := append([]string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		}, strings.Split(input, "\n")...)
		lines = append(lines, `{"jsonrpc":"2.0","id":`+last+`,"method":"ping"}`)
		got := make(chan []string, 1)
		go func() { got <- rawSession(t, w.service(), lines...) }()
		var out []string
		select {
		case out = <-got:
		case <-time.After(20 * time.Second): // a hang guard only
			t.Fatalf("the session did not end after its input ended; input %q", input)
		}
		initialized, pinged := false, false
		for _, l := range out {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("not one JSON object: %q", l)
			}
			if string(m["jsonrpc"]) != `"2.0"` {
				t.Fatalf("not JSON-RPC 2.0: %q", l)
			}
			_, isResult := m["result"]
			_, isError := m["error"]
			_, isNotice := m["method"]
			if isResult == isError && !isNotice {
				t.Fatalf("neither one response nor a notification: %q", l)
			}
			if string(m["id"]) == "1" && isResult && bytes.Contains(m["result"], []byte(`"protocolVersion"`)) {
				initialized = true
			}
			pinged = pinged || string(m["id"]) == last
		}
		if !initialized {
			t.Fatalf("the initialize was not answered: %q", out)
		}
		if !pinged {
			t.Fatalf("the ping after the lines was not answered: the session ended early; input %q", input)
		}
		if after := listFiles(t, w.fs); after != before {
			t.Fatalf("the workspace changed:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// listFiles lists every path in fs, one per line.
func listFiles(t testing.TB, fs afero.Fs) string {
	t.Helper()
	var b strings.Builder
	err := afero.Walk(fs, "/", func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

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
	w := newWorld(f)
	svc := w.service()
	handler, err := mcphttp.NewHandler(svc.calls, svc.listLimit)
	if err != nil {
		f.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	f.Cleanup(srv.Close)
	before := listFiles(f, w.fs)
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
		if after := listFiles(t, w.fs); after != before {
			t.Fatalf("the workspace changed:\nbefore %s\nafter  %s", before, after)
		}
	})
}
