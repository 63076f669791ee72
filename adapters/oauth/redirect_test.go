package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/oauth"
	"github.com/metricproof/metricproof/adapters/oauth/oauthtest"
)

// An https issuer's metadata or key set that redirects to http:// is
// refused: on the plain hop anyone on the path could hand over a key set
// of their own, and every token they sign would verify. Before, the
// fetches followed any redirect, so an https-only configuration took keys
// over http.
func TestAFetchRedirectedToPlainHTTPIsRefused(t *testing.T) {
	clock := oauthtest.NewClock()
	attacker := oauthtest.New(t, clock) // plain http, with keys of its own
	var redirect atomic.Value           // the path that redirects to the attacker
	var tlsURL string
	legit := oauthtest.New(t, clock)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == redirect.Load() {
			target := attacker.URL + "/jwks"
			if r.URL.Path != "/jwks" {
				target = attacker.URL + "/.well-known/oauth-authorization-server"
			}
			http.Redirect(w, r, target, http.StatusFound)
			return
		}
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": tlsURL, "jwks_uri": tlsURL + "/jwks"})
		case "/jwks":
			_, _ = w.Write(legit.JWKS())
		case "/elsewhere": // an https host of the attacker's own, with a good certificate
			_, _ = w.Write(attacker.JWKS())
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	tlsURL = srv.URL
	attacker.Rotate(t, "ES256") // a kid the issuer's set lacks
	// Its metadata names the issuer, and a key set on an https host of its own.
	attacker.SetMetadata(map[string]any{"issuer": tlsURL, "jwks_uri": tlsURL + "/elsewhere"})
	cfg := oauth.Config{Issuer: tlsURL, Audience: "https://mcp.example.com/mcp", Client: srv.Client(), Clock: clock}
	attackerToken := func(t *testing.T) string {
		c := attacker.Claims(cfg.Audience, "metricproof:run")
		c["iss"] = tlsURL
		return attacker.Token(t, c)
	}

	for _, path := range []string{"/.well-known/oauth-authorization-server", "/jwks"} {
		t.Run("at start, "+path, func(t *testing.T) {
			is := is.New(t)
			redirect.Store(path)
			_, err := oauth.New(context.Background(), cfg)
			var oe *oauth.OptionError
			is.True(errors.As(err, &oe)) // refused, naming the option
			is.Equal(oe.Option, "--auth-issuer")
		})
	}

	t.Run("at a refresh", func(t *testing.T) {
		is := is.New(t)
		redirect.Store("")
		v, err := oauth.New(context.Background(), cfg)
		is.NoErr(err)
		redirect.Store("/jwks")
		clock.Advance(oauth.RefreshInterval)
		_, err = v.Verify(context.Background(), attackerToken(t), nil)
		is.Equal(reasonOf(t, err), oauth.ReasonUnknownKey) // the attacker's key was not taken
		c := legit.Claims(cfg.Audience, "metricproof:read")
		c["iss"] = tlsURL
		_, err = v.Verify(context.Background(), legit.Token(t, c), nil)
		is.NoErr(err) // the set in force stays
	})

	t.Run("an https redirect is followed", func(t *testing.T) {
		is := is.New(t)
		redirect.Store("")
		_, err := oauth.New(context.Background(), cfg)
		is.NoErr(err)
	})
}
