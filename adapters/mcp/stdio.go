package mcp

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/adapters/mcp/message"
	"github.com/metricproof/metricproof/app/ledger"
)

// MaxHeldBytes bounds what the calls read and not yet answered hold
// (protocol §9.8), as message.Facts.HeldBytes counts it: at or past it,
// the stdio server reads no further line until a call is answered, and
// the HTTP one refuses a call.
const MaxHeldBytes = 16 << 20

// The stdio transport is the SDK's own (sdk.IOTransport), over a
// decorated byte stream (stream): every line goes through the checker
// before the SDK reads it, and the lines the checker refuses are answered
// on the same writer the SDK writes to, a line at a time. The stream also
// does what the SDK's transport cannot:
//
//   - It bounds the load. Every call it hands over is counted, by its
//     JSON-RPC id, at what it holds until the answer with that id is
//     written; at MaxHeldBytes it reads no further line.
//   - It keeps calls in arrival order. A tools/call or resources/read is
//     handed over alone: the next line is read once its handler has taken
//     its place in the service's lines (or the SDK answered it without
//     one). That is how a handler knows which call it serves
//     (stream.Start): the one handed over last.
//   - It gives a call's compute slot back once its answer is written
//     (call.Answer.Done), so that answers waiting to be written count
//     against the slots.
//   - It cancels a call at once when its notifications/cancelled is read,
//     before the next line; and drops a cancellation whose requestId is no
//     valid id, which the SDK would read as another (1.5 as 1).
//   - It refuses a call whose id is still in flight (the SDK would answer
//     it with a null id), and holds end of input, and a stop, back until
//     every call it handed over is answered: the SDK cancels the calls in
//     flight when its input ends.

// serveStdio serves server, whose handlers have st for their carrier,
// over st until its input ends or it is stopped, and every call it read
// is answered. Its error is a session that could not start.
func serveStdio(ctx context.Context, server *sdk.Server, st *stream) error {
	go st.readLines()
	session, err := server.Connect(ctx, &sdk.IOTransport{
		Reader: sdkReader{st},
		Writer: sdkWriter{st},
		// The checker bounds every line; the SDK's own bound sits just
		// above it, so that it never trips on a line the checker let
		// through (its count includes the line end before the line).
		MaxLineLength: message.MaxLineBytes + 1<<10,
	}, nil)
	if err != nil {
		return err
	}
	_ = session.Wait() // the end of input, or a stop after the calls in flight
	return nil
}

// smallLineBytes is the buffer every line is read through; a longer line
// is gathered in a buffer of its own (stream.big).
const smallLineBytes = 64 << 10

// stream is one stdio session's byte stream, between the process's
// standard input and output and the SDK's transport.
type stream struct {
	in *bufio.Reader
	// big holds a line longer than smallLineBytes until the SDK has read
	// it; its bytes are touched only as far as the line (the reading
	// goroutine's, and Read's once the line is handed over).
	big  []byte
	out  io.Writer
	wmu  sync.Mutex // one line at a time, ours and the SDK's
	stop <-chan struct{}

	// The reading goroutine reads a line when asked (want), and hands it
	// over (lines); the line stays valid until the next is asked for.
	want  chan struct{}
	lines chan inLine
	// cur is what is left of the line the SDK is reading; asked reports
	// a line asked for and not yet received. Read's own.
	cur   []byte
	asked bool

	mu       sync.Mutex
	changed  chan struct{} // a call was claimed or answered
	inFlight map[any]*entry
	held     int
	// pending is the call or read handed over last that takes a compute
	// slot, until its handler claims it and it has its place; no line is
	// read meanwhile.
	pending *entry
	done    bool // the SDK closed the stream
	closed  chan struct{}
	once    sync.Once
}

// entry is one call handed to the SDK and not yet answered.
type entry struct {
	held int
	// cancel cancels the call's handler, once it has claimed the call;
	// cancelled records a cancellation that came before.
	cancel    context.CancelFunc
	cancelled bool
	// release gives the call's compute slot back; the handler sets it.
	release func()
	// argsSHA256 is, for a call whose arguments the SDK did not get (they
	// were longer than the request limit), their SHA256.
	argsSHA256 string
}

// inLine is one input line, or the end of input.
type inLine struct {
	data    []byte // without its LF or CRLF
	tooLong bool
	err     error // io.EOF at the end of input
}

func newStream(in io.Reader, out io.Writer, stop <-chan struct{}) *stream {
	return &stream{
		in: bufio.NewReaderSize(in, smallLineBytes), out: out, stop: stop,
		want: make(chan struct{}), lines: make(chan inLine), changed: make(chan struct{}, 1),
		inFlight: map[any]*entry{}, closed: make(chan struct{}),
	}
}

