package oauth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/metricproof/metricproof/adapters/oauth"
	"github.com/metricproof/metricproof/adapters/oauth/oauthtest"
)

const audience = "http://127.0.0.1:8080/mcp"

// newVerifier starts a test issuer and a verifier that discovers its keys.
func newVerifier(t *testing.T) (*oauth.Verifier, *oauthtest.Issuer) {
	t.Helper()
	clock := oauthtest.NewClock()
	iss := oauthtest.New(t, clock)
	v, err := oauth.New(context.Background(), oauth.Config{Issuer: iss.URL, Audience: audience, AllowHTTP: true, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return v, iss
}

// reasonOf is the reason of a refusal, "" for none.
func reasonOf(t *testing.T, err error) oauth.Reason {
	t.Helper()
	if err == nil {
		return ""
	}
	var f *oauth.Fault
	if !errors.As(err, &f) {
		t.Fatalf("not a Fault: %v", err)
	}
	if !errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("a Fault that is not auth.ErrInvalidToken: %v", err)
	}
	return f.Reason
}

// leaks reports whether text holds any part of a token.
func leaks(text, token string) bool {
	for _, p := range strings.Split(token, ".") {
		if len(p) >= 4 && strings.Contains(text, p) {
			return true
		}
	}
	return false
}

// Every refusal of the matrix, each from one claim or header changed.
func TestTheVerifierRefusesEveryBadToken(t *testing.T) {
	v, iss := newVerifier(t)
	now := iss.Clock.Now()
	with := func(change func(c map[string]any)) func(*testing.T) string {
		return func(t *testing.T) string {
			c := iss.Claims(audience, "metricproof:read")
			change(c)
			return iss.Token(t, c)
		}
	}
	signed := func(header map[string]any) func(*testing.T) string {
		return func(t *testing.T) string {
			return oauthtest.Sign(t, header, iss.Claims(audience, "metricproof:read"), iss.Current())
		}
	}
	tests := []struct {
		name  string
		token func(*testing.T) string
		want  oauth.Reason
	}{
		{"a valid token", with(func(map[string]any) {}), ""},
		{"aud as an array naming this server", with(func(c map[string]any) { c["aud"] = []string{"https://other.example", audience} }), ""},
		{"aud with a trailing slash", with(func(c map[string]any) { c["aud"] = audience + "/" }), ""},
		{"expired within the leeway", with(func(c map[string]any) { c["exp"] = now.Add(-59 * time.Second).Unix() }), ""},
		{"nbf within the leeway", with(func(c map[string]any) { c["nbf"] = now.Add(59 * time.Second).Unix() }), ""},
		{"no kid: tried against every key", signed(map[string]any{"alg": "RS256"}), ""},
		{"no aud", with(func(c map[string]any) { delete(c, "aud") }), oauth.ReasonAudience},
		{"an empty aud array", with(func(c map[string]any) { c["aud"] = []string{} }), oauth.ReasonAudience},
		{"another audience", with(func(c map[string]any) { c["aud"] = "http://127.0.0.1:8080/other" }), oauth.ReasonAudience},
		{"another audience's prefix", with(func(c map[string]any) { c["aud"] = "http://127.0.0.1:8080" }), oauth.ReasonAudience},
		{"aud that is a number", with(func(c map[string]any) { c["aud"] = 7 }), oauth.ReasonMalformed},
		{"another issuer", with(func(c map[string]any) { c["iss"] = "https://evil.example" }), oauth.ReasonIssuer},
		{"no issuer", with(func(c map[string]any) { delete(c, "iss") }), oauth.ReasonIssuer},
		{"the issuer with a trailing slash", with(func(c map[string]any) { c["iss"] = iss.URL + "/" }), oauth.ReasonIssuer},
		{"no exp", with(func(c map[string]any) { delete(c, "exp") }), oauth.ReasonNoExpiry},
		{"expired past the leeway", with(func(c map[string]any) { c["exp"] = now.Add(-61 * time.Second).Unix() }), oauth.ReasonExpired},
		{"not valid yet", with(func(c map[string]any) { c["nbf"] = now.Add(61 * time.Second).Unix() }), oauth.ReasonNotYetValid},
		{"issued in the future", with(func(c map[string]any) { c["iat"] = now.Add(61 * time.Second).Unix() }), oauth.ReasonNotYetValid},
		{"no subject", with(func(c map[string]any) { delete(c, "sub") }), oauth.ReasonNoSubject},
		{"a subject past OpenID's 255", with(func(c map[string]any) { c["sub"] = strings.Repeat("s", 256) }), oauth.ReasonLongSubject},
		{"scope that is a number", with(func(c map[string]any) { c["scope"] = 1 }), oauth.ReasonMalformed},
		{"alg none", func(t *testing.T) string {
			return oauthtest.Sign(t, map[string]any{"alg": "none", "kid": iss.Current().ID}, iss.Claims(audience, "metricproof:run"), iss.Current())
		}, oauth.ReasonAlgorithm},
		{"alg none without a signature part", func(t *testing.T) string {
			tok := oauthtest.Sign(t, map[string]any{"alg": "none"}, iss.Claims(audience, "metricproof:run"), iss.Current())
			return strings.TrimSuffix(tok, ".")
		}, oauth.ReasonMalformed},
		{"HS256 signed with the public key's PEM", func(t *testing.T) string {
			k := iss.Current()
			return oauthtest.SignHMAC(t, map[string]any{"alg": "HS256", "kid": k.ID}, iss.Claims(audience, "metricproof:run"), k.PublicPEM(t))
		}, oauth.ReasonAlgorithm},
		{"HS256 signed with the published JWK", func(t *testing.T) string {
			k := iss.Current()
			return oauthtest.SignHMAC(t, map[string]any{"alg": "HS256", "kid": k.ID}, iss.Claims(audience, "metricproof:run"), iss.JWKS())
		}, oauth.ReasonAlgorithm},
		{"an algorithm the key does not declare", func(t *testing.T) string {
			es := oauthtest.New(t, iss.Clock).Rotate(t, "ES256")
			return oauthtest.Sign(t, map[string]any{"alg": "ES256", "kid": "key-1"}, iss.Claims(audience, ""), es)
		}, oauth.ReasonAlgorithm},
		{"a signature of another key", func(t *testing.T) string {
			other := oauthtest.New(t, iss.Clock)
			return oauthtest.Sign(t, map[string]any{"alg": "RS256", "kid": iss.Current().ID}, iss.Claims(audience, "metricproof:read"), other.Current())
		}, oauth.ReasonSignature},
		{"a claim changed after signing", func(t *testing.T) string {
			tok := iss.Token(t, iss.Claims(audience, "metricproof:read"))
			parts := strings.Split(tok, ".")
			parts[1] = strings.Split(iss.Token(t, iss.Claims(audience, "metricproof:run")), ".")[1]
			return strings.Join(parts, ".")
		}, oauth.ReasonSignature},
		{"an unknown kid", signed(map[string]any{"alg": "RS256", "kid": "nobody"}), oauth.ReasonUnknownKey},
		{"not a JWT", func(*testing.T) string { return "not-a-token" }, oauth.ReasonMalformed},
		{"empty", func(*testing.T) string { return "" }, oauth.ReasonMalformed},
		{"a JWE-like five parts", func(*testing.T) string { return "a.b.c.d.e" }, oauth.ReasonMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			token := tt.token(t)
			ti, err := v.Verify(context.Background(), token, nil)
			is.Equal(reasonOf(t, err), tt.want)
			if tt.want != "" {
				is.True(ti == nil)
				is.True(!leaks(err.Error(), token)) // no token byte in the error
				return
			}
			p, ok := oauth.PrincipalOf(ti)
			is.True(ok)
			is.Equal(p, oauth.Principal{Issuer: iss.URL, Subject: "alice"})
			is.Equal(ti.Scopes, []string{"metricproof:read"})
			is.Equal(ti.UserID, "alice")
		})
	}
}

