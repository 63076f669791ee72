package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineBytes is the longest message line the server reads; a longer one
// is answered -32600 without being held in memory whole.
const MaxLineBytes = 16 << 20

// The load bounds of protocol §9.
const (
	// MaxHeldBytes bounds what the calls read and not yet answered hold,
	// as the connection counts it (see [call]): at or past it, the server
	// reads no further line until a call is answered.
	MaxHeldBytes = 16 << 20
	// callBytes is what a call holds besides its bytes, counted for every
	// call: the goroutine that serves it, the SDK's request, the
	// connection's own record: 12.3 KiB a waiting call, measured as the
	// RSS of a server with GOGC=1 before and after 800 verify calls queued
	// behind a held slot.
	callBytes = 16 << 10
)

// Unhandled answers, as the tool's handler would have, a tools/call that
// the SDK cancelled before the handler ran: tool and arguments are the
// call's params.name and the raw bytes of params.arguments. It reports
// false for a name that is not one of the tools.
type Unhandled func(tool string, arguments json.RawMessage) (*sdk.CallToolResult, bool)

// Connect serves server over in and out, one JSON-RPC message per line,
// and returns the session (protocol §9). When stop is closed the server stops
// taking calls and ends its session once the calls in flight are answered;
// nil never stops. The SDK answers a call cancelled while it waited for a
// handler with a JSON-RPC error of its own; unhandled, when not nil,
// answers it instead, so that every call of a tool gets the tool's answer
// (CANCELLED, never an error of the protocol) and is recorded.
func Connect(ctx context.Context, server *sdk.Server, in io.Reader, out io.Writer, stop <-chan struct{}, unhandled Unhandled) (*sdk.ServerSession, error) {
	c := newLineConn(in, out, stop, unhandled)
	server.AddReceivingMiddleware(c.admit)
	return server.Connect(ctx, &lineTransport{conn: c}, nil)
}

// lineTransport is the server's stdio transport, in front of the SDK.
type lineTransport struct{ conn *lineConn }

// Connect implements sdk.Transport.
func (t *lineTransport) Connect(context.Context) (sdk.Connection, error) {
	go t.conn.readLines()
	return t.conn, nil
}

// lineConn is one session's connection: one JSON-RPC message per line,
// with the strict checks of protocol §9 on every line (decodeLine). It answers
// a line that is not JSON (-32700) or not an acceptable JSON-RPC 2.0
// message (-32600) itself and keeps the session going, and it holds end of
// input (and the stop signal) back until every call it handed to the SDK
// has been answered.
//
// It also bounds the load (protocol §9, Load). Every call it hands to the SDK
// is counted at what it holds until its answer is written; at or past
// MaxHeldBytes it reads no further line. A tools/call is handed over alone:
// the next line is read once the call has taken its place in the service's
// lines (app.Input.Arrived) or was answered, so the calls wait in the order
// they arrived. A tools/call reaches the SDK with arguments {} (the SDK
// only copies a raw tool's arguments); the arguments go to the handler
// from here, as they arrived. Once the SDK has decoded the call and the
// middleware admits it to its handler, the call drops what it held of its
// line: the SDK's copy of its params, its _meta and what the SDK decoded
// of it; its count shrinks to its arguments. A notifications/cancelled for a call in flight cancels it
// here, before the next line is read, so that a call waiting for a compute
// slot answers CANCELLED at once; the SDK gets the notification too. The
// compute slot of a call or a resource read is given back once its answer
// is written (app.Input.Keep, the keep of app.Service.ReadRunFile), so
// that answers not yet written count against the slots.
type lineConn struct {
	in        *bufio.Reader
	out       io.Writer
	wmu       sync.Mutex // one line at a time
	stop      <-chan struct{}
	unhandled Unhandled
	want      chan struct{} // asks the reader for the next line
	lines     chan line
	reading   bool // a line was asked for and not received; Read's own

	mu   sync.Mutex
	idle *sync.Cond // signalled when a call is answered
	// inFlight holds the calls handed to the SDK and not yet answered, by
	// ID. A call whose ID is in it is refused here: the SDK would answer it
	// with nothing, and the session could never end.
	inFlight map[jsonrpc.ID]*pending
	// byExtra finds a tools/call the SDK hands to the middleware.
	byExtra map[*sdk.RequestExtra]*pending
	held    int      // bytes the calls in flight hold, as counted
	alone   *pending // a tools/call that has not yet taken its place
	changed chan struct{}
	done    bool // the connection is closed

	closeOnce sync.Once
	closed    chan struct{}
}

