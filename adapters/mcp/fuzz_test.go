package mcp_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/metricproof/metricproof/adapters/mcp/internal/mcptest"
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
		w := mcptest.NewWorld(t)
		before := mcptest.ListFiles(t, w.FS)
		const last = `"the session goes on: 7f3c"`
		lines := append([]string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		}, strings.Split(input, "\n")...)
		lines = append(lines, `{"jsonrpc":"2.0","id":`+last+`,"method":"ping"}`)
		got := make(chan []string, 1)
		go func() { got <- mcptest.RawSession(t, w.Service(), lines...) }()
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
		if after := mcptest.ListFiles(t, w.FS); after != before {
			t.Fatalf("the workspace changed:\nbefore %s\nafter  %s", before, after)
		}
	})
}
