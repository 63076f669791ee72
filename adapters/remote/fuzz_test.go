package remote_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/metricproof/metricproof/adapters/oauth"
	"github.com/metricproof/metricproof/adapters/oauth/oauthtest"
	"github.com/metricproof/metricproof/adapters/remote"
	"github.com/metricproof/metricproof/internal/testutil"
)

// FuzzFront sends requests with arbitrary Host, Origin, Authorization and
// body to the front (in process, a stub behind it): a request reaches the
// handler behind only with a served Host, no Origin or the allowed one, and
// a verified token with the scope its body needs, and then carries the
// token's principal; any other is refused with one of the front's codes;
// no answer holds the token.
func FuzzFront(f *testing.F) {
	clock := oauthtest.NewClock()
	iss := oauthtest.New(f, clock)
	v, err := oauth.New(context.Background(), oauth.Config{Issuer: iss.URL, Audience: resource, AllowHTTP: true, Clock: clock})
	if err != nil {
		f.Fatal(err)
	}
	var reached *auth.TokenInfo
	stub := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = auth.TokenInfoFromContext(r.Context())
		if reached == nil {
			reached = &auth.TokenInfo{} // reached without a token
		}
	})
	srv, err := remote.Listen(remote.Options{
		Addr: "127.0.0.1:0", MCP: stub, Stderr: &testutil.SyncBuffer{}, Read: readBody,
		AllowedHosts: []string{"mcp.example.com"}, AllowedOrigins: []string{"https://app.example.com"},
		Auth: &remote.Auth{Issuer: iss.URL, Resource: resource, Verify: v.Verify, Scope: scopeOf},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = srv.Serve(ctx)
	})
	read := iss.Token(f, iss.Claims(resource, remote.ScopeRead))
	f.Add("127.0.0.1", "", "Bearer "+read, initialize)
	f.Add("mcp.example.com", "https://app.example.com", "Bearer "+read, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"analyze"}}`)
	f.Add("evil.example", "", "Bearer "+read, initialize)
	f.Add("localhost", "null", "", "")
	f.Add("[::1]:1", "https://app.example.com", "bearer  x", "{")
	f.Add("mcp.example.com", "", "Basic dXNlcjpwYXNz", initialize)
	for _, body := range []string{ // the framings that once ran analyze on a read token
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze"}}]`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","Name":"inspect_inputs"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"inspect_inputs","name":"analyze"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze"},"Params":{"name":"inspect_inputs"}}`,
	} {
		f.Add("127.0.0.1", "", "Bearer "+read, body)
	}
	codes := map[int]bool{400: true, 401: true, 403: true, 404: true, 413: true}
	f.Fuzz(func(t *testing.T, host, origin, authorization, body string) {
		req := httptest.NewRequest(http.MethodPost, remote.PathMCP, strings.NewReader(body))
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		reached = nil
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		token, _ := strings.CutPrefix(authorization, "Bearer ")
		if len(token) >= 24 && (strings.Contains(rec.Body.String(), token) || strings.Contains(strings.Join(rec.Header().Values("WWW-Authenticate"), ","), token)) {
			t.Fatalf("the answer holds the token")
		}
		served := map[string]bool{"127.0.0.1": true, "localhost": true, "::1": true, "mcp.example.com": true}
		if reached == nil {
			if !codes[rec.Code] {
				t.Fatalf("refused with %d", rec.Code)
			}
			return
		}
		name := strings.ToLower(strings.TrimSuffix(host, "."))
		if h, _, ok := strings.Cut(name, "]"); ok && strings.HasPrefix(h, "[") {
			name = h[1:]
		} else if i := strings.LastIndexByte(name, ':'); i >= 0 && !strings.Contains(name[:i], ":") {
			name = strings.TrimSuffix(name[:i], ".")
		}
		if !served[name] {
			t.Fatalf("host %q reached the handler", host)
		}
		if origin != "" && strings.ToLower(origin) != "https://app.example.com" {
			t.Fatalf("origin %q reached the handler", origin)
		}
		p, ok := oauth.PrincipalOf(reached)
		if !ok || p.Issuer != iss.URL {
			t.Fatalf("reached without a verified token")
		}
		method, tool, ok := sdkReading(body)
		if !ok {
			t.Fatalf("a body the SDK cannot read as one message reached the handler")
		}
		if need := scopeOf(method, tool); !strings.Contains(" "+strings.Join(reached.Scopes, " ")+" ", " "+need+" ") {
			t.Fatalf("reached without the scope %s", need)
		}
	})
}

// sdkReading is the method and tool of a body as the SDK reads it: its own
// decoder of one JSON-RPC message, and the exact key "name" of the params
// (the SDK matches member names case-sensitively). ok is false for a body
// it does not read as one request.
func sdkReading(body string) (method, tool string, ok bool) {
	msg, err := jsonrpc.DecodeMessage([]byte(body))
	if err != nil {
		return "", "", false
	}
	req, isReq := msg.(*jsonrpc.Request)
	if !isReq {
		return "", "", true // a response: no call
	}
	if req.Method == "tools/call" {
		var params map[string]json.RawMessage
		if json.Unmarshal(req.Params, &params) == nil {
			_ = json.Unmarshal(params["name"], &tool)
		}
	}
	return req.Method, tool, true
}
