package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/oauth"
	"github.com/metricproof/metricproof/adapters/oauth/oauthtest"
)

// Headers an attacker sets on a token the issuer really signed, or on one
// of their own, and claims in forms the issuer might sign: none may widen
// what verifies. (A token whose aud names this server beside others is
// accepted, as RFC 7519 §4.1.3 has it: such a token is good at each
// server it names, which is the issuer's choice.) A token is verified only
// against the issuer's set, whatever key or URL its header carries (no URL
// of it is ever fetched), and a critical extension the verifier does not
// know refuses it as malformed (RFC 7515 §4.1.11; it was refused as a
// signature that does not verify, which sent the reader to the keys).
func TestTheTokensHeaderNeverChoosesTheKey(t *testing.T) {
	v, iss := newVerifier(t)
	own, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ownJWK, _ := json.Marshal(jose.JSONWebKey{Key: own.Public(), KeyID: "mine", Algorithm: "ES256", Use: "sig"})
	var embedded map[string]any
	_ = json.Unmarshal(ownJWK, &embedded)
	mine := oauthtest.New(t, iss.Clock)
	mineKey := mine.Rotate(t, "ES256")
	kid := iss.Current().ID
	claims := iss.Claims(audience, "metricproof:run")
	tests := []struct {
		name  string
		token func(t *testing.T) string
		want  oauth.Reason
	}{
		{"the issuer's token with crit naming an unknown extension", func(t *testing.T) string {
			return oauthtest.Sign(t, map[string]any{"alg": "RS256", "kid": kid, "crit": []string{"exp-ext"}, "exp-ext": true}, claims, iss.Current())
		}, oauth.ReasonMalformed},
		{"the issuer's token with b64 false: its signature is of another input", func(t *testing.T) string {
			return oauthtest.Sign(t, map[string]any{"alg": "RS256", "kid": kid, "crit": []string{"b64"}, "b64": false}, claims, iss.Current())
		}, oauth.ReasonSignature},
		{"an own key embedded as jwk", func(t *testing.T) string {
			return oauthtest.Sign(t, map[string]any{"alg": "ES256", "jwk": embedded}, claims, mineKey)
		}, oauth.ReasonAlgorithm},
		{"an own key embedded as jwk, with the issuer's kid", func(t *testing.T) string {
			return oauthtest.Sign(t, map[string]any{"alg": "ES256", "kid": kid, "jwk": embedded}, claims, mineKey)
		}, oauth.ReasonAlgorithm},
		{"an own key set named by jku", func(t *testing.T) string {
			return oauthtest.Sign(t, map[string]any{"alg": "ES256", "kid": mineKey.ID, "jku": mine.URL + "/jwks"}, claims, mineKey)
		}, oauth.ReasonUnknownKey},
		{"an own certificate named by x5u", func(t *testing.T) string {
			return oauthtest.Sign(t, map[string]any{"alg": "ES256", "x5u": mine.URL + "/cert"}, claims, mineKey)
		}, oauth.ReasonAlgorithm},
		{"a nested JWT: the issuer's token as the payload of one", func(t *testing.T) string {
			inner := iss.Token(t, claims)
			return part(map[string]any{"alg": "RS256", "kid": kid, "cty": "JWT"}) + "." + base64.RawURLEncoding.EncodeToString([]byte(inner)) + "." + strings.Split(inner, ".")[2]
		}, oauth.ReasonSignature},
		{"a kid of an RSA key on an ES256 token", func(t *testing.T) string {
			return oauthtest.Sign(t, map[string]any{"alg": "ES256", "kid": kid}, claims, mineKey)
		}, oauth.ReasonAlgorithm},
		{"a JSON serialization instead of compact", func(t *testing.T) string {
			tok := strings.Split(iss.Token(t, claims), ".")
			data, _ := json.Marshal(map[string]string{"protected": tok[0], "payload": tok[1], "signature": tok[2]})
			return string(data)
		}, oauth.ReasonMalformed},
		{"iss in another case", func(t *testing.T) string {
			c := iss.Claims(audience, "metricproof:run")
			c["iss"] = strings.ToUpper(iss.URL)
			return iss.Token(t, c)
		}, oauth.ReasonIssuer},
		{"aud in another case", func(t *testing.T) string {
			return iss.Token(t, iss.Claims(strings.ToUpper(audience), "metricproof:run"))
		}, oauth.ReasonAudience},
		{"aud with the right value second, the first another server's", func(t *testing.T) string {
			c := iss.Claims(audience, "metricproof:run")
			c["aud"] = []string{"https://evil.example/mcp", audience}
			return iss.Token(t, c)
		}, ""},
		{"aud naming this server inside a longer URL", func(t *testing.T) string {
			return iss.Token(t, iss.Claims(audience+"/../mcp", "metricproof:run"))
		}, oauth.ReasonAudience},
		{"aud as an object", func(t *testing.T) string {
			c := iss.Claims(audience, "metricproof:run")
			c["aud"] = map[string]string{"aud": audience}
			return iss.Token(t, c)
		}, oauth.ReasonMalformed},
		{"a megabyte of header", func(t *testing.T) string {
			return oauthtest.Sign(t, map[string]any{"alg": "RS256", "kid": kid, "pad": strings.Repeat("x", 1<<20)}, claims, iss.Current())
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			token := tt.token(t)
			fetches := mine.Fetches()
			_, err := v.Verify(context.Background(), token, nil)
			is.Equal(reasonOf(t, err), tt.want)
			is.Equal(mine.Fetches(), fetches) // no URL of the header was fetched
		})
	}
}

func part(v map[string]any) string {
	data, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(data)
}

// A storm of tokens, each with a kid of its own invention, all at once and
// then again a minute later: one fetch of the key set per minute, however
// many wait, and each token refused.
func TestInventedKidsAtOnceMakeOneFetchAMinute(t *testing.T) {
	v, iss := newVerifier(t)
	for minute := 1; minute <= 3; minute++ {
		is := is.New(t)
		iss.Clock.Advance(oauth.RefreshInterval)
		var wg sync.WaitGroup
		reasons := make(chan oauth.Reason, 200)
		for i := range 200 {
			tok := oauthtest.Sign(t, map[string]any{"alg": "RS256", "kid": fmt.Sprintf("invented-%d-%d", minute, i)}, iss.Claims(audience, "metricproof:run"), iss.Current())
			wg.Go(func() {
				_, err := v.Verify(context.Background(), tok, nil)
				var f *oauth.Fault
				if errors.As(err, &f) {
					reasons <- f.Reason
				} else {
					reasons <- ""
				}
			})
		}
		wg.Wait()
		close(reasons)
		for r := range reasons {
			is.Equal(r, oauth.ReasonUnknownKey)
		}
		is.Equal(iss.Fetches(), 1+minute) // the start's, and one a minute
	}
}
