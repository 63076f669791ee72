package remote_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/metricproof/metricproof/adapters/oauth"
	"github.com/metricproof/metricproof/adapters/oauth/oauthtest"
	"github.com/metricproof/metricproof/adapters/remote"
)

const metadataURL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"

// The matrix of protocol §14's "Who may call", with the Go SDK's client
// against an SDK server behind the front: each bad token is 401 with the
// metadata URL (and invalid_token when a token was sent), each missing
// scope 403 naming it, and a refused request runs nothing.
func TestTheBearerMatrixWithTheSDKClient(t *testing.T) {
	f := start(t, false, nil)
	now := f.iss.Clock.Now()
	claims := func(scope string, change func(map[string]any)) func(*testing.T) string {
		return func(t *testing.T) string {
			c := f.iss.Claims(resource, scope)
			change(c)
			return f.iss.Token(t, c)
		}
	}
	same := func(map[string]any) {}
	both := remote.ScopeRead + " " + remote.ScopeRun
	tests := []struct {
		name   string
		token  func(*testing.T) string
		tool   string
		status int    // of the first refusal; 0 when the call succeeds
		www    string // the WWW-Authenticate header of that refusal
	}{
		{"read and run: inspect_inputs", claims(both, same), "inspect_inputs", 0, ""},
		{"read and run: analyze", claims(both, same), "analyze", 0, ""},
		{"read: verify_result", claims(remote.ScopeRead, same), "verify_result", 0, ""},
		{"no token", func(*testing.T) string { return "" }, "inspect_inputs", 401,
			`Bearer resource_metadata="` + metadataURL + `"`},
		{"expired", claims(both, func(c map[string]any) { c["exp"] = now.Add(-2 * time.Minute).Unix() }), "inspect_inputs", 401,
			`Bearer error="invalid_token", resource_metadata="` + metadataURL + `"`},
		{"not yet valid", claims(both, func(c map[string]any) { c["nbf"] = now.Add(2 * time.Minute).Unix() }), "inspect_inputs", 401,
			`Bearer error="invalid_token", resource_metadata="` + metadataURL + `"`},
		{"wrong issuer", claims(both, func(c map[string]any) { c["iss"] = "https://evil.example" }), "inspect_inputs", 401,
			`Bearer error="invalid_token", resource_metadata="` + metadataURL + `"`},
		{"wrong audience", claims(both, func(c map[string]any) { c["aud"] = "https://other.example.com/mcp" }), "inspect_inputs", 401,
			`Bearer error="invalid_token", resource_metadata="` + metadataURL + `"`},
		{"no aud", claims(both, func(c map[string]any) { delete(c, "aud") }), "inspect_inputs", 401,
			`Bearer error="invalid_token", resource_metadata="` + metadataURL + `"`},
		{"alg none", func(t *testing.T) string {
			return oauthtest.Sign(t, map[string]any{"alg": "none", "kid": f.iss.Current().ID}, f.iss.Claims(resource, both), f.iss.Current())
		}, "analyze", 401, `Bearer error="invalid_token", resource_metadata="` + metadataURL + `"`},
		{"HS256 with the public key's bytes", func(t *testing.T) string {
			k := f.iss.Current()
			return oauthtest.SignHMAC(t, map[string]any{"alg": "HS256", "kid": k.ID}, f.iss.Claims(resource, both), k.PublicPEM(t))
		}, "analyze", 401, `Bearer error="invalid_token", resource_metadata="` + metadataURL + `"`},
		{"read only: analyze", claims(remote.ScopeRead, same), "analyze", 403,
			`Bearer error="insufficient_scope", scope="metricproof:run", resource_metadata="` + metadataURL + `"`},
		{"run only: not even the handshake", claims(remote.ScopeRun, same), "analyze", 403,
			`Bearer error="insufficient_scope", scope="metricproof:read", resource_metadata="` + metadataURL + `"`},
		{"no scope", claims("", same), "inspect_inputs", 403,
			`Bearer error="insufficient_scope", scope="metricproof:read", resource_metadata="` + metadataURL + `"`},
	}
	for _, version := range []string{stateless, handshake} {
		for _, tt := range tests {
			t.Run(version+"/"+tt.name, func(t *testing.T) {
				is := is.New(t)
				ctx := context.Background()
				token := tt.token(t)
				rec := &recorder{token: token}
				before := f.toy.calls.Load()
				cs, err := connect(ctx, f.srv.URL(), version, rec)
				var got seen
				if err == nil {
					got, err = call(ctx, cs, tt.tool)
					cs.Close()
				}
				if tt.status == 0 {
					is.NoErr(err)
					is.Equal(got.Tool, tt.tool)
					is.Equal(*got.Principal, oauth.Principal{Issuer: f.iss.URL, Subject: "alice"}) // the tool saw who called
					is.Equal(f.toy.calls.Load(), before+1)
					return
				}
				is.True(err != nil)
				refused := rec.refusals()
				is.True(len(refused) > 0)
				is.Equal(refused[0].status, tt.status)
				is.Equal(refused[0].header.Values("WWW-Authenticate"), []string{tt.www})
				is.Equal(f.toy.calls.Load(), before) // nothing ran
				for _, ex := range refused {
					is.True(!leaks(ex.body, token)) // no token byte in an answer
					is.True(!leaks(strings.Join(ex.header.Values("WWW-Authenticate"), " "), token))
				}
			})
		}
	}
	is := is.New(t)
	is.Equal(f.stderr.String(), `{"listening":"`+f.srv.URL()+`"}`+"\n") // the one line, nothing of any token
}

