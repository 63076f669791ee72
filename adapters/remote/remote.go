// Package remote is the HTTP front of the remote MCP server (protocol §14):
// everything between a TCP connection and the MCP SDK's Streamable HTTP
// handler, which it serves at /mcp.
//
// A request passes, in this order: the Host check (a host this server
// serves), the Origin check (none, or one of --allowed-origin, which also
// turns CORS on and answers preflights), the bound on open requests (503
// past it; health probes are not counted), then its path. /healthz and
// /readyz need no token. /mcp with authorization: the bearer token (401),
// the body read once and bounded (413), its one JSON-RPC message read by
// Options.Read as the MCP server reads it (400 with the JSON-RPC error the
// server gives those bytes over stdio), the scope its call needs (403),
// and the verified token handed to the SDK, which gives it to the tool
// handler as RequestExtra.TokenInfo. The metadata document of RFC 9728 is
// served at /.well-known/oauth-protected-resource/mcp. A refused request
// never reaches the MCP handler: nothing runs, nothing is written.
//
// [Listen] checks the options and binds; [Server.Serve] prints the one
// line protocol §14 promises on standard error, serves until its context
// ends, then stops: no new connection, calls in flight finish, and past the
// grace they are cancelled and answer.
//
// The SDK's own rebinding check (403 for a non-loopback Host on a loopback
// connection) is turned off in [StreamableOptions]: the Host check here is
// the stricter one, on every address, and it honours --allowed-host, which
// a reverse proxy on loopback needs. The SDK's cross-origin protection is
// not used: the Origin check here is an explicit list.
package remote

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/semaphore"

	"github.com/metricproof/metricproof/adapters/oauth"
)

// The scopes of protocol §14.
const (
	ScopeRead = "metricproof:read"
	ScopeRun  = "metricproof:run"
)

// The paths served.
const (
	PathMCP      = "/mcp"
	PathHealth   = "/healthz"
	PathReady    = "/readyz"
	PathMetadata = "/.well-known/oauth-protected-resource/mcp"
)

// Limits are the bounds of protocol §14; tests shorten the times.
type Limits struct {
	MaxBodyBytes  int64         // a larger body is 413
	HeldBytes     int64         // the bodies held at once, in all; past it 503
	MaxOpen       int           // requests open at once; more are 503
	HeaderTimeout time.Duration // for a request's headers
	BodyTimeout   time.Duration // for its body, from its headers' end
	IdleTimeout   time.Duration // an idle keep-alive connection is closed
	StopGrace     time.Duration // on stop, calls in flight may finish
	CancelGrace   time.Duration // then, cancelled, they may answer
}

// DefaultLimits are protocol §14's: 16 MiB, 64 MiB of bodies held at
// once, 256 open, 10 s, 60 s, 120 s, and a stop within 30 s (25 to finish,
// 5 to answer once cancelled).
func DefaultLimits() Limits {
	return Limits{
		MaxBodyBytes:  16 << 20,
		HeldBytes:     64 << 20,
		MaxOpen:       256,
		HeaderTimeout: 10 * time.Second,
		BodyTimeout:   60 * time.Second,
		IdleTimeout:   120 * time.Second,
		StopGrace:     25 * time.Second,
		CancelGrace:   5 * time.Second,
	}
}

// StreamableOptions are the options the SDK's Streamable HTTP handler
// behind this front needs: stateless (no session between requests, so
// any number of servers behind any balancer), the SDK's rebinding check
// off (this front's Host check replaces it), its body bound at this
// front's, and a call's context ended when its request's is.
func StreamableOptions() *mcp.StreamableHTTPOptions {
	return &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		DisableLocalhostProtection:   true,
		MaxRequestBodyBytes:          DefaultLimits().MaxBodyBytes,
		PropagateRequestCancellation: true,
	}
}

// Auth is the authorization of /mcp (protocol §14, "Who may call").
type Auth struct {
	// Issuer is --auth-issuer, named by the metadata document.
	Issuer string
	// Resource is --auth-audience, this server's URL for /mcp: the
	// metadata's resource, and where the metadata URL is derived from.
	Resource string
	// Verify checks a bearer token (an *oauth.Verifier's Verify). An error
	// wrapping auth.ErrInvalidToken is 401; any other is 401 too, never
	// passed on.
	Verify auth.TokenVerifier
	// Scope names the scope a request's JSON-RPC message needs, given its
	// method and, for tools/call, the tool's name, as Options.Read read
	// them (a body it refuses never gets here); "" needs none beyond a
	// valid token; a nil Scope needs none for any call.
	Scope func(method, tool string) string
}

