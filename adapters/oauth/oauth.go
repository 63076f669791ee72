// Package oauth verifies the bearer tokens of the remote MCP server
// (protocol §14): JWT access tokens signed by one issuer, for one audience,
// against the issuer's JSON Web Key Set.
//
// A [Verifier] is built once at start by [New], from the operator's
// --auth-issuer, --auth-audience and --auth-jwks. Its [Verifier.Verify] has
// the shape of the MCP SDK's auth.TokenVerifier, so the SDK carries the
// verified token to a tool handler (RequestExtra.TokenInfo), where
// [PrincipalOf] reads who made the call.
//
// # What a token must be
//
// A compact JWS whose alg is an asymmetric algorithm that a usable key of
// the set allows (RS*, PS*, ES*, EdDSA: never none, never HS*), signed by a
// key of the set (by kid; a token without kid is tried against every key
// that fits its alg), whose iss equals the issuer, whose aud (a string or an
// array) names the audience, which has an exp, and an nbf and iat if any,
// within 60 s of the clock, and which names a subject. Checks run in that
// order, and no claim of a token is read before its signature verifies.
//
// # Keys
//
// From --auth-jwks (a file, read once), or else from the issuer's metadata
// (RFC 8414, then OpenID discovery) at start. A token whose kid the set
// lacks makes the verifier fetch the set again, at most once a minute
// whatever arrives (one fetch for many such tokens at once), so a rotated
// key is taken up at once and an attacker's invented kids cost at most one
// fetch a minute. A set holding a private or a symmetric key is refused:
// a published key set holds public keys only.
//
// # Errors
//
// A refused token is a [*Fault] with a [Reason] from a closed set; it wraps
// the SDK's auth.ErrInvalidToken. Its text is fixed per reason: no token
// byte, claim value or library message ever reaches it. A bad option is an
// [*OptionError] naming the option, for the composition root to answer as
// INVALID_OPTIONS.
package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/metricproof/metricproof/ports"
)

const (
	// Leeway is the clock skew allowed on exp, nbf and iat.
	Leeway = 60 * time.Second
	// RefreshInterval is the least time between two fetches of the key set.
	RefreshInterval = time.Minute
	// fetchTimeout bounds one fetch of the metadata or the key set.
	fetchTimeout = 10 * time.Second
	// maxDocumentBytes bounds a fetched metadata document or key set.
	maxDocumentBytes = 1 << 20
	// minRSABits is the least RSA modulus accepted, as NIST and RFC 7518 ask.
	minRSABits = 2048
	// maxURLBytes bounds the issuer's and the audience's URL: the ledger
	// records the issuer of every call.
	maxURLBytes = 2048
	// MaxSubjectBytes bounds a token's subject, as OpenID Connect does
	// (255 ASCII characters).
	MaxSubjectBytes = 255
)

// Config is what the operator configures.
type Config struct {
	// Issuer is --auth-issuer: a token's iss must equal it byte for byte.
	Issuer string
	// Audience is --auth-audience, the URL of this resource: a token's aud
	// must name it (a trailing slash aside, as oauthex.MatchesResource
	// allows).
	Audience string
	// JWKSFile is --auth-jwks, a JSON Web Key Set file; empty, the set is
	// fetched from the issuer's metadata.
	JWKSFile string
	// AllowHTTP accepts http:// URLs for the issuer, the audience and the
	// key set: only on a loopback listen address (local identity providers
	// and tests).
	AllowHTTP bool
	// Client fetches the metadata and the key set; nil is a client of its
	// own with a 10 s timeout.
	Client *http.Client
	// Clock tells the time for exp, nbf, iat and the refresh interval.
	Clock ports.Clock
}

// Principal is who a verified token speaks for: what the ledger records of
// a call over HTTP.
type Principal struct {
	Issuer  string `json:"issuer"`
	Subject string `json:"subject"`
}

// principalKey is where a TokenInfo's Extra holds the Principal.
const principalKey = "metricproof/principal"

