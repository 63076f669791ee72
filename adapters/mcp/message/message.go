// Package message is the checker of protocol §9.7: a pure function over
// one MCP message's bytes (a line of the stdio transport, a POST body of
// the HTTP one) that either lets it through to the SDK, with what the
// transport needs to know of it, or gives the JSON-RPC error to answer
// instead: what is not JSON (-32700), what is not an acceptable JSON-RPC
// 2.0 message (-32600), and what the SDK's own transport would mishandle
// (an id it would round, a depth it would end the session on). It builds
// no tree of the message: a 16 MiB line of tiny values costs its own
// bytes.
package message

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
)

// The bounds on one message.
const (
	// MaxLineBytes is the longest message the server reads (a line without
	// its end, or a body); a longer one is refused without being held whole.
	MaxLineBytes = 16 << 20
	// MaxOutsideBytes is the most a message may hold outside the value of
	// params.arguments: no message this server takes needs more.
	MaxOutsideBytes = 1 << 20
	// MaxOutsideValues is the most JSON values (object names included) a
	// message may hold outside params.arguments. The SDK decodes _meta, ids
	// and capabilities into trees of Go values at up to about 160 bytes a
	// value (1 MiB of [[],[],…] is 70 MiB of tree, and it decodes a call's
	// _meta twice), so a line must be bounded in values as well as in bytes
	// to cost at most a few times its own size.
	MaxOutsideValues = 1 << 16
	// MaxDepth is the deepest a message may nest (the message itself is
	// level 1), arguments included: the SDK's decoder refuses a deeper
	// one, and its transport would then end the session.
	MaxDepth = 1000
	// callBytes is what a call holds besides its bytes, counted for every
	// call: the goroutine that serves it, the SDK's request, the
	// connection's own record: 12.3 KiB a waiting call, measured as the
	// RSS of a server with GOGC=1 before and after 800 verify calls queued
	// behind a held slot.
	callBytes = 16 << 10
	// maxID is the largest integer id: every JSON client represents the
	// integers within ±(2^53−1) exactly.
	maxID = 1<<53 - 1
)

// Facts are what a transport needs to know of a message that passed.
type Facts struct {
	// Blank: nothing but white space (a stdio line skips it).
	Blank bool
	// Call: a request with an id, which the SDK answers, once; ID is its
	// id as a key (a string or an int64), IDText its JSON text as sent.
	Call   bool
	ID     any
	IDText []byte
	// Slotted: a tools/call or a resources/read, which takes a compute
	// slot once its handler starts.
	Slotted bool
	// Method is the request's or notification's method; Tool the name a
	// tools/call gives (its scope over HTTP depends on it).
	Method, Tool string
	// Cancels is the id a notifications/cancelled names, when it is a
	// valid one; Drop marks one that names none, which the SDK would read
	// wrongly (1.5 as 1) and which cancels nothing.
	Cancels any
	Drop    bool
	// HeldBytes is what the SDK holds of the message until it answers it
	// (protocol §9.8): the bytes, the params it keeps, the arguments it
	// copies, and the trees it decodes (about 160 bytes a value outside
	// the arguments).
	HeldBytes int
	// Body is what the SDK gets: the message's bytes, but for arguments
	// longer than the request limit, which are replaced by {}. The SDK
	// would copy a line of them four times over, 90 MiB live for 16 MiB;
	// the only answer to them is REQUEST_LIMIT, so the tool needs only
	// their SHA256, ArgsSHA256 ("" when the SDK gets them).
	Body       []byte
	ArgsSHA256 string
}

// scanned is what the first pass learned of a line.
type scanned struct {
	values           int            // values outside params.arguments
	argStart, argEnd int            // the span of params.arguments; argEnd 0 when absent
	ids              int            // how many "id" members the message has
	id               jsontext.Value // the last of them
	requestID        jsontext.Value // params.requestId
	dec              *jsontext.Decoder
	data             []byte
}

