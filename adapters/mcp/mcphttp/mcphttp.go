// Package mcphttp is MCP over HTTP (protocol §14): "tool-runner mcp
// --http" serves the server of package mcp (mcp.New, with a Carrier of
// its own), through the same call layer as stdio, at /mcp behind the HTTP
// front of package remote (Host, Origin, bounds, bearer token, scopes,
// health, stop), on the SDK's Streamable HTTP handler, stateless: every
// POST is a session of its own, so that any number of servers can stand
// behind any load balancer. The composition root hands [Transport] to
// mcp.Open. Its tests run it beside the stdio server on one workspace,
// over the harness they share with package mcp's (mcp/internal/mcptest).
//
// Between the front and the SDK sits httpMCP, which does for each POST
// body what the stdio stream does for each line:
//
//   - The checker of protocol §9.7 (package message) reads the body once:
//     the front runs it (read, its Options.Read) to decide the scope on
//     the method and tool the SDK will run, answers a refusal (the
//     JSON-RPC error as the body, status 400; a blank body is -32700), and
//     hands the facts on; not behind the front, httpMCP runs it itself.
//   - It bounds the load across all connections: every call counts what it
//     holds (Facts.HeldBytes) against the same 16 MiB as over stdio until
//     its answer is written; a call that does not fit is 503 with
//     Retry-After: 1, before anything runs. The compute slots are the call
//     layer's, one set for the whole process.
//   - It hands the call's handler, through the context, what the
//     connection knows of the call (httpCall, its carrier): who makes it
//     (the verified token's issuer and subject, for the ledger), the
//     arguments it held back, and the request's own context, so that a
//     closed connection cancels the call at its next check whatever the
//     protocol revision (the SDK does so itself only from 2026-07-28 on).
//     The call's compute slot goes back once the SDK has written its
//     answer, or the request ended without one.
//
// A notifications/cancelled over HTTP names an id of another request,
// which a stateless server cannot tell from another client's: it is
// accepted (202) and cancels nothing; a client cancels a call by closing
// its request (docs/decisions.md).
package mcphttp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/adapters/cli"
	"github.com/metricproof/metricproof/adapters/mcp"
	"github.com/metricproof/metricproof/adapters/mcp/message"
	"github.com/metricproof/metricproof/adapters/oauth"
	"github.com/metricproof/metricproof/adapters/remote"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/call"
	"github.com/metricproof/metricproof/app/ledger"
	"github.com/metricproof/metricproof/app/protocol"
)

// httpTransport is the transport's description for the call layer.
func httpTransport(listLimit int) call.Transport {
	return call.Transport{Name: "http", ListLimit: listLimit}
}

// httpMCP is the MCP handler of /mcp: the checks of each POST body, then
// the SDK's Streamable HTTP handler over one server.
type httpMCP struct {
	sdk http.Handler
	// cancelCalls cancels every call in flight: the front's stop, once its
	// grace has run out.
	cancelCalls context.CancelFunc
	waiting     budget
}

// newHTTPMCP is the MCP handler over the calls of one process. cursorKey
// authenticates resources/list cursors, for every server of the same
// output directory alike.
func newHTTPMCP(calls *call.Calls, listLimit int, version string, cursorKey []byte) (*httpMCP, error) {
	stop, cancel := context.WithCancel(context.Background())
	server, err := mcp.New(mcp.Config{Calls: calls, Transport: httpTransport(listLimit), Version: version,
		Stop: stop, Carrier: httpCarrier{}, CursorKey: cursorKey})
	if err != nil {
		cancel()
		return nil, err
	}
	return &httpMCP{
		sdk:         sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, remote.StreamableOptions()),
		cancelCalls: cancel,
		waiting:     budget{max: mcp.MaxHeldBytes},
	}, nil
}

// newHandler is the handler of /mcp over calls without the front, which
// checks each body itself: for tests in this process (export_test.go).
func newHandler(calls *call.Calls, listLimit int) (http.Handler, error) {
	return newHTTPMCP(calls, listLimit, "test", nil)
}

// ServeHTTP checks a POST of JSON and hands it to the SDK with its call's
// carrier; any other request goes to the SDK as it came (405, 415).
func (h *httpMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !jsonBody(r) {
		h.sdk.ServeHTTP(w, r)
		return
	}
	m, ok := checked(w, r)
	if !ok {
		return
	}
	if m.Drop {
		w.WriteHeader(http.StatusAccepted) // a cancellation that names no call
		return
	}
	if m.Call {
		if !h.waiting.take(m.HeldBytes) {
			remote.Busy(w, "the calls waiting hold "+strconv.Itoa(mcp.MaxHeldBytes)+" bytes of arguments")
			return
		}
		defer h.waiting.give(m.HeldBytes)
	}
	c := &httpCall{req: r.Context(), who: callerOf(auth.TokenInfoFromContext(r.Context())), sum: m.ArgsSHA256}
	defer c.end()
	r = r.WithContext(context.WithValue(r.Context(), httpCallKey{}, c))
	r.Body = io.NopCloser(bytes.NewReader(m.Body))
	r.ContentLength = int64(len(m.Body))
	h.sdk.ServeHTTP(w, r)
}