// call is one call handed to the SDK and not yet answered.
type pending struct {
	req   *jsonrpc.Request
	extra *sdk.RequestExtra
	held  int // what the call holds, as counted
	// For a tools/call until it is admitted: the tool and its arguments,
	// for an answer to a call the SDK cancelled before its handler ran.
	toolCall  bool
	tool      string
	arguments []byte
	// idBytes, outsideHeld and hasMeta size what the call holds once
	// admitted.
	idBytes     int
	outsideHeld int
	hasMeta     bool
	// admitted is set once the middleware handed the call to its handler;
	// cancel then cancels it. cancelled is set when a cancellation came
	// before.
	admitted  bool
	cancel    context.CancelFunc
	cancelled bool
	// release gives the call's compute slot back once its answer is written.
	release func()
}

var _ sdk.Connection = (*lineConn)(nil)

func newLineConn(in io.Reader, out io.Writer, stop <-chan struct{}, unhandled Unhandled) *lineConn {
	c := &lineConn{
		in: bufio.NewReaderSize(in, MaxLineBytes+2), out: out, stop: stop, unhandled: unhandled,
		want: make(chan struct{}), lines: make(chan line), changed: make(chan struct{}, 1),
		inFlight: map[jsonrpc.ID]*pending{}, byExtra: map[*sdk.RequestExtra]*pending{}, closed: make(chan struct{}),
	}
	c.idle = sync.NewCond(&c.mu)
	return c
}

// readLines reads one line each time Read asks for one, until the end of
// input or the connection closes. It reads nothing ahead of what the pipe
// already holds, and a line it hands over stays valid until Read asks for
// the next one: the lines are read into one buffer of MaxLineBytes (its
// pages are only touched as far as the longest line), never copied whole,
// so a 16 MiB line costs 16 MiB once, not again for every line.
func (c *lineConn) readLines() {
	for {
		select {
		case <-c.want:
		case <-c.closed:
			return
		}
		l := readLine(c.in)
		select {
		case c.lines <- l:
		case <-c.closed:
			return
		}
		if l.err != nil {
			return
		}
	}
}

// readLine reads one line, a slice of r's buffer, valid until the next
// read. A line longer than MaxLineBytes is skipped to its end and reported
// as too long. A broken input ends the session like its end.
func readLine(r *bufio.Reader) line {
	data, err := r.ReadSlice('\n')
	tooLong := false
	for err == bufio.ErrBufferFull { // longer than the bound and a CRLF
		tooLong, data = true, nil
		_, err = r.ReadSlice('\n')
	}
	// The bound is on the line itself, its LF or CRLF aside.
	content := len(data)
	if content > 0 && data[content-1] == '\n' {
		content--
		if content > 0 && data[content-1] == '\r' {
			content--
		}
	}
	if content > MaxLineBytes {
		tooLong, data = true, nil
	}
	l := line{data: data, tooLong: tooLong}
	if err != nil {
		l.err = io.EOF
		if len(data) > 0 || tooLong {
			l.err = nil // the last line first; the end comes with the next read
		}
	}
	return l
}

