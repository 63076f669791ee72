package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/domain/strictjson"
)

// MaxLineBytes is the longest message line the server reads; a longer one
// is answered -32600 without being held in memory whole.
const MaxLineBytes = 16 << 20

// lineTransport is the server's stdio transport, in front of the SDK: one
// JSON-RPC message per line, with the strict checks of SPEC §9 on every
// line. It answers a line that is not JSON (-32700) or not an acceptable
// JSON-RPC 2.0 message (-32600) itself and keeps the session going, and it
// holds end of input (and the stop signal) back until every call it handed
// to the SDK has been answered.
type lineTransport struct {
	in        io.Reader
	out       io.Writer
	stop      <-chan struct{}
	unhandled Unhandled
}

// Unhandled answers, as the tool's handler would have, a tools/call that
// the SDK cancelled before the handler ran: tool and arguments are the
// call's params.name and the raw bytes of params.arguments. It reports
// false for a name that is not one of the tools.
type Unhandled func(tool string, arguments json.RawMessage) (*sdk.CallToolResult, bool)

// LineTransport returns the server's line transport over in and out. When
// stop is closed the server stops taking calls and ends its session once
// the calls in flight are answered; nil never stops. The SDK answers a
// call cancelled while it waited for a handler with a JSON-RPC error of
// its own; unhandled, when not nil, answers it instead, so that every call of
// a tool gets the tool's answer (SPEC §9: CANCELLED, never an error of
// the protocol) and is recorded.
func LineTransport(in io.Reader, out io.Writer, stop <-chan struct{}, unhandled Unhandled) sdk.Transport {
	return &lineTransport{in: in, out: out, stop: stop, unhandled: unhandled}
}

// Connect implements sdk.Transport.
func (t *lineTransport) Connect(context.Context) (sdk.Connection, error) {
	c := &lineConn{out: t.out, stop: t.stop, unhandled: t.unhandled, lines: make(chan line), closed: make(chan struct{}), inFlight: map[jsonrpc.ID]*jsonrpc.Request{}}
	c.idle = sync.NewCond(&c.mu)
	go c.readLines(t.in)
	return c, nil
}

// line is one input line, or the end of input.
type line struct {
	data    []byte
	tooLong bool
	err     error // io.EOF at the end of input
}

// lineConn is one session's connection.
type lineConn struct {
	out       io.Writer
	wmu       sync.Mutex // one line at a time
	stop      <-chan struct{}
	unhandled Unhandled
	lines     chan line

	mu   sync.Mutex
	idle *sync.Cond // signalled when a call is answered
	// inFlight holds the calls handed to the SDK and not yet answered, by
	// ID. A call whose ID is in it is refused here: the SDK would answer it
	// with nothing, and the session could never end.
	inFlight map[jsonrpc.ID]*jsonrpc.Request
	done     bool // the connection is closed

	closeOnce sync.Once
	closed    chan struct{}
}

var _ sdk.Connection = (*lineConn)(nil)

