package remote_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/remote"
)

// A token with the read scope alone never runs analyze, however the call
// is framed. The scope used to be asked of the body's bytes, which the
// tests' scope function (as the glue would) read with encoding/json: a
// batch, which it cannot read as an object, or a "Name" beside "name"
// (encoding/json matches either, the SDK only the second) made it ask for
// read while the SDK behind ran analyze. The front now reads the method
// and tool as the SDK does and refuses a body it cannot read so.
func TestAReadTokenNeverRunsAnalyzeWhateverTheFraming(t *testing.T) {
	f := start(t, false, nil)
	token := f.token(t, remote.ScopeRead)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","arguments":{}}}`
	tests := []struct {
		name, body string
		version    string // Mcp-Protocol-Version; none by default
		status     int
		code       string
	}{
		{"a batch of one", "[" + call + "]", "", 400, "bad_body"},
		{"a batch after whitespace", " \r\n\t[" + call + "]", "", 400, "bad_body"},
		{"a batch of two, analyze second", `[{"jsonrpc":"2.0","id":2,"method":"tools/list"},` + call + "]", "", 400, "bad_body"},
		{"a batch with the old protocol's header", "[" + call + "]", "2025-03-26", 400, "bad_body"},
		{"the name twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"inspect_inputs","name":"analyze","arguments":{}}}`, "", 400, "bad_body"},
		{"the name twice, one escaped", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","n\u0061me":"inspect_inputs","arguments":{}}}`, "", 400, "bad_body"},
		{"a name twice in the arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","arguments":{"a":1,"a":2}}}`, "", 400, "bad_body"},
		{"the name in another case second", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","Name":"inspect_inputs","arguments":{}}}`, "", 403, "insufficient_scope"},
		{"the method in another case second", `{"jsonrpc":"2.0","id":1,"method":"tools/call","Method":"tools/list","params":{"name":"analyze","arguments":{}}}`, "", 403, "insufficient_scope"},
		{"params in another case second", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","arguments":{}},"Params":{"name":"inspect_inputs"}}`, "", 403, "insufficient_scope"},
		{"a lone surrogate in the name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze\ud800","arguments":{}}}`, "", 400, "bad_body"},
		{"a byte order mark first", "\ufeff" + call, "", 400, "bad_body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			headers := map[string]string{"Authorization": "Bearer " + token}
			if tt.version != "" {
				headers["Mcp-Protocol-Version"] = tt.version
			}
			before := f.toy.calls.Load()
			res := post(t, f, headers, strings.NewReader(tt.body), int64(len(tt.body)))
			is.Equal(res.StatusCode, tt.status)
			is.Equal(errorOf(t, res), tt.code)
			is.Equal(f.toy.calls.Load(), before) // nothing ran
		})
	}
	t.Run("the same call, one message, with the read scope and with both", func(t *testing.T) {
		is := is.New(t)
		before := f.toy.calls.Load()
		res := post(t, f, map[string]string{"Authorization": "Bearer " + token}, strings.NewReader(call), int64(len(call)))
		is.Equal(res.StatusCode, http.StatusForbidden)
		both := f.token(t, remote.ScopeRead+" "+remote.ScopeRun)
		res = post(t, f, map[string]string{"Authorization": "Bearer " + both}, strings.NewReader(call), int64(len(call)))
		is.Equal(res.StatusCode, http.StatusOK)
		is.Equal(f.toy.calls.Load(), before+1) // analyze ran once, for the token that may run it
	})
}