// readLines reads one line each time the stream asks for one, until the
// end of input or the stream closes. It reads nothing ahead of what the
// pipe already holds.
func (st *stream) readLines() {
	for {
		select {
		case <-st.want:
		case <-st.closed:
			return
		}
		l := st.readLine()
		select {
		case st.lines <- l:
		case <-st.closed:
			return
		}
		if l.err != nil {
			return
		}
	}
}

// readLine reads one line, valid until the next read: a slice of the
// reader's buffer, or of big for a long one. A line longer than
// message.MaxLineBytes is skipped to its end, never held whole, and
// reported as too long. A broken input ends the session like its end.
func (st *stream) readLine() inLine {
	data, err := st.in.ReadSlice('\n')
	tooLong := false
	if err == bufio.ErrBufferFull {
		if st.big == nil {
			st.big = make([]byte, 0, message.MaxLineBytes+2) // its pages are touched as it fills
		}
		st.big = append(st.big[:0], data...)
		for err == bufio.ErrBufferFull {
			data, err = st.in.ReadSlice('\n')
			if tooLong = tooLong || len(st.big)+len(data) > message.MaxLineBytes+2; !tooLong {
				st.big = append(st.big, data...)
			}
		}
		data = st.big
		if tooLong { // longer than the bound and a CRLF
			data = nil
		}
	}
	// The bound is on the line itself, its LF or CRLF aside.
	data = bytes.TrimSuffix(data, []byte("\n"))
	data = bytes.TrimSuffix(data, []byte("\r"))
	if len(data) > message.MaxLineBytes {
		tooLong, data = true, nil
	}
	l := inLine{data: data, tooLong: tooLong}
	if err != nil {
		l.err = io.EOF
		if len(data) > 0 || tooLong {
			l.err = nil // the last line first; the end comes with the next read
		}
	}
	return l
}

// sdkReader is the stream as the SDK's transport reads it: the lines that
// passed the checker, each ending in a newline.
type sdkReader struct{ st *stream }

// Read hands the SDK the next bytes of the lines that passed. At the end
// of input, or once stopped, it waits until every call it handed over
// has been answered, then reports io.EOF.
func (r sdkReader) Read(p []byte) (int, error) {
	st := r.st
	for len(st.cur) == 0 {
		if err := st.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, st.cur)
	st.cur = st.cur[n:]
	return n, nil
}

// Close ends the stream: its readers and waiters return.
func (r sdkReader) Close() error {
	r.st.once.Do(func() {
		close(r.st.closed)
		r.st.mu.Lock()
		r.st.done = true
		r.st.mu.Unlock()
		r.st.signal()
	})
	return nil
}

// next makes the next line that passes the checker the current one.
func (st *stream) next() error {
	st.freeBig()
	select {
	case <-st.stop: // a stop takes no more calls, even one already read
		return st.drain()
	default:
	}
	if err := st.ready(); err != nil {
		return err
	}
	want := st.want
	if st.asked {
		want = nil // a line is asked for: this case is never taken
	}
	select {
	case want <- struct{}{}:
		st.asked = true
		return nil
	case l := <-st.lines:
		st.asked = false
		if l.err != nil {
			return st.drain()
		}
		st.take(l)
		return nil
	case <-st.stop:
		return st.drain()
	case <-st.closed:
		return io.EOF
	}
}

// freeBig lets the buffer of a long line go once the SDK has read it, so
// that a server that once read a 16 MiB line does not keep 16 MiB.
func (st *stream) freeBig() {
	if !st.asked {
		st.big = nil
	}
}

// ready waits until the next line may be read: no call handed over is
// still on its way to its place, and the calls in flight hold less than
// MaxHeldBytes.
func (st *stream) ready() error {
	for {
		st.mu.Lock()
		ready := st.pending == nil && st.held < MaxHeldBytes
		st.mu.Unlock()
		if ready {
			return nil
		}
		select {
		case <-st.changed:
		case <-st.stop:
			return st.drain()
		case <-st.closed:
			return io.EOF
		}
	}
}

// signal tells a waiting reader that the calls in flight changed.
func (st *stream) signal() {
	select {
	case st.changed <- struct{}{}:
	default:
	}
}