// readLines reads the input line by line into c.lines until the end of
// input or the connection closes. A line longer than MaxLineBytes is
// skipped to its end and reported as too long.
func (c *lineConn) readLines(in io.Reader) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		var data []byte
		tooLong := false
		var err error
		for {
			var chunk []byte
			chunk, err = r.ReadSlice('\n')
			if !tooLong {
				if len(data)+len(chunk) > MaxLineBytes+2 { // never more than the bound and a CRLF
					tooLong, data = true, nil
				} else {
					data = append(data, chunk...)
				}
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		// The bound is on the line itself, its LF or CRLF aside.
		if content := bytes.TrimSuffix(bytes.TrimSuffix(data, []byte("\n")), []byte("\r")); len(content) > MaxLineBytes {
			tooLong, data = true, nil
		}
		if len(data) > 0 || tooLong {
			select {
			case c.lines <- line{data: data, tooLong: tooLong}:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				err = io.EOF // a broken input ends the session like its end
			}
			select {
			case c.lines <- line{err: err}:
			case <-c.closed:
			}
			return
		}
	}
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
		select {
		case l := <-c.lines:
			if l.err != nil {
				return nil, c.drain()
			}
			msg, refusal := decodeLine(l)
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && !c.take(req) {
				refusal = rpcError(idOf(l.data), jsonrpc.CodeInvalidRequest, "Invalid Request: a call with this id is still in flight")
			}
			if refusal != nil {
				if err := c.writeLine(refusal); err != nil {
					return nil, err
				}
				continue
			}
			if msg == nil {
				continue // a blank line
			}
			return msg, nil
		case <-c.stop:
			return nil, c.drain()
		case <-c.closed:
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// take records the call as in flight, and reports false when a call with
// its id already is.
func (c *lineConn) take(req *jsonrpc.Request) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, busy := c.inFlight[req.ID]; busy {
		return false
	}
	c.inFlight[req.ID] = req
	return true
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
	if resp, ok := msg.(*jsonrpc.Response); ok {
		msg = c.answerUnhandled(resp)
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if resp, ok := msg.(*jsonrpc.Response); ok {
		// The ID is free again before the client can see the answer, so a
		// client that reuses it at once is not refused; drain, which may
		// see the set empty now, waits on wmu for this line to be written.
		c.mu.Lock()
		delete(c.inFlight, resp.ID)
		c.idle.Broadcast()
		c.mu.Unlock()
	}
	return c.writeLocked(data)
}

// answerUnhandled returns the response to write for resp: the tool's own
// answer when resp is the SDK's cancellation error for a tools/call whose
// handler never ran (the handler never answers with an error), else resp.
func (c *lineConn) answerUnhandled(resp *jsonrpc.Response) jsonrpc.Message {
	if c.unhandled == nil || resp.Error == nil || !errors.Is(resp.Error, context.Canceled) {
		return resp
	}
	c.mu.Lock()
	req := c.inFlight[resp.ID]
	c.mu.Unlock()
	if req == nil || req.Method != "tools/call" {
		return resp
	}
	var params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(req.Params, &params) != nil {
		return resp
	}
	result, ok := c.unhandled(params.Name, params.Arguments)
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

// decodeLine applies SPEC §9 to one line: nil, nil for a blank line; the
// message to hand to the SDK; or the JSON-RPC error line to answer
// instead.
func decodeLine(l line) (jsonrpc.Message, []byte) {
	if l.tooLong {
		return nil, rpcError(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: the line is longer than 16 MiB")
	}
	data := bytes.TrimSuffix(bytes.TrimSuffix(l.data, []byte("\n")), []byte("\r"))
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	// A line that passes the strict parse is valid UTF-8 and valid JSON;
	// only one that fails it is looked at again, to tell which it is.
	v, err := strictjson.Parse(data)
	if err != nil {
		if !utf8.Valid(data) || !json.Valid(data) {
			return nil, rpcError(nil, jsonrpc.CodeParseError, "Parse error: the line is not JSON")
		}
		var ok bool
		if v, ok = strictOutsideArguments(data); !ok {
			return nil, rpcError(idOf(data), jsonrpc.CodeInvalidRequest, "Invalid Request: a duplicate key, or a string that is not valid Unicode, outside params.arguments")
		}
	}
	if v.Kind != strictjson.Object {
		return nil, rpcError(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: a message is one JSON object; batches are not accepted")
	}
	// MCP ids are strings or integers. The SDK would read 5.5 or 1e1 as 5
	// or 10 and answer under an id that was never sent, and take a null id
	// for no id and answer nothing.
	if id, ok := v.Get("id"); ok && !validID(id) {
		return nil, rpcError(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: id must be a string or an integer")
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return nil, rpcError(idOf(data), jsonrpc.CodeInvalidRequest, "Invalid Request: not a JSON-RPC 2.0 message")
	}
	return msg, nil
}

// validID reports whether a message's id is one MCP allows: a string, or
// an integer written as one that fits in 64 bits.
func validID(id strictjson.Value) bool {
	switch id.Kind {
	case strictjson.String:
		return true
	case strictjson.Number:
		_, err := strconv.ParseInt(id.Text, 10, 64)
		return err == nil
	}
	return false
}

// strictOutsideArguments parses data, valid JSON that failed the strict
// check, once more with the value of params.arguments set aside, and
// reports whether that passes: the fault is then inside the tool's
// arguments, which the tool itself answers (INVALID_JSON). The value it
// returns is the message without its arguments.
func strictOutsideArguments(data []byte) (strictjson.Value, bool) {
	start, end, ok := argumentsSpan(data)
	if !ok {
		return strictjson.Value{}, false
	}
	rest := append(append(append([]byte{}, data[:start]...), "{}"...), data[end:]...)
	v, err := strictjson.Parse(rest)
	return v, err == nil
}

// argumentsSpan finds the byte span of the value of params.arguments in
// the valid JSON object data, the first of each key.
func argumentsSpan(data []byte) (start, end int, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, 0, false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return 0, 0, false
		}
		if key != "params" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return 0, 0, false
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return 0, 0, false
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return 0, 0, false
			}
			before := dec.InputOffset()
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				return 0, 0, false
			}
			if k == "arguments" {
				after := int(dec.InputOffset())
				// The value starts after the colon and white space.
				s := int(before)
				for s < after && (data[s] == ':' || data[s] == ' ' || data[s] == '\t' || data[s] == '\n' || data[s] == '\r') {
					s++
				}
				return s, after, true
			}
		}
		return 0, 0, false
	}
	return 0, 0, false
}

// idOf returns the line's "id" when it is present once and valid (a
// string, or a number that is an integer), as its JSON literal; else nil.
func idOf(data []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var id json.RawMessage
	seen := 0
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil
		}
		if key == "id" {
			seen++
			id = v
		}
	}
	if seen != 1 {
		return nil
	}
	if id[0] == '"' { // json.Unmarshal would take null for a string too
		return id
	}
	if _, err := strconv.ParseInt(string(id), 10, 64); err == nil {
		return id
	}
	return nil
}

// rpcError is a JSON-RPC error response line (without its newline) for
// the id, or id null.
func rpcError(id json.RawMessage, code int64, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	return data
}