func TestScopesAreReadFromScopeOrScp(t *testing.T) {
	v, iss := newVerifier(t)
	tests := []struct {
		name string
		set  func(c map[string]any)
		want []string
	}{
		{"scope, space-separated", func(c map[string]any) { c["scope"] = "metricproof:read  metricproof:run" }, []string{"metricproof:read", "metricproof:run"}},
		{"scp as a string", func(c map[string]any) { delete(c, "scope"); c["scp"] = "metricproof:run" }, []string{"metricproof:run"}},
		{"scp as an array", func(c map[string]any) { delete(c, "scope"); c["scp"] = []string{"metricproof:read"} }, []string{"metricproof:read"}},
		{"neither", func(c map[string]any) { delete(c, "scope") }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c := iss.Claims(audience, "")
			tt.set(c)
			ti, err := v.Verify(context.Background(), iss.Token(t, c), nil)
			is.NoErr(err)
			is.Equal(ti.Scopes, tt.want)
		})
	}
}

func TestEveryAlgorithmOfTheIssuersKeysVerifies(t *testing.T) {
	v, iss := newVerifier(t)
	iss.Clock.Advance(oauth.RefreshInterval)
	for _, alg := range []string{"ES256", "EdDSA"} {
		t.Run(alg, func(t *testing.T) {
			is := is.New(t)
			iss.Clock.Advance(oauth.RefreshInterval)
			iss.Rotate(t, alg)
			_, err := v.Verify(context.Background(), iss.Token(t, iss.Claims(audience, "metricproof:read")), nil)
			is.NoErr(err)
		})
	}
}