// PrincipalOf reads the principal a Verifier put into a TokenInfo; false
// for nil or a TokenInfo that no Verifier made.
func PrincipalOf(ti *auth.TokenInfo) (Principal, bool) {
	if ti == nil {
		return Principal{}, false
	}
	p, ok := ti.Extra[principalKey].(Principal)
	return p, ok
}

// Verifier checks bearer tokens. It is safe for concurrent use.
type Verifier struct {
	cfg     Config
	jwksURL string // "" when the set came from a file: never refreshed

	keys atomic.Pointer[keySet]

	// refresh is held across a fetch, so that many tokens with an unknown
	// kid wait for one fetch; lastFetch is the time of the last attempt.
	refresh   sync.Mutex
	lastFetch time.Time
}

var _ auth.TokenVerifier = (*Verifier)(nil).Verify

// New checks cfg and loads the key set: from the file, or from the
// issuer's metadata. It fails with an *OptionError.
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	if cfg.Clock == nil {
		return nil, errors.New("oauth: Config.Clock is nil")
	}
	if err := checkURL(cfg.Issuer, cfg.AllowHTTP); err != nil {
		return nil, &OptionError{Option: "--auth-issuer", Reason: err.Error()}
	}
	if cfg.Audience == "" {
		return nil, &OptionError{Option: "--auth-audience", Reason: "is required with --auth-issuer: give the URL clients use for /mcp"}
	}
	if err := checkURL(cfg.Audience, cfg.AllowHTTP); err != nil {
		return nil, &OptionError{Option: "--auth-audience", Reason: err.Error()}
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: fetchTimeout}
	}
	cfg.Client = noDowngrade(cfg.Client, cfg.AllowHTTP)
	v := &Verifier{cfg: cfg}
	if cfg.JWKSFile != "" {
		set, err := readKeyFile(cfg.JWKSFile)
		if err != nil {
			return nil, &OptionError{Option: "--auth-jwks", Reason: err.Error()}
		}
		v.keys.Store(set)
		return v, nil
	}
	u, err := discover(ctx, cfg)
	if err != nil {
		return nil, &OptionError{Option: "--auth-issuer", Reason: err.Error()}
	}
	v.jwksURL = u
	v.lastFetch = cfg.Clock.Now()
	set, err := fetchKeys(ctx, cfg.Client, u)
	if err != nil {
		return nil, &OptionError{Option: "--auth-issuer", Reason: "its key set (jwks_uri) " + err.Error()}
	}
	v.keys.Store(set)
	return v, nil
}

// FetchPort is the TCP port the verifier connects to after start, to
// fetch the key set again (a token with an unknown kid): the jwks_uri's,
// its scheme's default when it names none. fetches is false for a key set
// read from a file, which is never fetched. A server confined to the
// ports it needs (protocol §16) allows this one.
func (v *Verifier) FetchPort() (port uint16, fetches bool) {
	if v.jwksURL == "" {
		return 0, false
	}
	u, err := url.Parse(v.jwksURL)
	if err != nil {
		return 0, false // fetched at start, so it parses
	}
	p := u.Port()
	if p == "" {
		p = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return 0, false
	}
	return uint16(n), true
}

// checkURL accepts an absolute https URL without fragment or user info, or
// an http one when allowHTTP.
func checkURL(s string, allowHTTP bool) error {
	if len(s) > maxURLBytes {
		return errors.New("is longer than 2048 characters")
	}
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Host == "" || u.User != nil || u.Fragment != "" || u.RawQuery != "" ||
		strings.ContainsAny(s, "\"\\ ") {
		return errors.New("is not an absolute URL (scheme://host/path, no query, fragment or quote)")
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && allowHTTP:
		return nil
	case u.Scheme == "http":
		return errors.New("must be https:// (http:// only when --http listens on a loopback address)")
	}
	return errors.New("must be an https:// URL")
}