// checked is the facts of a POST body: as the front read them (read),
// or, not behind the front, read and checked here, a refusal answered.
func checked(w http.ResponseWriter, r *http.Request) (message.Facts, bool) {
	if v, ok := remote.Checked(r); ok {
		if m, ok := v.(message.Facts); ok {
			return m, true
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, message.MaxLineBytes))
	if err != nil {
		http.Error(w, "the body could not be read", http.StatusBadRequest)
		return message.Facts{}, false
	}
	m, refusal := message.CheckBody(body)
	if refusal != nil {
		remote.Refuse(w, refusal)
		return message.Facts{}, false
	}
	return m, true
}

// read is the front's reading of a POST body (remote.Options.Read):
// the checker's, so that the scope is decided on the method and tool the
// SDK will run, and a body the SDK could read two ways (a batch, a member
// name twice outside the arguments, a string that is not Unicode there) is
// refused before it, with the JSON-RPC error a stdio line of the same bytes
// gets. Its facts go on with the request to ServeHTTP: one check a body.
func read(body []byte) (remote.Reading, []byte) {
	m, refusal := message.CheckBody(body)
	return remote.Reading{Method: m.Method, Tool: m.Tool, Checked: m}, refusal
}

// jsonBody reports a body sent as application/json, the one media type
// the SDK takes.
func jsonBody(r *http.Request) bool {
	t, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && t == "application/json"
}

// scopeOf is the scope a message needs (protocol §14): metricproof:run
// for a tools/call of analyze, metricproof:read for anything else, given
// the method and tool read read (a body it refuses has no scope: it
// is answered before).
func scopeOf(method, tool string) string {
	if method == "tools/call" && tool == protocol.ToolAnalyze {
		return remote.ScopeRun
	}
	return remote.ScopeRead
}

// callerOf is who makes a call, for its record: the principal of the
// token the front verified, or nobody (null) without authorization.
func callerOf(ti *auth.TokenInfo) ledger.Caller {
	if p, ok := oauth.PrincipalOf(ti); ok {
		return ledger.Named(ledger.Principal{Issuer: p.Issuer, Subject: p.Subject})
	}
	return ledger.Anonymous()
}

// budget bounds what the calls in flight hold, across all connections:
// past max a call is refused rather than waited for, since its body is
// already held.
type budget struct {
	mu        sync.Mutex
	held, max int
}

func (b *budget) take(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+n > b.max {
		return false
	}
	b.held += n
	return true
}

func (b *budget) give(n int) {
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
}

// httpCallKey holds a request's httpCall in its context, which the SDK
// hands on to the handler it runs.
type httpCallKey struct{}

// httpCarrier is the carrier of the server over HTTP: each handler finds
// its call in its context.
type httpCarrier struct{}

