package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/sync/semaphore"

	"github.com/metricproof/metricproof/adapters/oauth"
)

// readyTimeout bounds one readiness check.
const readyTimeout = 5 * time.Second

// ServeHTTP checks a request in the order of the package comment.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.hosts.serves(r.Host) {
		refuse(w, http.StatusForbidden, "forbidden_host",
			"the Host header names no host this server serves: if it is this server's name, the operator adds it with --allowed-host")
		return
	}
	if origin := r.Header.Values("Origin"); len(origin) > 0 {
		norm, ok := normalOrigin(origin[0])
		if len(origin) > 1 || !ok || !s.origins[norm] {
			refuse(w, http.StatusForbidden, "forbidden_origin",
				"calls from a web page of this origin are refused: the operator may allow it with --allowed-origin")
			return
		}
		s.cors(w, r, origin[0])
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			w.WriteHeader(http.StatusNoContent) // a preflight: no token, no body
			return
		}
	}
	switch r.URL.Path {
	case PathHealth:
		s.health(w, r, "")
		return
	case PathReady:
		code := ""
		if s.opts.Ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			code = s.opts.Ready(ctx)
			cancel()
		}
		s.health(w, r, code)
		return
	}
	select {
	case s.open <- struct{}{}:
		defer func() { <-s.open }()
	default:
		busy(w, strconv.Itoa(cap(s.open))+" requests are open at once")
		return
	}
	switch {
	case r.URL.Path == PathMCP:
		s.mcp(w, r)
	case r.URL.Path == PathMetadata && s.opts.Auth != nil:
		s.metadata(w, r)
	default:
		refuse(w, http.StatusNotFound, "not_found", "this server serves /mcp, /healthz and /readyz")
	}
}

// health answers /healthz and /readyz: 200 when code is "", else 503
// naming the code, and nothing else.
func (s *Server) health(w http.ResponseWriter, r *http.Request, code string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		refuse(w, http.StatusMethodNotAllowed, "method_not_allowed", "use GET")
		return
	}
	if code == "" {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "code": code})
}

// tokenKey holds a verified token in a request's context, between this
// front's check and the SDK's middleware that hands it to the tool handler.
type tokenKey struct{}

// mcp authorizes a request to /mcp and hands it, with its body read once
// and bounded, to the SDK.
func (s *Server) mcp(w http.ResponseWriter, r *http.Request) {
	var ti *auth.TokenInfo
	if a := s.opts.Auth; a != nil {
		var ok bool
		if ti, ok = s.authenticate(w, r); !ok {
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), tokenKey{}, ti))
	}
	var held int64
	defer func() { s.held.Release(held) }()
	body, ok := s.readBody(w, r, &held)
	if !ok {
		return
	}
	var reading Reading
	if read := s.opts.Read; read != nil && r.Method == http.MethodPost { // a GET or DELETE carries no message
		var refusal []byte
		if reading, refusal = read(body); refusal != nil {
			Refuse(w, refusal)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), readingKey{}, reading.Checked))
	}
	if a := s.opts.Auth; a != nil && a.Scope != nil {
		if need := a.Scope(reading.Method, reading.Tool); need != "" && !slices.Contains(ti.Scopes, need) {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+need+`", resource_metadata="`+s.metaURL+`"`)
			refuse(w, http.StatusForbidden, "insufficient_scope",
				"this call needs the scope "+need+": get a token with it from the issuer")
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	s.next.ServeHTTP(w, r)
}

// readingKey holds, in a request's context, Reading.Checked of its body.
type readingKey struct{}

// Checked returns what Options.Read read of the body of a request to /mcp
// (Reading.Checked), for the handler behind the front to use rather than
// read the body again; false for a request whose body no front read.
func Checked(r *http.Request) (any, bool) {
	v := r.Context().Value(readingKey{})
	return v, v != nil
}

// withToken wraps the MCP handler in the SDK's bearer middleware, given
// the token this front verified: the SDK's only way to put a TokenInfo
// where a tool handler reads it (RequestExtra.TokenInfo).
func (s *Server) withToken() http.Handler {
	verified := func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		if ti, ok := ctx.Value(tokenKey{}).(*auth.TokenInfo); ok {
			return ti, nil
		}
		return nil, auth.ErrInvalidToken
	}
	return auth.RequireBearerToken(verified, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL:    s.metaURL,
		AllowMissingExpiration: true,
		ClockSkew:              oauth.Leeway,
	})(s.opts.MCP)
}

// authenticate checks the bearer token: 401 when it is missing or bad.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*auth.TokenInfo, bool) {
	header := r.Header.Values("Authorization")
	if len(header) == 0 {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+s.metaURL+`"`)
		refuse(w, http.StatusUnauthorized, "unauthorized",
			"this server needs Authorization: Bearer with an access token from "+s.opts.Auth.Issuer+
				" for "+s.opts.Auth.Resource+"; how to get one: "+s.metaURL)
		return nil, false
	}
	scheme, token, found := strings.Cut(header[0], " ")
	token = strings.TrimLeft(token, " ") // RFC 6750: 1*SP
	var ti *auth.TokenInfo
	err := errors.New("not one bearer token")
	if len(header) == 1 && found && strings.EqualFold(scheme, "Bearer") && token != "" && !strings.ContainsAny(token, " \t") {
		ti, err = s.opts.Auth.Verify(r.Context(), token, r)
	}
	if err != nil || ti == nil {
		text := "the Authorization header holds no single bearer token: send Authorization: Bearer <token>"
		var f *oauth.Fault
		if errors.As(err, &f) {
			text = f.Error()
		}
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", resource_metadata="`+s.metaURL+`"`)
		refuse(w, http.StatusUnauthorized, "invalid_token", text)
		return nil, false
	}
	return ti, true
}