// leaks reports whether text holds a part of a token.
func leaks(text, token string) bool {
	for _, p := range strings.Split(token, ".") {
		if len(p) >= 4 && strings.Contains(text, p) {
			return true
		}
	}
	return false
}

// A key the issuer rotates in is fetched once; a second one within the
// minute is not fetched, and its tokens are 401 until the minute is past.
func TestARotatedKeyOverHTTP(t *testing.T) {
	is := is.New(t)
	f := start(t, false, nil)
	ctx := context.Background()
	both := remote.ScopeRead + " " + remote.ScopeRun
	use := func() error {
		cs, err := connect(ctx, f.srv.URL(), stateless, &recorder{token: f.token(t, both)})
		if err != nil {
			return err
		}
		defer cs.Close()
		_, err = call(ctx, cs, "analyze")
		return err
	}
	is.NoErr(use())
	is.Equal(f.iss.Fetches(), 1)
	f.iss.Clock.Advance(oauth.RefreshInterval)
	f.iss.Rotate(t, "ES256")
	is.NoErr(use()) // unknown kid: one refresh
	is.Equal(f.iss.Fetches(), 2)
	f.iss.Rotate(t, "EdDSA")
	is.True(use() != nil) // a second unknown kid within the minute
	is.Equal(f.iss.Fetches(), 2)
	f.iss.Clock.Advance(oauth.RefreshInterval)
	is.NoErr(use())
	is.Equal(f.iss.Fetches(), 3)
}

// Without authorization (loopback only) the tool sees no principal.
func TestWithoutAuthorizationThePrincipalIsNull(t *testing.T) {
	for _, version := range []string{stateless, handshake} {
		t.Run(version, func(t *testing.T) {
			is := is.New(t)
			f := start(t, true, nil)
			cs, err := connect(context.Background(), f.srv.URL(), version, &recorder{})
			is.NoErr(err)
			defer cs.Close()
			got, err := call(context.Background(), cs, "analyze")
			is.NoErr(err)
			is.True(got.Principal == nil)
			res, err := http.Get(strings.Replace(f.srv.URL(), remote.PathMCP, remote.PathMetadata, 1))
			is.NoErr(err)
			res.Body.Close()
			is.Equal(res.StatusCode, http.StatusNotFound) // no metadata without authorization
		})
	}
}