// Check applies protocol §9.7 to one message's bytes, data (a line without
// its LF or CRLF): its facts, or the JSON-RPC error to answer instead. A
// first pass reads its tokens (a message that is not JSON is -32700,
// wherever its fault), measuring what lies outside params.arguments and
// finding the members the checks need; a second, over the message without
// params.arguments, refuses duplicate names and strings that are not
// Unicode there (-32600). Inside params.arguments those are the tool's to
// answer (INVALID_JSON).
func Check(data []byte) (Facts, []byte) {
	if len(bytes.TrimSpace(data)) == 0 {
		return Facts{Blank: true}, nil
	}
	notJSON := Refusal(nil, jsonrpc.CodeParseError, "Parse error: the line is not JSON")
	if !utf8.Valid(data) {
		return Facts{}, notJSON
	}
	s := &scanned{data: data, dec: jsontext.NewDecoder(bytes.NewBuffer(data),
		jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))}
	object, err := s.scan()
	if err != nil {
		return Facts{}, notJSON
	}
	if !object {
		return Facts{}, Refusal(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: a message is one JSON object; batches are not accepted")
	}
	outside := len(data) - (s.argEnd - s.argStart)
	switch {
	case outside > MaxOutsideBytes:
		return Facts{}, Refusal(s.validID(), jsonrpc.CodeInvalidRequest, "Invalid Request: the message holds more than 1 MiB outside params.arguments")
	case s.values > MaxOutsideValues:
		return Facts{}, Refusal(s.validID(), jsonrpc.CodeInvalidRequest, "Invalid Request: the message holds more than 65536 JSON values outside params.arguments")
	}
	rest := data
	if s.argEnd > 0 {
		rest = make([]byte, 0, outside+2)
		rest = append(append(append(rest, data[:s.argStart]...), "{}"...), data[s.argEnd:]...)
	}
	if strict(rest) != nil {
		return Facts{}, Refusal(s.validID(), jsonrpc.CodeInvalidRequest, "Invalid Request: a duplicate key, or a string that is not valid Unicode, outside params.arguments")
	}
	// MCP ids are strings or integers. The SDK would read 5.5 or 1e1 as 5
	// or 10, and 2^53+1 as 2^53, and answer under an id that was never
	// sent; it would take a null id for no id and answer nothing.
	if s.ids > 0 && s.validID() == nil {
		return Facts{}, Refusal(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: id must be a string or an integer from -(2^53-1) to 2^53-1")
	}
	if tooDeep(data) {
		return Facts{}, Refusal(s.validID(), jsonrpc.CodeInvalidRequest, "Invalid Request: the message nests deeper than 1000 levels")
	}
	msg, err := jsonrpc.DecodeMessage(rest)
	if err != nil {
		return Facts{}, Refusal(s.validID(), jsonrpc.CodeInvalidRequest, "Invalid Request: not a JSON-RPC 2.0 message")
	}
	m := Facts{Body: data, HeldBytes: callBytes + len(data) + (s.argEnd - s.argStart) + 160*s.values}
	if args := data[s.argStart:s.argEnd]; protocol.Chars(args) > protocol.RequestLimitChars {
		m.Body, m.ArgsSHA256 = rest, domain.SHA256Hex(args)
		m.HeldBytes = callBytes + len(rest) + 160*s.values
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return m, nil
	}
	m.Method = req.Method
	if req.Method == "tools/call" {
		// params without its arguments: a few names, read again, names
		// matched exactly as the SDK's decoder matches them (encoding/json
		// would take "NAME" for "name": a call the SDK runs as analyze
		// could pass as another tool). Read for a notification too: the
		// scope over HTTP is decided on it whatever the SDK makes of one.
		var p struct {
			Name string `json:"name"`
		}
		if jsonv2.Unmarshal(req.Params, &p) == nil {
			m.Tool = p.Name
		}
	}
	if req.IsCall() {
		m.Call, m.ID, m.IDText = true, idValue(s.id), s.validID()
		m.Slotted = req.Method == "tools/call" || req.Method == "resources/read"
	} else if req.Method == "notifications/cancelled" {
		// Only an id a call may have names a call to cancel.
		if id := validID(s.requestID); id != nil {
			m.Cancels = idValue(s.requestID)
		} else {
			m.Drop = true
		}
	}
	return m, nil
}

// CheckBody is Check for a POST body: a blank one is -32700, since a
// request must be answered, where a blank line over stdio is skipped.
func CheckBody(body []byte) (Facts, []byte) {
	m, refusal := Check(body)
	if m.Blank {
		refusal = Refusal(nil, jsonrpc.CodeParseError, "Parse error: the body is empty")
	}
	return m, refusal
}

// tooDeep reports whether data nests deeper than MaxDepth, counted as the
// SDK's decoder counts: every bracket outside a string.
func tooDeep(data []byte) bool {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		switch {
		case inString && escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case inString && b == '"':
			inString = false
		case inString:
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			if depth++; depth > MaxDepth {
				return true
			}
		case b == '}' || b == ']':
			depth--
		}
	}
	return false
}

// strict reports whether data, valid JSON, is one document with no
// duplicate names and no string that is not valid Unicode.
func strict(data []byte) error {
	dec := jsontext.NewDecoder(bytes.NewBuffer(data))
	if err := dec.SkipValue(); err != nil {
		return err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return errors.New("more than one document")
	}
	return nil
}

// scan reads the whole line once: it reports whether it is an object, and
// fails when it is not one JSON document.
func (s *scanned) scan() (object bool, err error) {
	if s.dec.PeekKind() != '{' {
		if err := s.dec.SkipValue(); err != nil {
			return false, err
		}
		return false, s.end()
	}
	s.values++
	if _, err := s.dec.ReadToken(); err != nil {
		return false, err
	}
	for s.dec.PeekKind() != '}' {
		name, err := s.dec.ReadToken()
		if err != nil {
			return false, err
		}
		s.values++
		switch key := name.String(); {
		case key == "params" && s.dec.PeekKind() == '{':
			if err := s.params(); err != nil {
				return false, err
			}
		case key == "id":
			v, err := s.dec.ReadValue()
			if err != nil {
				return false, err
			}
			s.count(v)
			s.ids++
			s.id = v.Clone()
		default:
			if err := s.skip(); err != nil {
				return false, err
			}
		}
	}
	if _, err := s.dec.ReadToken(); err != nil {
		return false, err
	}
	return true, s.end()
}