// Reading is what Options.Read read of a POST body.
type Reading struct {
	// Method is the method of its one JSON-RPC message and Tool, for
	// tools/call, the tool's name: what Auth.Scope decides on.
	Method, Tool string
	// Checked is the reader's own reading, opaque to the front, which
	// hands it on to the handler behind ([Checked]).
	Checked any
}

// Options configure the front.
type Options struct {
	// Addr is --http, host:port; a port of 0 picks a free one.
	Addr string
	// TLSCert and TLSKey are --tls-cert and --tls-key: both or neither.
	TLSCert, TLSKey string
	// AllowedHosts are --allowed-host: names (or name:port) this server
	// also answers to, besides its listen address and, on loopback, the
	// localhost forms.
	AllowedHosts []string
	// AllowedOrigins are --allowed-origin: scheme://host[:port] of the
	// browser pages that may call; none by default, and then no CORS header
	// is ever sent.
	AllowedOrigins []string
	// Auth is nil for no authorization, which only a loopback address
	// allows.
	Auth *Auth
	// MCP is the SDK's Streamable HTTP handler (with StreamableOptions).
	MCP http.Handler
	// Read reads a POST body as the MCP handler behind will: the method of
	// its one JSON-RPC message and, for tools/call, the tool's name, which
	// Auth.Scope decides on; or, for a body the handler would refuse or
	// could read two ways (a batch, a member name twice, a string that is
	// not Unicode), the JSON-RPC error response to answer instead, which
	// the front sends with status 400 (Refuse). The composition root gives
	// the MCP server's own check, so that a body gets the answer its bytes
	// get over stdio and the front holds no reading of its own; the
	// reading goes on with the request ([Checked]), so the body is read
	// once. Required with an Auth.Scope; nil reads nothing.
	Read func(body []byte) (Reading, []byte)
	// Ready says whether the server can serve calls: "" when it can, else
	// the code of what it cannot reach (protocol §14, /readyz). Nil is
	// always ready.
	Ready func(ctx context.Context) string
	// CancelCalls cancels the calls still running once the stop's grace
	// has run out, as protocol §9's SIGTERM does: each stops at its next
	// cancel check and is answered over its open request (ending the
	// request itself would leave it unanswered). Nil cancels nothing.
	CancelCalls func()
	// Stderr receives the listening line.
	Stderr io.Writer
	// Limits are DefaultLimits() when zero.
	Limits Limits
}

// OptionError is an option the front cannot serve, for the composition
// root to answer as INVALID_OPTIONS.
type OptionError = oauth.OptionError

// Server is a bound front, ready to serve.
type Server struct {
	opts    Options
	ln      net.Listener
	url     string
	hosts   hostSet
	origins map[string]bool
	metaURL string
	open    chan struct{}       // one token per open request
	held    *semaphore.Weighted // the bytes of the bodies held
	next    http.Handler        // the MCP handler, behind the SDK's bearer middleware with Auth
	http    *http.Server
	tlsOn   bool
}

// Loopback reports whether addr's host is a loopback address or
// "localhost": where authorization is optional and http:// issuers are
// accepted.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Check checks the options as Listen does, but binds nothing and reads no
// file, so that a command can refuse a bad option before it opens
// anything else. Auth need only be non-nil when authorization will be
// given. Every fault is an *OptionError naming its option.
func Check(o Options) error {
	_, err := o.check()
	return err
}

// checked is what the options' check learned.
type checked struct {
	loopback bool
	hosts    hostSet
	origins  map[string]bool
}

// check checks the options that need no file and no network.
func (o Options) check() (checked, error) {
	host, port, err := net.SplitHostPort(o.Addr)
	if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 0 || n > 65535 {
		return checked{}, &OptionError{Option: "--http", Reason: "takes host:port (127.0.0.1:8080, [::1]:0, 0.0.0.0:443)"}
	}
	c := checked{loopback: Loopback(o.Addr), origins: map[string]bool{}}
	if o.Auth == nil && !c.loopback {
		return checked{}, &OptionError{Option: "--auth-issuer", Reason: "is required when --http listens on an address other than loopback (with --auth-audience)"}
	}
	if c.hosts, err = servedHosts(host, c.loopback, o.AllowedHosts); err != nil {
		return checked{}, err
	}
	for _, origin := range o.AllowedOrigins {
		norm, ok := normalOrigin(origin)
		if !ok {
			return checked{}, &OptionError{Option: "--allowed-origin", Reason: "takes scheme://host[:port], as a browser sends it in Origin (https://app.example.com)"}
		}
		c.origins[norm] = true
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return checked{}, &OptionError{Option: "--tls-cert", Reason: "and --tls-key go together"}
	}
	return c, nil
}