// A rotated key is fetched once; a second unknown kid within the minute
// fetches nothing; past the minute it is fetched again.
func TestAnUnknownKidRefreshesTheKeySetAtMostOncePerMinute(t *testing.T) {
	is := is.New(t)
	v, iss := newVerifier(t)
	ctx := context.Background()
	is.Equal(iss.Fetches(), 1) // at start

	// Within the minute after start, a new key is not fetched.
	iss.Rotate(t, "ES256")
	tok := iss.Token(t, iss.Claims(audience, "metricproof:read"))
	_, err := v.Verify(ctx, tok, nil)
	is.Equal(reasonOf(t, err), oauth.ReasonUnknownKey)
	is.Equal(iss.Fetches(), 1)

	iss.Clock.Advance(oauth.RefreshInterval)
	_, err = v.Verify(ctx, iss.Token(t, iss.Claims(audience, "metricproof:read")), nil)
	is.NoErr(err) // one refresh took the rotated key
	is.Equal(iss.Fetches(), 2)

	iss.Clock.Advance(30 * time.Second)
	iss.Rotate(t, "RS256")
	tok = iss.Token(t, iss.Claims(audience, "metricproof:read"))
	_, err = v.Verify(ctx, tok, nil)
	is.Equal(reasonOf(t, err), oauth.ReasonUnknownKey)
	_, err = v.Verify(ctx, oauthtest.Sign(t, map[string]any{"alg": "RS256", "kid": "invented"}, iss.Claims(audience, ""), iss.Current()), nil)
	is.Equal(reasonOf(t, err), oauth.ReasonUnknownKey)
	is.Equal(iss.Fetches(), 2) // no second fetch within the minute

	iss.Clock.Advance(30 * time.Second)
	_, err = v.Verify(ctx, tok, nil)
	is.NoErr(err)
	is.Equal(iss.Fetches(), 3)
	_, err = v.Verify(ctx, iss.Token(t, iss.Claims(audience, "")), nil)
	is.NoErr(err) // a known kid fetches nothing
	is.Equal(iss.Fetches(), 3)
}

func TestManyTokensWithOneNewKidMakeOneFetch(t *testing.T) {
	is := is.New(t)
	v, iss := newVerifier(t)
	iss.Clock.Advance(oauth.RefreshInterval)
	iss.Rotate(t, "EdDSA")
	tok := iss.Token(t, iss.Claims(audience, "metricproof:read"))
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			_, err := v.Verify(context.Background(), tok, nil)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		is.NoErr(err)
	}
	is.Equal(iss.Fetches(), 2)
}

