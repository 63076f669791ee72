// Package oauthtest is a test issuer: its own signing keys, tokens with
// whatever claims, algorithm and kid a test chooses, and its key set and
// RFC 8414 metadata served on loopback (httptest), with key rotation and a
// count of key-set fetches. It signs with the standard library alone, so
// the verifier's library is not checked against itself. Tests only.
package oauthtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Clock is a clock a test moves by hand, so no test sleeps.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts a clock at now, truncated to the second as JWT times are.
func NewClock() *Clock { return &Clock{t: time.Now().Truncate(time.Second)} }

// Now tells the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Key is one signing key of the issuer.
type Key struct {
	ID      string
	Alg     string // RS256, ES256 or EdDSA
	private crypto.Signer
}

// Issuer is a test authorization server on loopback.
type Issuer struct {
	// URL is the issuer identifier, http://127.0.0.1:PORT.
	URL   string
	Clock *Clock

	srv *httptest.Server

	mu        sync.Mutex
	keys      []Key // published; the last signs
	fetches   int
	hidden    map[string]bool
	metaExtra map[string]any
}

// New starts an issuer with one RS256 key on a loopback httptest server,
// closed at the test's end.
func New(t testing.TB, clock *Clock) *Issuer {
	t.Helper()
	i := &Issuer{Clock: clock}
	i.Rotate(t, "RS256")
	// The URL is set before the server starts: its handler reads it, and
	// a request reaching it over a socket is no synchronization the race
	// detector sees.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(i.serve))
	i.URL, i.srv = "http://"+srv.Listener.Addr().String(), srv
	srv.Start()
	t.Cleanup(srv.Close)
	return i
}

// DropConnections closes every connection clients hold to the issuer,
// idle keep-alive ones included, so that the next fetch must connect
// anew (as a confined server's must).
func (i *Issuer) DropConnections() { i.srv.CloseClientConnections() }

func (i *Issuer) serve(w http.ResponseWriter, r *http.Request) {
	i.mu.Lock()
	defer i.mu.Unlock()
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration":
		if i.hidden[r.URL.Path] {
			http.NotFound(w, r)
			return
		}
		meta := map[string]any{
			"issuer":                           i.URL,
			"jwks_uri":                         i.URL + "/jwks",
			"authorization_endpoint":           i.URL + "/authorize",
			"token_endpoint":                   i.URL + "/token",
			"response_types_supported":         []string{"code"},
			"code_challenge_methods_supported": []string{"S256"},
		}
		for k, v := range i.metaExtra {
			meta[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(meta)
	case "/jwks":
		i.fetches++
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(i.jwksLocked())
	default:
		http.NotFound(w, r)
	}
}

// SetMetadata overrides fields of the metadata document, served at both
// RFC 8414's and OpenID discovery's well-known paths, and makes the paths
// in hide answer 404.
func (i *Issuer) SetMetadata(extra map[string]any, hide ...string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.metaExtra, i.hidden = extra, map[string]bool{}
	for _, p := range hide {
		i.hidden[p] = true
	}
}

// Fetches counts the key set's fetches so far.
func (i *Issuer) Fetches() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.fetches
}

// Rotate makes a new key of alg (RS256, ES256 or EdDSA) the signing key and
// publishes it beside the old ones; it returns the new key.
func (i *Issuer) Rotate(t testing.TB, alg string) Key {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch alg {
	case "RS256":
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "EdDSA":
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("oauthtest: no key for %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	k := Key{ID: fmt.Sprintf("key-%d", len(i.keys)+1), Alg: alg, private: priv}
	i.keys = append(i.keys, k)
	return k
}

// Current is the signing key.
func (i *Issuer) Current() Key {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.keys[len(i.keys)-1]
}

// JWKS is the published key set, as a file for --auth-jwks.
func (i *Issuer) JWKS() []byte {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.jwksLocked()
}

func (i *Issuer) jwksLocked() []byte {
	set := jose.JSONWebKeySet{}
	for _, k := range i.keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.private.Public(), KeyID: k.ID, Algorithm: k.Alg, Use: "sig"})
	}
	data, err := json.Marshal(set)
	if err != nil { // the issuer's own keys always marshal; nil is refused
		return nil
	}
	return data
}

// PublicPEM is the signing key's public key as PEM (SPKI): the bytes an
// attacker would use as an HMAC secret.
func (k Key) PublicPEM(t testing.TB) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k.private.Public())
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// Claims are a valid token's claims for aud with scope, for subject
// "alice", valid for five minutes from the clock.
func (i *Issuer) Claims(aud, scope string) map[string]any {
	now := i.Clock.Now()
	return map[string]any{
		"iss":   i.URL,
		"sub":   "alice",
		"aud":   aud,
		"scope": scope,
		"iat":   now.Unix(),
		"exp":   now.Add(5 * time.Minute).Unix(),
		"jti":   fmt.Sprintf("jti-%d", now.UnixNano()),
	}
}

// Token signs claims with the current key.
func (i *Issuer) Token(t testing.TB, claims map[string]any) string {
	t.Helper()
	k := i.Current()
	return Sign(t, map[string]any{"alg": k.Alg, "kid": k.ID, "typ": "at+jwt"}, claims, k)
}

// Sign makes a compact JWS of header and claims with key k, by the alg the
// header names: RS256, ES256 and EdDSA with k's private key, "none" with
// no signature. For HS256 use SignHMAC.
func Sign(t testing.TB, header, claims map[string]any, k Key) string {
	t.Helper()
	input := part(t, header) + "." + part(t, claims)
	var sig []byte
	var err error
	switch header["alg"] {
	case "RS256", "ES256", "EdDSA":
		if header["alg"] != k.Alg {
			t.Fatalf("oauthtest: a %s key cannot sign %v", k.Alg, header["alg"])
		}
	}
	switch header["alg"] {
	case "none":
	case "RS256":
		h := sha256.Sum256([]byte(input))
		sig, err = rsa.SignPKCS1v15(rand.Reader, k.private.(*rsa.PrivateKey), crypto.SHA256, h[:])
	case "ES256":
		h := sha256.Sum256([]byte(input))
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, k.private.(*ecdsa.PrivateKey), h[:])
		if err == nil {
			sig = make([]byte, 64)
			r.FillBytes(sig[:32])
			s.FillBytes(sig[32:])
		}
	case "EdDSA":
		sig = ed25519.Sign(k.private.(ed25519.PrivateKey), []byte(input))
	default:
		t.Fatalf("oauthtest: cannot sign %v", header["alg"])
	}
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// SignHMAC makes a compact JWS whose header says HS256, signed with secret:
// the algorithm-confusion attack, when secret is a public key's bytes.
func SignHMAC(t testing.TB, header, claims map[string]any, secret []byte) string {
	t.Helper()
	input := part(t, header) + "." + part(t, claims)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(input))
	return input + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func part(t testing.TB, v map[string]any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(data)
}