// Read implements sdk.Connection: the next acceptable message. Lines that
// are not are answered here and skipped. At the end of input, or when the
// server is told to stop, Read waits until every call it handed over has
// been answered, then reports io.EOF.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		select {
		case <-c.stop: // a stop takes no more calls, even one already read
			return nil, c.drain()
		default:
		}
		if err := c.wait(ctx); err != nil {
			return nil, err
		}
		want := c.want
		if c.reading {
			want = nil // a line is asked for: this case is never taken
		}
		select {
		case want <- struct{}{}:
			c.reading = true
		case l := <-c.lines:
			c.reading = false
			if l.err != nil {
				return nil, c.drain()
			}
			if msg, err := c.take(l); msg != nil || err != nil {
				return msg, err
			}
		case <-c.stop:
			return nil, c.drain()
		case <-c.closed:
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// wait waits until the next line may be read: no tools/call is still on
// its way to its place, and the calls in flight hold less than
// MaxHeldBytes.
func (c *lineConn) wait(ctx context.Context) error {
	for {
		c.mu.Lock()
		ready := c.alone == nil && c.held < MaxHeldBytes
		c.mu.Unlock()
		if ready {
			return nil
		}
		select {
		case <-c.changed:
		case <-c.stop:
			return c.drain()
		case <-c.closed:
			return io.EOF
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// signal tells a waiting Read that the calls in flight changed.
func (c *lineConn) signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// take decodes one line and returns the message to hand to the SDK, or nil
// when the line was answered here, blank, or a cancellation for one of the
// calls in flight (which also goes to the SDK).
func (c *lineConn) take(l line) (jsonrpc.Message, error) {
	m, refusal := decodeLine(l)
	if refusal != nil {
		return nil, c.writeLine(refusal)
	}
	if m == nil {
		return nil, nil // a blank line
	}
	req, ok := m.msg.(*jsonrpc.Request)
	if !ok {
		return m.msg, nil
	}
	if !req.IsCall() {
		if m.cancels.IsValid() {
			c.cancelCall(m.cancels)
		}
		return req, nil
	}
	cl := &pending{req: req, extra: &sdk.RequestExtra{}, held: callBytes + m.heldBytes(),
		toolCall: m.toolCall, tool: m.tool, arguments: bytes.Clone(m.arguments), // the line is the reader's
		idBytes: len(idText(req.ID)), outsideHeld: m.heldBytes(), hasMeta: m.hasMeta}
	if m.toolCall {
		cl.held += len(m.arguments) // its own copy of its arguments
	}
	req.Extra = cl.extra
	c.mu.Lock()
	if _, busy := c.inFlight[req.ID]; busy {
		c.mu.Unlock()
		return nil, c.writeLine(rpcError(idText(req.ID), jsonrpc.CodeInvalidRequest, "Invalid Request: a call with this id is still in flight"))
	}
	c.inFlight[req.ID] = cl
	c.byExtra[cl.extra] = cl
	c.held += cl.held
	if m.toolCall {
		c.alone = cl
	}
	c.mu.Unlock()
	return req, nil
}

// cancelCall cancels the call in flight with id, or the call once it is
// admitted, if it has not been.
func (c *lineConn) cancelCall(id jsonrpc.ID) {
	c.mu.Lock()
	cl := c.inFlight[id]
	var cancel context.CancelFunc
	if cl != nil {
		cl.cancelled = true
		cancel = cl.cancel
	}
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// admit is the SDK middleware that hands a tools/call to its handler: the
// call drops what it no longer needs of its line, and its handler's
// context is cancelled by cancelCall. Any other request gets the hook
// that keeps a resource read's compute slot until its answer is written.
func (c *lineConn) admit(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		c.mu.Lock()
		cl := c.byExtra[req.GetExtra()]
		c.mu.Unlock()
		if cl == nil {
			return next(ctx, method, req)
		}
		if !cl.toolCall {
			// A read, like a call, gives its compute slot back once its
			// answer is written (protocol §9.8), so that answers not yet
			// written count against the slots.
			return next(context.WithValue(ctx, keepKey{}, func(release func()) { c.keep(cl, release) }), method, req)
		}
		if p, ok := req.GetParams().(*sdk.CallToolParamsRaw); ok {
			// The SDK decoded these from the line and only hands them on.
			p.Meta, p.InputResponses, p.RequestState = nil, nil, ""
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		c.mu.Lock()
		arguments := cl.arguments
		cl.req.Params = nil // the SDK's copy of the params
		held := callBytes + len(arguments) + cl.idBytes
		if cl.hasMeta { // the SDK keeps a 2026-07-28 call's decoded capabilities
			held += cl.outsideHeld
		}
		c.held += held - cl.held
		cl.held = held
		cl.arguments = arguments
		cl.admitted, cl.cancel = true, cancel
		cancelled := cl.cancelled
		c.mu.Unlock()
		c.signal()
		if cancelled {
			cancel()
		}
		return next(context.WithValue(ctx, hooksKey{}, &hooks{c: c, cl: cl}), method, req)
	}
}

// hooksKey is the context key of the hooks of the call a handler serves
// over the line transport.
type hooksKey struct{}

// hooks are what the handler of a call over the line transport does
// with the connection.
type hooks struct {
	c  *lineConn
	cl *pending
}

// hooksOf is the hooks of the call the handler of ctx serves, or nil.
func hooksOf(ctx context.Context) *hooks {
	h, _ := ctx.Value(hooksKey{}).(*hooks)
	return h
}

// arguments are the call's arguments as they arrived.
func (h *hooks) arguments() []byte {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	args := h.cl.arguments
	h.cl.arguments = nil
	return args
}

// arrived lets the connection read its next line: the call has its place.
func (h *hooks) arrived() {
	h.c.mu.Lock()
	if h.c.alone == h.cl {
		h.c.alone = nil
	}
	h.c.mu.Unlock()
	h.c.signal()
}

// keep gives the call's compute slot back once its answer is written.
func (h *hooks) keep(release func()) { h.c.keep(h.cl, release) }

// keep holds release, which gives a compute slot back, until the answer
// of cl is written; at once when it already was.
func (c *lineConn) keep(cl *pending, release func()) {
	c.mu.Lock()
	if c.inFlight[cl.req.ID] == cl { // not yet answered: always, from a handler
		cl.release, release = release, nil
	}
	c.mu.Unlock()
	if release != nil {
		release()
	}
}

// keepKey is the context key of the hook a resource read over the line
// transport hands its compute slot's release to (lineConn.keep).
type keepKey struct{}

// keeperOf is the hook of ctx that keeps a read's compute slot until its
// answer is written, or nil when the read is not served over the line
// transport (the slot is then given back when the read returns).
func keeperOf(ctx context.Context) func(release func()) {
	keep, _ := ctx.Value(keepKey{}).(func(release func()))
	return keep
}

// drain waits until no call is waiting for its answer, or the connection
// closes, and returns io.EOF.
func (c *lineConn) drain() error {
	c.mu.Lock()
	for len(c.inFlight) > 0 && !c.done {
		c.idle.Wait()
	}
	c.mu.Unlock()
	// The last answer's ID leaves the set just before its line is
	// written, under wmu: wait for that write to finish.
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return io.EOF
}

// Write implements sdk.Connection: one message, one line, one write.
func (c *lineConn) Write(_ context.Context, msg jsonrpc.Message) error {
	var cl *pending
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		cl = c.inFlight[resp.ID]
		c.mu.Unlock()
		msg = c.answerUnhandled(resp, cl)
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if resp, ok := msg.(*jsonrpc.Response); ok && err != nil {
		// Still an answer, so that the call leaves the calls in flight and
		// gives its compute slot back.
		data, err = rpcError(idText(resp.ID), jsonrpc.CodeInternalError, "Internal error: the answer could not be encoded"), nil
	}
	if err != nil {
		return err
	}
	c.wmu.Lock()
	if cl != nil {
		// The ID is free again before the client can see the answer, so a
		// client that reuses it at once is not refused; drain, which may
		// see the set empty now, waits on wmu for this line to be written.
		c.mu.Lock()
		delete(c.inFlight, cl.req.ID)
		delete(c.byExtra, cl.extra)
		if c.alone == cl {
			c.alone = nil
		}
		c.idle.Broadcast()
		c.mu.Unlock()
	}
	err = c.writeLocked(data)
	c.wmu.Unlock()
	if cl != nil {
		c.mu.Lock()
		c.held -= cl.held
		release := cl.release
		cl.release = nil
		c.mu.Unlock()
		c.signal()
		if release != nil {
			release()
		}
	}
	return err
}

// answerUnhandled returns the response to write for resp: the tool's own
// answer when resp is the SDK's cancellation error for a tools/call whose
// handler never ran (the handler never answers with an error), else resp.
func (c *lineConn) answerUnhandled(resp *jsonrpc.Response, cl *pending) jsonrpc.Message {
	if c.unhandled == nil || cl == nil || resp.Error == nil || !errors.Is(resp.Error, context.Canceled) {
		return resp
	}
	c.mu.Lock()
	admitted, tool, arguments := cl.admitted, cl.tool, cl.arguments
	c.mu.Unlock()
	if !cl.toolCall || admitted {
		return resp
	}
	result, ok := c.unhandled(tool, arguments)
	if !ok {
		return resp
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return resp
	}
	return &jsonrpc.Response{ID: resp.ID, Result: raw}
}

func (c *lineConn) writeLine(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(data)
}

// writeLocked writes one line; the caller holds wmu.
func (c *lineConn) writeLocked(data []byte) error {
	_, err := c.out.Write(append(data, '\n'))
	return err
}

// Close implements sdk.Connection.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.mu.Lock()
		c.done = true
		c.idle.Broadcast()
		c.mu.Unlock()
	})
	return nil
}

// SessionID implements sdk.Connection; a stdio session has none.
func (c *lineConn) SessionID() string { return "" }

// idText is the JSON text of id.
func idText(id jsonrpc.ID) []byte {
	b, _ := json.Marshal(id.Raw())
	return b
}