// take checks one line and makes it the current one for the SDK, or
// answers it here: a refusal, a blank line, a call whose id is in flight,
// a cancellation that names no call.
func (st *stream) take(l inLine) {
	if l.tooLong {
		st.writeLine(message.Refusal(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: the line is longer than 16 MiB"))
		return
	}
	m, refusal := message.Check(l.data)
	switch {
	case refusal != nil:
		st.writeLine(refusal)
		return
	case m.Blank || m.Drop:
		return
	}
	if m.Cancels != nil {
		st.cancel(m.Cancels)
	}
	if m.Call {
		st.mu.Lock()
		if _, busy := st.inFlight[m.ID]; busy {
			st.mu.Unlock()
			st.writeLine(message.Refusal(m.IDText, jsonrpc.CodeInvalidRequest, "Invalid Request: a call with this id is still in flight"))
			return
		}
		e := &entry{held: m.HeldBytes, argsSHA256: m.ArgsSHA256}
		st.inFlight[m.ID] = e
		st.held += e.held
		if m.Slotted {
			st.pending = e
		}
		st.mu.Unlock()
	}
	// The SDK's decoder takes one value a line, with nothing after it but
	// the line end. (The newline goes where the line's own end, or white
	// space, was, or after a body of the checker's own.)
	st.cur = append(bytes.Trim(m.Body, " \t\r\n"), '\n')
}

// cancel cancels the call in flight with id, at once, or when its handler
// claims it.
func (st *stream) cancel(id any) {
	st.mu.Lock()
	e := st.inFlight[id]
	var cancel context.CancelFunc
	if e != nil {
		e.cancelled, cancel = true, e.cancel
	}
	st.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// drain waits until no call is waiting for its answer, or the stream
// closes, and returns io.EOF.
func (st *stream) drain() error {
	for {
		st.mu.Lock()
		idle := len(st.inFlight) == 0 || st.done
		st.mu.Unlock()
		if idle {
			break
		}
		select {
		case <-st.changed:
		case <-st.closed:
		}
	}
	// The last answer's id leaves the set just before its line is
	// written, under wmu: wait for that write to finish.
	st.wmu.Lock()
	defer st.wmu.Unlock()
	return io.EOF
}

// Start is Carrier.Start: the handler now starting serves the call handed
// over last.
func (st *stream) Start(ctx context.Context) (context.Context, Call) {
	ctx, cancel := context.WithCancel(ctx)
	st.mu.Lock()
	e := st.pending
	if e != nil {
		e.cancel = cancel
		if e.cancelled {
			cancel()
		}
	}
	st.mu.Unlock()
	return ctx, streamCall{st: st, e: e, cancel: cancel}
}

// streamCall is one handler's call in the stream.
type streamCall struct {
	st     *stream
	e      *entry // nil when the stream handed over no such call
	cancel context.CancelFunc
}

// Arrived lets the stream read on: the call has its place.
func (c streamCall) Arrived() {
	c.st.mu.Lock()
	if c.st.pending == c.e {
		c.st.pending = nil
	}
	c.st.mu.Unlock()
	c.st.signal()
}

// HeldBack reports the SHA256 of the call's arguments when the SDK did not
// get them (message.Facts.ArgsSHA256).
func (c streamCall) HeldBack() (string, bool) {
	if c.e == nil || c.e.argsSHA256 == "" {
		return "", false
	}
	return c.e.argsSHA256, true
}

// Caller is nobody the stream can name: a stdio record names no principal.
func (c streamCall) Caller() ledger.Caller { return ledger.Caller{} }

// Answered holds release until the call's answer is written.
func (c streamCall) Answered(release func()) {
	c.cancel()
	if c.e == nil {
		release()
		return
	}
	c.st.mu.Lock()
	c.e.release = release
	c.st.mu.Unlock()
}

// sdkWriter is the stream as the SDK's transport writes to it: one
// message a write, which ends in a newline.
type sdkWriter struct{ st *stream }

// Write writes one message of the SDK's as one line. An answer ends its
// call: the call leaves the calls in flight before its line is written
// (so a client that reuses its id at once is not refused), and gives its
// compute slot back once it is.
func (w sdkWriter) Write(p []byte) (int, error) {
	st := w.st
	var e *entry
	if id, ok := message.AnswerID(p); ok {
		st.mu.Lock()
		if e = st.inFlight[id]; e != nil {
			delete(st.inFlight, id)
			if st.pending == e { // answered without a handler
				st.pending = nil
			}
		}
		st.mu.Unlock()
	}
	st.wmu.Lock()
	n, err := st.out.Write(p)
	st.wmu.Unlock()
	if e != nil {
		st.mu.Lock()
		st.held -= e.held
		release := e.release
		st.mu.Unlock()
		st.signal()
		if release != nil {
			release()
		}
	}
	return n, err
}

// Close does nothing: standard output stays open for the process.
func (w sdkWriter) Close() error { return nil }

// writeLine writes one line of the stream's own.
func (st *stream) writeLine(data []byte) {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	_, _ = st.out.Write(append(data, '\n'))
}
