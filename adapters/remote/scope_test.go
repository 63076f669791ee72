package remote_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/metricproof/metricproof/adapters/remote"
)

// A token with the read scope alone never runs analyze, however the call
// is framed. The scope used to be asked of the body's bytes, which the
// tests' scope function (as the glue would) read with encoding/json: a
// batch, which it cannot read as an object, or a "Name" beside "name"
// (encoding/json matches either, the SDK only the second) made it ask for
// read while the SDK behind ran analyze. The front now decides on the
// method and tool its reader (Options.Read) gives, and answers the
// reader's refusal of a body that could be read two ways, before the
// scope. The reader here is the tests'; the MCP adapter's tests run the
// same framings through the server's own.
func TestAReadTokenNeverRunsAnalyzeWhateverTheFraming(t *testing.T) {
	f := start(t, false, nil)
	token := f.token(t, remote.ScopeRead)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","arguments":{}}}`
	tests := []struct {
		name, body string
		version    string // Mcp-Protocol-Version; none by default
		status     int
		code       string // the front's error; "" for the reader's JSON-RPC error
	}{
		{"a batch of one", "[" + call + "]", "", 400, ""},
		{"a batch after whitespace", " \r\n\t[" + call + "]", "", 400, ""},
		{"a batch of two, analyze second", `[{"jsonrpc":"2.0","id":2,"method":"tools/list"},` + call + "]", "", 400, ""},
		{"a batch with the old protocol's header", "[" + call + "]", "2025-03-26", 400, ""},
		{"the name twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"inspect_inputs","name":"analyze","arguments":{}}}`, "", 400, ""},
		{"the name twice, one escaped", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","n\u0061me":"inspect_inputs","arguments":{}}}`, "", 400, ""},
		{"the name in another case second", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","Name":"inspect_inputs","arguments":{}}}`, "", 403, "insufficient_scope"},
		{"the method in another case second", `{"jsonrpc":"2.0","id":1,"method":"tools/call","Method":"tools/list","params":{"name":"analyze","arguments":{}}}`, "", 403, "insufficient_scope"},
		{"params in another case second", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","arguments":{}},"Params":{"name":"inspect_inputs"}}`, "", 403, "insufficient_scope"},
		{"a lone surrogate in the name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze\ud800","arguments":{}}}`, "", 400, ""},
		{"a byte order mark first", "\ufeff" + call, "", 400, ""},
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
			if tt.code == "" { // the reader's refusal, as it gave it
				is.Equal(res.Header.Get("Content-Type"), "application/json")
				body, err := io.ReadAll(res.Body)
				is.NoErr(err)
				is.Equal(string(body), refusal)
			} else {
				is.Equal(errorOf(t, res), tt.code)
			}
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

// A scope decided on no reading of the body would be decided on nothing:
// Listen refuses an Auth.Scope without Options.Read.
func TestAScopeNeedsAReader(t *testing.T) {
	tests := []struct {
		name string
		read func([]byte) (remote.Reading, []byte)
		ok   bool
	}{
		{"no reader", nil, false},
		{"a reader", readBody, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			verify := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
				return nil, auth.ErrInvalidToken
			}
			srv, err := remote.Listen(remote.Options{Addr: "127.0.0.1:0", MCP: http.NotFoundHandler(), Stderr: io.Discard, Read: tt.read,
				Auth: &remote.Auth{Issuer: "http://127.0.0.1:1", Resource: resource, Verify: verify, Scope: scopeOf}})
			is.Equal(err == nil, tt.ok)
			if srv != nil {
				is.NoErr(srv.Close())
			}
		})
	}
}

// What the front's reader read of a POST body goes on with the request to
// the handler behind (Checked), which then need not read the body again;
// a request whose body no reader read carries nothing.
func TestTheReadingGoesOnToTheHandler(t *testing.T) {
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	tests := []struct {
		name, method string
		read         func([]byte) (remote.Reading, []byte)
		want         any
	}{
		{"a POST read", http.MethodPost, readBody, ping},
		{"a POST with no reader", http.MethodPost, nil, nil},
		{"a GET", http.MethodGet, readBody, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got := make(chan any, 1)
			mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				v, ok := remote.Checked(r)
				is.Equal(ok, v != nil)
				got <- v
			})
			srv, err := remote.Listen(remote.Options{Addr: "127.0.0.1:0", MCP: mcp, Stderr: io.Discard, Read: tt.read})
			is.NoErr(err)
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ctx) }()
			t.Cleanup(func() { cancel(); <-served })
			req, err := http.NewRequest(tt.method, srv.URL(), strings.NewReader(ping))
			is.NoErr(err)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			is.NoErr(err)
			body, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			select {
			case v := <-got:
				is.Equal(v, tt.want)
			default:
				t.Fatalf("the handler was not reached: %d %s", res.StatusCode, body)
			}
		})
	}
}