func TestAKeySetFromAFileIsNeverFetched(t *testing.T) {
	is := is.New(t)
	clock := oauthtest.NewClock()
	iss := oauthtest.New(t, clock)
	file := filepath.Join(t.TempDir(), "jwks.json")
	is.NoErr(os.WriteFile(file, iss.JWKS(), 0o644))
	v, err := oauth.New(context.Background(), oauth.Config{Issuer: iss.URL, Audience: audience, JWKSFile: file, AllowHTTP: true, Clock: clock})
	is.NoErr(err)
	_, err = v.Verify(context.Background(), iss.Token(t, iss.Claims(audience, "metricproof:read")), nil)
	is.NoErr(err)
	clock.Advance(oauth.RefreshInterval)
	iss.Rotate(t, "ES256")
	_, err = v.Verify(context.Background(), iss.Token(t, iss.Claims(audience, "metricproof:read")), nil)
	is.Equal(reasonOf(t, err), oauth.ReasonUnknownKey)
	is.Equal(iss.Fetches(), 0)
}

func TestDiscoveryFallsBackToOpenIDConfiguration(t *testing.T) {
	is := is.New(t)
	clock := oauthtest.NewClock()
	iss := oauthtest.New(t, clock)
	iss.SetMetadata(nil, "/.well-known/oauth-authorization-server")
	v, err := oauth.New(context.Background(), oauth.Config{Issuer: iss.URL, Audience: audience, AllowHTTP: true, Clock: clock})
	is.NoErr(err)
	_, err = v.Verify(context.Background(), iss.Token(t, iss.Claims(audience, "")), nil)
	is.NoErr(err)
}