// The RFC 9728 document, served to anyone, without CORS headers unless an
// origin is allowed.
func TestTheProtectedResourceMetadata(t *testing.T) {
	is := is.New(t)
	f := start(t, false, nil)
	res, err := http.Get(strings.Replace(f.srv.URL(), remote.PathMCP, remote.PathMetadata, 1))
	is.NoErr(err)
	defer res.Body.Close()
	is.Equal(res.StatusCode, http.StatusOK)
	is.Equal(res.Header.Get("Content-Type"), "application/json")
	is.Equal(res.Header.Get("Access-Control-Allow-Origin"), "")
	var doc map[string]any
	is.NoErr(json.NewDecoder(res.Body).Decode(&doc))
	is.Equal(doc, map[string]any{
		"resource":                 resource,
		"authorization_servers":    []any{f.iss.URL},
		"scopes_supported":         []any{"metricproof:read", "metricproof:run"},
		"bearer_methods_supported": []any{"header"},
		"resource_name":            "metricproof",
	})
	// The SDK's client reads it as the MCP authorization specification does.
	got, err := oauthex.GetProtectedResourceMetadata(context.Background(), "https://mcp.example.com/.well-known/oauth-protected-resource/mcp", resource,
		&http.Client{Transport: &redirect{to: f.srv.URL()}})
	is.NoErr(err)
	is.Equal(got.AuthorizationServers, []string{f.iss.URL})
}

// redirect sends every request to the test server, keeping its path: the
// SDK's metadata client insists on https, which the test server lacks.
type redirect struct{ to string }

func (r *redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	base := strings.TrimSuffix(r.to, remote.PathMCP)
	u := base + req.URL.Path
	out, err := http.NewRequestWithContext(req.Context(), req.Method, u, nil)
	if err != nil {
		return nil, err
	}
	return http.DefaultTransport.RoundTrip(out)
}

// The forms of the Authorization header: one bearer token, its scheme in
// any case, after one or more spaces; anything else is 401.
func TestTheAuthorizationHeader(t *testing.T) {
	f := start(t, false, nil)
	valid := f.token(t, remote.ScopeRead)
	tests := []struct {
		name    string
		headers []string
		query   string
		status  int
		www     string
	}{
		{"Bearer", []string{"Bearer " + valid}, "", 200, ""},
		{"bearer in lower case", []string{"bearer " + valid}, "", 200, ""},
		{"two spaces", []string{"Bearer  " + valid}, "", 200, ""},
		{"Basic", []string{"Basic dXNlcjpwYXNz"}, "", 401, `Bearer error="invalid_token", resource_metadata="` + metadataURL + `"`},
		{"Bearer alone", []string{"Bearer"}, "", 401, `Bearer error="invalid_token", resource_metadata="` + metadataURL + `"`},
		{"two tokens", []string{"Bearer " + valid + " " + valid}, "", 401, `Bearer error="invalid_token", resource_metadata="` + metadataURL + `"`},
		{"two headers", []string{"Bearer " + valid, "Bearer " + valid}, "", 401, `Bearer error="invalid_token", resource_metadata="` + metadataURL + `"`},
		{"a token in the query", nil, "?access_token=" + valid, 401, `Bearer resource_metadata="` + metadataURL + `"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			req, err := http.NewRequest(http.MethodPost, f.srv.URL()+tt.query, strings.NewReader(initialize))
			is.NoErr(err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for _, h := range tt.headers {
				req.Header.Add("Authorization", h)
			}
			res, err := http.DefaultClient.Do(req)
			is.NoErr(err)
			defer res.Body.Close()
			is.Equal(res.StatusCode, tt.status)
			is.Equal(res.Header.Get("WWW-Authenticate"), tt.www)
		})
	}
}