// Verify checks a bearer token; a refused token is a *Fault wrapping
// auth.ErrInvalidToken. The request is unused: it is there for the SDK's
// auth.TokenVerifier shape.
func (v *Verifier) Verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	set := v.keys.Load()
	jws, err := jose.ParseSignedCompact(token, allAlgorithms())
	if err != nil {
		var alg *jose.ErrUnexpectedSignatureAlgorithm
		if errors.As(err, &alg) {
			return nil, fault(ReasonAlgorithm)
		}
		return nil, fault(ReasonMalformed)
	}
	if len(jws.Signatures) != 1 {
		return nil, fault(ReasonMalformed)
	}
	h := jws.Signatures[0].Header
	alg := jose.SignatureAlgorithm(h.Algorithm)
	if h.KeyID != "" && !set.has(h.KeyID) {
		set = v.refreshFor(ctx, h.KeyID)
		if !set.has(h.KeyID) {
			return nil, fault(ReasonUnknownKey)
		}
	}
	keys := set.candidates(h.KeyID, alg)
	if len(keys) == 0 { // no key of the set (or none with this kid) allows alg
		return nil, fault(ReasonAlgorithm)
	}
	var payload []byte
	for _, k := range keys {
		p, err := jws.Verify(k.Key)
		if errors.Is(err, jose.ErrUnsupportedCriticalHeader) {
			// A critical extension this verifier does not know: no key
			// can make the token one it understands (RFC 7515 §4.1.11).
			return nil, fault(ReasonMalformed)
		}
		if err == nil {
			payload = p
			break
		}
	}
	if payload == nil {
		return nil, fault(ReasonSignature)
	}
	return v.claims(payload)
}