// Start ties the handler's call to its request: a closed connection (its
// context done) cancels the call.
func (httpCarrier) Start(ctx context.Context) (context.Context, mcp.Call) {
	c, ok := ctx.Value(httpCallKey{}).(*httpCall)
	if !ok {
		return ctx, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	stopWatch := context.AfterFunc(c.req, cancel)
	return ctx, httpHandled{c: c, done: func() { stopWatch(); cancel() }}
}

// httpCall is one POST's call as the connection knows it.
type httpCall struct {
	// req is the request's context: done when its connection closes, or
	// once its answer is written.
	req context.Context
	who ledger.Caller
	sum string // the SHA256 of arguments held back, or ""

	mu      sync.Mutex
	over    bool   // the request has ended
	release func() // the call's slot, until the request ends
}

// end is the request's end: the answer is written, or never will be; the
// call's slot goes back (now, or when its handler gives it).
func (c *httpCall) end() {
	c.mu.Lock()
	c.over = true
	release := c.release
	c.release = nil
	c.mu.Unlock()
	if release != nil {
		release()
	}
}

// httpHandled is a handler's hold of its call.
type httpHandled struct {
	c    *httpCall
	done func()
}

func (h httpHandled) Arrived()                 {}
func (h httpHandled) Caller() ledger.Caller    { return h.c.who }
func (h httpHandled) HeldBack() (string, bool) { return h.c.sum, h.c.sum != "" }

// Answered holds release until the request ends: the SDK writes the
// answer before it returns from the request.
func (h httpHandled) Answered(release func()) {
	h.done()
	c := h.c
	c.mu.Lock()
	if !c.over {
		c.release = release
		release = nil
	}
	c.mu.Unlock()
	if release != nil {
		release()
	}
}

// cursorKeyOf is the key of the resources/list cursors of every server of
// the output directory o (as the operator names it): servers behind one
// balancer take each other's cursors. It is no secret: a cursor only says
// where a listing goes on, and the key tells a cursor of this directory
// from one of another or from noise.
func cursorKeyOf(o cli.Options) []byte {
	sum := sha256.Sum256([]byte("metricproof resources/list cursor\x00" + o.OutputDir))
	return sum[:]
}

// Transport is "tool-runner mcp --http" for mcp.Open (an mcp.HTTP).
type Transport struct{}

// Check checks every HTTP option before the workspace is opened: the
// address, the hosts and origins, authorization on a non-loopback address.
func (Transport) Check(h cli.HTTP) error {
	if err := remote.Check(frontOptions(h)); err != nil {
		return optionError(err)
	}
	return nil
}

// Open binds the server over HTTP of an opened service: the token
// verifier (which fetches the issuer's keys unless --auth-jwks names
// them) and the front. Its faults are INVALID_OPTIONS.
func (Transport) Open(opts cli.Options, svc *app.Service, version string, stderr io.Writer) (mcp.Remote, error) {
	h := opts.HTTP
	handler, err := newHTTPMCP(call.New(svc), opts.ListLimit, version, cursorKeyOf(opts))
	if err != nil {
		return nil, err
	}
	s := &server{svc: svc, stderr: stderr, cancelCalls: handler.cancelCalls}
	o := frontOptions(h)
	o.MCP, o.Stderr, o.CancelCalls, o.Ready, o.Read = handler, stderr, handler.cancelCalls, s.ready, read
	if o.Auth != nil {
		v, err := oauth.New(context.Background(), oauth.Config{Issuer: h.AuthIssuer, Audience: h.AuthAudience, JWKSFile: h.AuthJWKS,
			AllowHTTP: remote.Loopback(h.Addr), Clock: serviceClock{svc}})
		if err != nil {
			handler.cancelCalls()
			return nil, optionError(err)
		}
		o.Auth.Verify, o.Auth.Scope = v.Verify, scopeOf
		if port, fetches := v.FetchPort(); fetches {
			s.connect = append(s.connect, port)
		}
	}
	if s.front, err = remote.Listen(o); err != nil {
		handler.cancelCalls()
		return nil, optionError(err)
	}
	return s, nil
}

// server is the server bound over HTTP.
type server struct {
	svc    *app.Service
	stderr io.Writer
	front  *remote.Server
	// cancelCalls cancels the calls still running.
	cancelCalls context.CancelFunc
	// connect are the TCP ports the server connects to once serving: the
	// issuer's key set's, when it fetches it again.
	connect []uint16
}

// Network is the port the server listens on, and the issuer's key set's
// port when it fetches the set again.
func (s *server) Network() (bind, connect []uint16) {
	u, err := url.Parse(s.front.URL())
	if err != nil {
		return nil, s.connect
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil {
		return nil, s.connect
	}
	return []uint16{uint16(port)}, s.connect
}

// Close lets the address go, when the server was never served.
func (s *server) Close() error {
	s.cancelCalls()
	return s.front.Close()
}

// frontOptions are the front's options as the command line gives them;
// Auth, when given, lacks its verifier and scope function.
func frontOptions(h cli.HTTP) remote.Options {
	o := remote.Options{Addr: h.Addr, TLSCert: h.TLSCert, TLSKey: h.TLSKey, AllowedHosts: h.AllowedHosts, AllowedOrigins: h.AllowedOrigins}
	if h.AuthIssuer != "" {
		o.Auth = &remote.Auth{Issuer: h.AuthIssuer, Resource: h.AuthAudience}
	}
	return o
}

// optionError is a fault of the HTTP options as the command answers it.
func optionError(err error) error {
	return protocol.Errorf(protocol.InvalidOptions, "%v", err)
}

// ready is /readyz: "" when the workspace, the output directory and the
// ledger can be reached, else the code of what cannot.
func (s *server) ready(ctx context.Context) string {
	if err := s.svc.Ready(ctx); err != nil {
		return string(protocol.ErrorOf(err).Code)
	}
	return ""
}

// Serve serves until ctx ends (SIGINT, SIGTERM), then stops as the front
// does: calls in flight finish and are answered, those still running past
// the grace are cancelled and answer. 0 after a stop.
func (s *server) Serve(ctx context.Context) int {
	defer s.cancelCalls()
	if err := s.front.Serve(ctx); err != nil {
		fmt.Fprintf(s.stderr, "%s: the server stopped serving HTTP: restart it\n", protocol.InternalError)
		return 2
	}
	return 0
}

// serviceClock is the service's clock, as the token verifier reads it:
// one clock for the calls and the tokens.
type serviceClock struct{ svc *app.Service }

func (c serviceClock) Now() time.Time { return c.svc.Now() }