// errHeld is a body that does not fit in what the bodies may hold.
var errHeld = errors.New("the bodies held are at their bound")

// budgeted reads a body of unknown length, taking its bytes from the
// bodies' bound as they come.
type budgeted struct {
	r    io.Reader
	sem  *semaphore.Weighted
	held *int64
}

func (b budgeted) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		if !b.sem.TryAcquire(int64(n)) {
			return 0, errHeld
		}
		*b.held += int64(n)
	}
	return n, err
}

// readBody reads the body once, within BodyTimeout and MaxBodyBytes: 413
// as soon as it is known to be larger (at once for a Content-Length), 408
// when it is late, 503 when the bodies held at once would pass HeldBytes.
// What it holds is added to *held, for the caller to give back.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, held *int64) ([]byte, bool) {
	limit := s.opts.Limits.MaxBodyBytes
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close")
		refuse(w, http.StatusRequestEntityTooLarge, "too_large", "the body is larger than "+strconv.FormatInt(limit, 10)+" bytes")
		return nil, false
	}
	var in io.Reader = http.MaxBytesReader(w, r.Body, limit)
	if r.ContentLength >= 0 {
		if !s.held.TryAcquire(r.ContentLength) {
			busy(w, "the bodies of the requests open hold "+strconv.FormatInt(s.opts.Limits.HeldBytes, 10)+" bytes")
			return nil, false
		}
		*held = r.ContentLength
	} else {
		in = budgeted{r: in, sem: s.held, held: held}
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.opts.Limits.BodyTimeout))
	body, err := io.ReadAll(in)
	// The deadline is the body's, not the call's (net/http clears it as
	// well when it starts its background read at the body's end).
	_ = rc.SetReadDeadline(time.Time{})
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		refuse(w, http.StatusRequestEntityTooLarge, "too_large", "the body is larger than "+strconv.FormatInt(limit, 10)+" bytes")
		return nil, false
	case errors.Is(err, errHeld):
		w.Header().Set("Connection", "close")
		busy(w, "the bodies of the requests open hold "+strconv.FormatInt(s.opts.Limits.HeldBytes, 10)+" bytes")
		return nil, false
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		refuse(w, http.StatusRequestTimeout, "timeout", "the body did not arrive within "+s.opts.Limits.BodyTimeout.String())
		return nil, false
	case err != nil:
		w.Header().Set("Connection", "close")
		refuse(w, http.StatusBadRequest, "bad_body", "the body could not be read")
		return nil, false
	}
	return body, true
}

// metadata serves the RFC 9728 document, to anyone.
func (s *Server) metadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		refuse(w, http.StatusMethodNotAllowed, "method_not_allowed", "use GET")
		return
	}
	writeJSON(w, http.StatusOK, oauthex.ProtectedResourceMetadata{
		Resource:               s.opts.Auth.Resource,
		AuthorizationServers:   []string{s.opts.Auth.Issuer},
		ScopesSupported:        []string{ScopeRead, ScopeRun},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "metricproof",
	})
}

// metadataURL is where RFC 9728 §3.1 puts the metadata of a resource: the
// well-known path inserted between its host and its path.
func metadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	u.Path = "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u.String()
}

// cors writes the headers of an allowed origin, and of a preflight.
func (s *Server) cors(w http.ResponseWriter, r *http.Request, origin string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
	if r.Method != http.MethodOptions {
		return
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
	allowed := []string{"Authorization", "Content-Type", "Mcp-Protocol-Version", "Mcp-Session-Id", "Last-Event-ID", "Mcp-Method", "Mcp-Name"}
	for _, req := range strings.Split(r.Header.Get("Access-Control-Request-Headers"), ",") {
		req = http.CanonicalHeaderKey(strings.TrimSpace(req))
		if strings.HasPrefix(req, "Mcp-Param-") && !slices.Contains(allowed, req) {
			allowed = append(allowed, req)
		}
	}
	h.Set("Access-Control-Allow-Headers", strings.Join(allowed, ", "))
	h.Set("Access-Control-Max-Age", "600")
}

// Busy answers 503 with Retry-After: 1, as this front does at its own
// bounds, for a handler behind it at one of its own: why says which, and
// the answer adds "retry after 1 s".
func Busy(w http.ResponseWriter, why string) { busy(w, why) }

// Refuse answers a POST body the MCP server refuses with refusal, its
// JSON-RPC error response, as the SDK answers the requests it refuses
// with one: HTTP status 400, application/json.
func Refuse(w http.ResponseWriter, refusal []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(refusal)
}

// busy answers 503: the server is at one of its bounds, for a moment.
func busy(w http.ResponseWriter, why string) {
	w.Header().Set("Retry-After", "1")
	refuse(w, http.StatusServiceUnavailable, "busy", why+": retry after 1 s")
}

// refuse answers a request this front refuses: a JSON object with an
// error code and what to do, in the manner of RFC 6750's error responses.
func refuse(w http.ResponseWriter, status int, code, text string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": text})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status, data = http.StatusInternalServerError, []byte(`{"error":"internal"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}
