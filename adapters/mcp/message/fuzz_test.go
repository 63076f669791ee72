package message

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzCheck gives Check arbitrary bytes. A refusal is one JSON-RPC error
// response, -32700 or -32600, under a valid id or null; a message that
// passes is one the SDK decodes, its Body passes again with the same facts
// (the SDK reads what the checker read) and is counted whole, and a call's id is what the SDK's
// answer to it carries back (AnswerID).
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		toolCall("1", `{}`, ""),
		toolCall(`"a\u0062"`, `{"x":1,"x":2}`, `,"_meta":{"k":[1]}`),
		toolCall("9007199254740992", `{}`, ""),
		toolCall("1", `{"x":"`+strings.Repeat("x", 70000)+`"}`, ""),
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.5}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME":"analyze","name":"inspect_inputs"}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		"", " ", "\xff", "{", "null", `{"a":1,"a":2}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, refusal := Check(data)
		if refusal != nil {
			var r struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   jsonrpc.Error   `json:"error"`
			}
			if err := json.Unmarshal(refusal, &r); err != nil || r.JSONRPC != "2.0" {
				t.Fatalf("a refusal that is not JSON-RPC: %q", refusal)
			}
			if c := r.Error.Code; c != jsonrpc.CodeParseError && c != jsonrpc.CodeInvalidRequest {
				t.Fatalf("code %d for %q", c, data)
			}
			// An id is echoed as its value (encoding/json escapes & < > in it).
			if id := r.ID; string(id) != "null" && validID(jsontext.Value(id)) == nil {
				t.Fatalf("the refusal's id %s is no valid id: %q", id, data)
			}
			return
		}
		if m.Blank {
			return
		}
		if _, err := jsonrpc.DecodeMessage(m.Body); err != nil {
			t.Fatalf("passed, and the SDK cannot decode it: %q: %v", m.Body, err)
		}
		again, refusal := Check(m.Body)
		if refusal != nil || again.Method != m.Method || again.Tool != m.Tool || again.Call != m.Call ||
			again.ID != m.ID || again.Cancels != m.Cancels || again.Drop != m.Drop {
			t.Fatalf("the body the SDK gets reads otherwise: %+v, then %+v (%s)", m, again, refusal)
		}
		if m.HeldBytes < callBytes+len(m.Body) {
			t.Fatalf("%d bytes counted for a body of %d", m.HeldBytes, len(m.Body))
		}
		if m.Call {
			answer := `{"jsonrpc":"2.0","id":` + string(m.IDText) + `,"result":{}}`
			if id, ok := AnswerID([]byte(answer)); !ok || id != m.ID {
				t.Fatalf("the answer to id %s is keyed %v, the call %v", m.IDText, id, m.ID)
			}
		}
	})
}

// BenchmarkCheck is the checker's cost on a small call and on a 16 MiB
// line of tiny values inside and outside the arguments (the bound on a
// line's cost: its own bytes, no tree).
func BenchmarkCheck(b *testing.B) {
	for _, bb := range []struct{ name, line string }{
		{"small call", toolCall("1", `{"expected_source_digest":"`+strings.Repeat("a", 64)+`"}`, "")},
		{"16 MiB inside arguments", toolCall("1", `{"x":`+tinyValues(MaxLineBytes-200)+`}`, "")},
		{"16 MiB outside arguments", toolCall("1", `{}`, `,"_meta":{"x":`+tinyValues(MaxLineBytes-200)+`}`)},
	} {
		b.Run(bb.name, func(b *testing.B) {
			data := []byte(bb.line)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				Check(data)
			}
		})
	}
}