// Listen checks the options and binds the address. Every fault is an
// *OptionError naming its option.
func Listen(o Options) (*Server, error) {
	if o.MCP == nil || o.Stderr == nil {
		return nil, errors.New("remote: Options.MCP and Options.Stderr are required")
	}
	if o.Limits == (Limits{}) {
		o.Limits = DefaultLimits()
	}
	c, err := o.check()
	if err != nil {
		return nil, err
	}
	loopback := c.loopback
	if o.Auth != nil && (o.Auth.Verify == nil || o.Auth.Issuer == "" || o.Auth.Resource == "") {
		return nil, errors.New("remote: Auth needs Verify, Issuer and Resource")
	}
	if o.Auth != nil && o.Auth.Scope != nil && o.Read == nil {
		return nil, errors.New("remote: Auth.Scope needs Options.Read")
	}
	if o.Limits.HeldBytes < o.Limits.MaxBodyBytes {
		return nil, errors.New("remote: Limits.HeldBytes is less than one body")
	}
	s := &Server{opts: o, open: make(chan struct{}, o.Limits.MaxOpen), held: semaphore.NewWeighted(o.Limits.HeldBytes), hosts: c.hosts, origins: c.origins}
	s.next = o.MCP
	if o.Auth != nil {
		s.metaURL = metadataURL(o.Auth.Resource)
		s.next = s.withToken()
	}
	var tlsConfig *tls.Config
	if o.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			return nil, &OptionError{Option: "--tls-cert", Reason: "and --tls-key could not be read as a PEM certificate chain and its private key"}
		}
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
		s.tlsOn = true
	}
	// Plain TCP, never multipath: the kernel's Landlock rules on TCP ports
	// (protocol §16) do not cover MPTCP sockets, which Go would otherwise
	// open by default on Linux.
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(context.Background(), "tcp", o.Addr)
	if err != nil {
		return nil, &OptionError{Option: "--http", Reason: "could not listen: the port is in use, or the address is not this machine's"}
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); loopback && (!ok || !tcp.IP.IsLoopback()) {
		ln.Close()
		return nil, &OptionError{Option: "--http", Reason: "names localhost, which did not resolve to a loopback address"}
	}
	s.ln = ln
	scheme := "http"
	if s.tlsOn {
		scheme = "https"
	}
	s.url = scheme + "://" + ln.Addr().String() + PathMCP
	s.http = &http.Server{
		Handler:           s,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: o.Limits.HeaderTimeout,
		IdleTimeout:       o.Limits.IdleTimeout,
		// The server's own log may name clients; the only line protocol
		// §14 allows on standard error while healthy is the listening one.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	return s, nil
}

// Close gives back the address of a server that was never served, or has
// stopped; it does nothing else.
func (s *Server) Close() error {
	if err := s.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// URL is the address of /mcp, as the listening line prints it.
func (s *Server) URL() string { return s.url }

// Serve prints the listening line, serves until ctx ends, then stops:
// it accepts no more, lets the requests in flight finish for StopGrace,
// then cancels the calls (Options.CancelCalls) and gives them CancelGrace
// to answer, then ends the requests left and closes their connections. It
// returns nil after a stop, or the error that ended serving.
func (s *Server) Serve(ctx context.Context) error {
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	s.http.BaseContext = func(net.Listener) context.Context { return base }
	line, err := json.Marshal(map[string]string{"listening": s.url})
	if err != nil {
		return err
	}
	if _, err := s.opts.Stderr.Write(append(line, '\n')); err != nil {
		s.ln.Close()
		return err
	}
	served := make(chan error, 1)
	go func() {
		if s.tlsOn {
			served <- s.http.ServeTLS(s.ln, "", "")
			return
		}
		served <- s.http.Serve(s.ln)
	}()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	if s.shutdown(s.opts.Limits.StopGrace) != nil {
		if s.opts.CancelCalls != nil {
			s.opts.CancelCalls()
		}
		if s.shutdown(s.opts.Limits.CancelGrace) != nil {
			cancelBase()
			s.http.Close()
		}
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// shutdown stops accepting and waits for every connection to go idle, at
// most grace.
func (s *Server) shutdown(grace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	return s.http.Shutdown(ctx)
}