// claims checks the claims of a verified payload, in order.
func (v *Verifier) claims(payload []byte) (*auth.TokenInfo, error) {
	var c struct {
		jwt.Claims
		Scope *string         `json:"scope"`
		Scp   json.RawMessage `json:"scp"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fault(ReasonMalformed)
	}
	if c.Issuer != v.cfg.Issuer {
		return nil, fault(ReasonIssuer)
	}
	if !oauthex.MatchesResource(c.Audience, v.cfg.Audience) {
		return nil, fault(ReasonAudience)
	}
	if c.Expiry == nil {
		return nil, fault(ReasonNoExpiry)
	}
	switch err := c.ValidateWithLeeway(jwt.Expected{Time: v.cfg.Clock.Now()}, Leeway); {
	case errors.Is(err, jwt.ErrExpired):
		return nil, fault(ReasonExpired)
	case err != nil: // nbf, or iat, in the future
		return nil, fault(ReasonNotYetValid)
	}
	switch {
	case c.Subject == "":
		return nil, fault(ReasonNoSubject)
	case len(c.Subject) > MaxSubjectBytes:
		// The ledger records the subject of every call: a bounded one keeps
		// each record within what a ledger line may hold.
		return nil, fault(ReasonLongSubject)
	}
	scopes, ok := scopesOf(c.Scope, c.Scp)
	if !ok {
		return nil, fault(ReasonMalformed)
	}
	p := Principal{Issuer: c.Issuer, Subject: c.Subject}
	return &auth.TokenInfo{
		Scopes:     scopes,
		Expiration: c.Expiry.Time(),
		UserID:     c.Subject,
		Extra:      map[string]any{principalKey: p},
	}, nil
}

// scopesOf reads the scopes: "scope", a space-separated string (RFC 9068),
// or else "scp", a string or an array of strings, as some identity
// providers write them.
func scopesOf(scope *string, scp json.RawMessage) ([]string, bool) {
	if scope != nil {
		return strings.Fields(*scope), true
	}
	if len(scp) == 0 || string(scp) == "null" {
		return nil, true
	}
	var s string
	if json.Unmarshal(scp, &s) == nil {
		return strings.Fields(s), true
	}
	var list []string
	if json.Unmarshal(scp, &list) == nil {
		return list, true
	}
	return nil, false
}

// refreshFor fetches the key set again for a kid it lacks, unless the last
// fetch was less than RefreshInterval ago or the set came from a file. It
// returns the set in force afterwards. A failed fetch keeps the old set.
func (v *Verifier) refreshFor(ctx context.Context, kid string) *keySet {
	if v.jwksURL == "" {
		return v.keys.Load()
	}
	v.refresh.Lock()
	defer v.refresh.Unlock()
	set := v.keys.Load()
	if set.has(kid) { // fetched while this call waited
		return set
	}
	now := v.cfg.Clock.Now()
	if now.Sub(v.lastFetch) < RefreshInterval {
		return set
	}
	v.lastFetch = now
	// One caller's cancellation must not spoil the fetch the others wait for.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	fresh, err := fetchKeys(ctx, v.cfg.Client, v.jwksURL)
	if err != nil {
		return set
	}
	v.keys.Store(fresh)
	return fresh
}

// keySet is the usable keys of a JSON Web Key Set: public, asymmetric,
// for signatures, each with the algorithms it allows.
type keySet struct {
	keys []usableKey
}

type usableKey struct {
	jose.JSONWebKey
	algs []jose.SignatureAlgorithm
}

func (s *keySet) has(kid string) bool {
	for _, k := range s.keys {
		if k.KeyID == kid {
			return true
		}
	}
	return false
}

// candidates are the keys a token with this kid and alg may be signed by.
func (s *keySet) candidates(kid string, alg jose.SignatureAlgorithm) []usableKey {
	var out []usableKey
	for _, k := range s.keys {
		if (kid == "" || k.KeyID == kid) && k.allows(alg) {
			out = append(out, k)
		}
	}
	return out
}

func (k usableKey) allows(alg jose.SignatureAlgorithm) bool {
	for _, a := range k.algs {
		if a == alg {
			return true
		}
	}
	return false
}

// allAlgorithms are the only algorithms a token may name: asymmetric ones.
// A key narrows them further (its kty, curve and declared alg).
func allAlgorithms() []jose.SignatureAlgorithm {
	return []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
		jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}
}

// algorithmsFor gives the algorithms a public key may verify, by its type
// and curve; nil for a key this verifier never uses.
func algorithmsFor(key any) []jose.SignatureAlgorithm {
	switch k := key.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < minRSABits {
			return nil
		}
		return []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512}
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return []jose.SignatureAlgorithm{jose.ES256}
		case elliptic.P384():
			return []jose.SignatureAlgorithm{jose.ES384}
		case elliptic.P521():
			return []jose.SignatureAlgorithm{jose.ES512}
		}
	case ed25519.PublicKey:
		return []jose.SignatureAlgorithm{jose.EdDSA}
	}
	return nil
}

// parseKeySet reads a JSON Web Key Set. Keys of a type go-jose does not
// know, keys for encryption and keys too weak are skipped; a private or
// symmetric key refuses the whole set; a set left with no usable key is
// refused.
func parseKeySet(data []byte) (*keySet, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.Keys == nil {
		return nil, errors.New("is not a JSON Web Key Set (an object with a \"keys\" array)")
	}
	set := &keySet{}
	for _, raw := range doc.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			var probe struct {
				Kty string `json:"kty"`
			}
			if json.Unmarshal(raw, &probe) == nil && probe.Kty == "oct" {
				return nil, errors.New("holds a symmetric key: a published key set holds public keys only")
			}
			continue // an unknown kty, or a key go-jose cannot read
		}
		if !k.Valid() {
			continue
		}
		if !k.IsPublic() {
			if _, symmetric := k.Key.([]byte); symmetric {
				return nil, errors.New("holds a symmetric key: a published key set holds public keys only")
			}
			return nil, errors.New("holds a private key: give the issuer's public key set")
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		algs := algorithmsFor(k.Key)
		if k.Algorithm != "" {
			declared := jose.SignatureAlgorithm(k.Algorithm)
			found := false
			for _, a := range algs {
				found = found || a == declared
			}
			if !found {
				continue
			}
			algs = []jose.SignatureAlgorithm{declared}
		}
		if len(algs) == 0 {
			continue
		}
		set.keys = append(set.keys, usableKey{JSONWebKey: k, algs: algs})
	}
	if len(set.keys) == 0 {
		return nil, errors.New("holds no usable signing key (RSA of 2048 bits or more, EC P-256/384/521, Ed25519)")
	}
	return set, nil
}
