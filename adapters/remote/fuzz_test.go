package remote_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/metricproof/metricproof/adapters/oauth"
	"github.com/metricproof/metricproof/adapters/oauth/oauthtest"
	"github.com/metricproof/metricproof/adapters/remote"
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
		Addr: "127.0.0.1:0", MCP: stub, Stderr: &syncBuffer{},
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
	codes := map[int]bool{401: true, 403: true, 404: true, 413: true}
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
		if need := scopeOf([]byte(body)); !strings.Contains(" "+strings.Join(reached.Scopes, " ")+" ", " "+need+" ") {
			t.Fatalf("reached without the scope %s", need)
		}
	})
}