// params reads the members of params, an object.
func (s *scanned) params() error {
	s.values++
	if _, err := s.dec.ReadToken(); err != nil {
		return err
	}
	for s.dec.PeekKind() != '}' {
		name, err := s.dec.ReadToken()
		if err != nil {
			return err
		}
		s.values++
		switch key := name.String(); key {
		case "arguments":
			if s.argEnd > 0 { // a second one is a duplicate, refused later
				if err := s.skip(); err != nil {
					return err
				}
				continue
			}
			s.argStart = s.valueStart()
			if err := s.dec.SkipValue(); err != nil {
				return err
			}
			s.argEnd = int(s.dec.InputOffset())
		case "requestId":
			v, err := s.dec.ReadValue()
			if err != nil {
				return err
			}
			s.count(v)
			s.requestID = v.Clone()
		default:
			if err := s.skip(); err != nil {
				return err
			}
		}
	}
	_, err := s.dec.ReadToken()
	return err
}

// skip reads one value outside params.arguments, counting its values
// until the line is past the bounds, and then only checks its syntax.
func (s *scanned) skip() error {
	if s.values > MaxOutsideValues || int(s.dec.InputOffset())-(s.argEnd-s.argStart) > MaxOutsideBytes {
		return s.dec.SkipValue()
	}
	depth := s.dec.StackDepth()
	for {
		t, err := s.dec.ReadToken()
		if err != nil {
			return err
		}
		if k := t.Kind(); k != '}' && k != ']' {
			s.values++
		}
		if s.dec.StackDepth() == depth {
			return nil
		}
	}
}

// count counts the values of v, a value read whole.
func (s *scanned) count(v jsontext.Value) {
	switch v.Kind() {
	case '{', '[':
		dec := jsontext.NewDecoder(bytes.NewBuffer(v), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
		for {
			t, err := dec.ReadToken()
			if err != nil {
				return
			}
			if k := t.Kind(); k != '}' && k != ']' {
				s.values++
			}
		}
	default:
		s.values++
	}
}

// end checks that nothing but white space follows the document.
func (s *scanned) end() error {
	if _, err := s.dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = errors.New("more than one document")
		}
		return err
	}
	return nil
}

// valueStart is the offset of the value after the name just read: past
// the white space and the colon.
func (s *scanned) valueStart() int {
	i := int(s.dec.InputOffset())
	for i < len(s.data) && (s.data[i] == ':' || s.data[i] == ' ' || s.data[i] == '\t' || s.data[i] == '\n' || s.data[i] == '\r') {
		i++
	}
	return i
}

// validID returns the message's id when it is present once and valid, as
// its JSON text; else nil.
func (s *scanned) validID() json.RawMessage {
	if s.ids != 1 {
		return nil
	}
	return validID(s.id)
}

// validID returns v when it is a valid id (a string, or an integer within
// ±(2^53−1) written without a fraction or an exponent); else nil.
func validID(v jsontext.Value) json.RawMessage {
	switch v.Kind() {
	case '"':
		return json.RawMessage(v)
	case '0':
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n > maxID || n < -maxID {
			return nil
		}
		return json.RawMessage(v)
	}
	return nil
}

// idValue is v, a valid id, as a key: its string, or its integer.
func idValue(v jsontext.Value) any {
	if v.Kind() == '"' {
		return unquote(v)
	}
	n, _ := strconv.ParseInt(string(v), 10, 64)
	return n
}

// unquote returns the text of v, a JSON string.
func unquote(v jsontext.Value) string {
	t, err := jsontext.NewDecoder(bytes.NewBuffer(v), jsontext.AllowInvalidUTF8(true)).ReadToken()
	if err != nil {
		return ""
	}
	return t.String()
}

// Refusal is a JSON-RPC error response (without a newline) for the id, or
// id null.
func Refusal(id json.RawMessage, code int64, text string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: text}})
	return data
}

// AnswerID reads the id of a response the SDK writes, as Check keys a
// call's: its members come in the order jsonrpc, id, then result or error.
func AnswerID(p []byte) (any, bool) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(p)) // read in place
	if t, err := dec.ReadToken(); err != nil || t.Kind() != '{' {
		return nil, false
	}
	var id any
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, false
		}
		switch name.String() {
		case "id":
			v, err := dec.ReadValue()
			if err != nil || validID(v) == nil {
				return nil, false
			}
			id = idValue(v)
		case "result", "error":
			return id, id != nil
		default:
			if err := dec.SkipValue(); err != nil {
				return nil, false
			}
		}
	}
	return nil, false
}