// Each option fault is an *OptionError naming its option, and says no
// path.
func TestBadOptionsAreRefusedAtStart(t *testing.T) {
	clock := oauthtest.NewClock()
	iss := oauthtest.New(t, clock)
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	smallSet, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: small.Public(), KeyID: "k"}}})
	privateSet, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: small, KeyID: "k"}}})
	var good map[string]any
	if err := json.Unmarshal(iss.JWKS(), &good); err != nil {
		t.Fatal(err)
	}
	good["keys"] = append([]any{map[string]any{"kty": "OKP", "crv": "X448", "x": "AA"}}, good["keys"].([]any)...)
	withUnknown, _ := json.Marshal(good)

	tests := []struct {
		name   string
		cfg    oauth.Config
		option string // "" when it starts
		setup  func()
	}{
		{"an http issuer off loopback", oauth.Config{Issuer: iss.URL, Audience: audience}, "--auth-issuer", nil},
		{"an issuer that is no URL", oauth.Config{Issuer: "issuer", Audience: audience, AllowHTTP: true}, "--auth-issuer", nil},
		{"an issuer with a query", oauth.Config{Issuer: iss.URL + "?a=b", Audience: audience, AllowHTTP: true}, "--auth-issuer", nil},
		{"an ftp issuer", oauth.Config{Issuer: "ftp://x.example", Audience: audience, AllowHTTP: true}, "--auth-issuer", nil},
		{"an issuer longer than a record holds", oauth.Config{Issuer: "https://x.example/" + strings.Repeat("a", 2031), Audience: audience, AllowHTTP: true, JWKSFile: file("long", string(iss.JWKS()))}, "--auth-issuer", nil},
		{"an issuer as long as a record holds", oauth.Config{Issuer: "https://x.example/" + strings.Repeat("a", 2030), Audience: audience, AllowHTTP: true, JWKSFile: file("long", string(iss.JWKS()))}, "", nil},
		{"no audience", oauth.Config{Issuer: iss.URL, AllowHTTP: true}, "--auth-audience", nil},
		{"an audience with a quote", oauth.Config{Issuer: iss.URL, Audience: `http://a"b/mcp`, AllowHTTP: true}, "--auth-audience", nil},
		{"an unreachable issuer", oauth.Config{Issuer: "http://127.0.0.1:1", Audience: audience, AllowHTTP: true}, "--auth-issuer", nil},
		{"no metadata at all", oauth.Config{Issuer: iss.URL, Audience: audience, AllowHTTP: true}, "--auth-issuer", func() {
			iss.SetMetadata(nil, "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")
		}},
		{"metadata of another issuer", oauth.Config{Issuer: iss.URL, Audience: audience, AllowHTTP: true}, "--auth-issuer", func() {
			iss.SetMetadata(map[string]any{"issuer": "https://other.example"})
		}},
		{"a jwks_uri that is not https", oauth.Config{Issuer: iss.URL, Audience: audience, AllowHTTP: true}, "--auth-issuer", func() {
			iss.SetMetadata(map[string]any{"jwks_uri": "ftp://x.example/jwks"})
		}},
		{"a missing key file", oauth.Config{Issuer: iss.URL, Audience: audience, AllowHTTP: true, JWKSFile: filepath.Join(dir, "none")}, "--auth-jwks", nil},
		{"a key file that is not JSON", oauth.Config{Issuer: iss.URL, Audience: audience, AllowHTTP: true, JWKSFile: file("a", "{")}, "--auth-jwks", nil},
		{"a key file without keys", oauth.Config{Issuer: iss.URL, Audience: audience, AllowHTTP: true, JWKSFile: file("b", `{"keys":null}`)}, "--auth-jwks", nil},
		{"a symmetric key", oauth.Config{Issuer: iss.URL, Audience: audience, AllowHTTP: true, JWKSFile: file("c", `{"keys":[{"kty":"oct","k":"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"}]}`)}, "--auth-jwks", nil},
		{"a private key", oauth.Config{Issuer: iss.URL, Audience: audience, AllowHTTP: true, JWKSFile: file("d", string(privateSet))}, "--auth-jwks", nil},
		{"a 1024-bit RSA key only", oauth.Config{Issuer: iss.URL, Audience: audience, AllowHTTP: true, JWKSFile: file("e", string(smallSet))}, "--auth-jwks", nil},
		{"encryption keys only", oauth.Config{Issuer: iss.URL, Audience: audience, AllowHTTP: true, JWKSFile: file("f", strings.ReplaceAll(string(iss.JWKS()), `"use":"sig"`, `"use":"enc"`))}, "--auth-jwks", nil},
		{"an unknown key type beside a good key", oauth.Config{Issuer: iss.URL, Audience: audience, AllowHTTP: true, JWKSFile: file("g", string(withUnknown))}, "", nil},
		{"a key file larger than 1 MiB", oauth.Config{Issuer: iss.URL, Audience: audience, AllowHTTP: true, JWKSFile: file("h", `{"keys":[`+strings.Repeat(" ", 1<<20)+`]}`)}, "--auth-jwks", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			iss.SetMetadata(nil)
			if tt.setup != nil {
				tt.setup()
			}
			tt.cfg.Clock = clock
			_, err := oauth.New(context.Background(), tt.cfg)
			if tt.option == "" {
				is.NoErr(err)
				return
			}
			var oe *oauth.OptionError
			is.True(errors.As(err, &oe))
			is.Equal(oe.Option, tt.option)
			is.True(strings.HasPrefix(err.Error(), tt.option+" "))
			is.True(!strings.Contains(err.Error(), dir)) // no path
		})
	}
}

// The verifier names the one TCP port it may still connect to once the
// server is confined (protocol §16): its key set's, when it fetches it
// from the issuer's metadata; none when the key set is a file.
func TestTheVerifierNamesThePortItFetchesKeysFrom(t *testing.T) {
	is := is.New(t)
	clock := oauthtest.NewClock()
	iss := oauthtest.New(t, clock)
	v, err := oauth.New(context.Background(), oauth.Config{Issuer: iss.URL, Audience: audience, AllowHTTP: true, Clock: clock})
	is.NoErr(err)
	u, err := url.Parse(iss.URL)
	is.NoErr(err)
	want, err := strconv.Atoi(u.Port())
	is.NoErr(err)
	port, fetches := v.FetchPort()
	is.True(fetches)
	is.Equal(int(port), want)

	file := filepath.Join(t.TempDir(), "jwks.json")
	is.NoErr(os.WriteFile(file, iss.JWKS(), 0o644))
	v, err = oauth.New(context.Background(), oauth.Config{Issuer: iss.URL, Audience: audience, JWKSFile: file, AllowHTTP: true, Clock: clock})
	is.NoErr(err)
	_, fetches = v.FetchPort()
	is.True(!fetches) // never fetches
}
