// Package protocol is the tool protocol's own vocabulary (protocol §2, §3): the
// three tools, the closed set of error codes, and the checks of a request
// in their order — a whole one-shot request, or the arguments of an MCP
// tools/call (protocol §9) — which make a [Call] or name the first fault.
//
// It is pure: bytes in, a call or an [Error] out. The app runs the calls;
// the transports frame them.
package protocol

import (
	"slices"

	"github.com/metricproof/metricproof/app/jsonvalue"
	"github.com/metricproof/metricproof/domain"
)

// Version is the version of the tool protocol this engine speaks: every
// response and receipt names it.
const Version = "1.0"

// RequestLimitChars is the largest request, in Unicode code points: the
// whole standard input over stdio, params.arguments over MCP.
const RequestLimitChars = 65_536

// The three tools.
const (
	ToolInspect = "inspect_inputs"
	ToolAnalyze = "analyze"
	ToolVerify  = "verify_result"
)

// Tools returns the three tools' names, sorted.
func Tools() []string { return []string{ToolAnalyze, ToolInspect, ToolVerify} }

// Call is a call that passed the checks of protocol §2, or as much of one as
// a refusal may echo: the ID once it is known valid, the tool once the
// tool checks passed.
type Call struct {
	// ID is the request_id (over MCP the call ID); Tool is the tool's
	// name. IDHeard and ToolHeard say whether they are known.
	ID, Tool           string
	IDHeard, ToolHeard bool
	// Digest is analyze's expected_source_digest; RunID is verify's run_id.
	Digest string
	RunID  string
}

// HeardID is the request_id a response echoes: nil until it is known
// valid.
func (c Call) HeardID() *string {
	if !c.IDHeard {
		return nil
	}
	return &c.ID
}

// HeardTool is the tool a response echoes: nil until the tool checks
// passed.
func (c Call) HeardTool() *string {
	if !c.ToolHeard {
		return nil
	}
	return &c.Tool
}

// DecodeRequest runs the checks of protocol §2 on a whole stdio request, in
// their order; the first failure is the answer, with as much of the call
// as it may echo.
func DecodeRequest(data []byte) (Call, *Error) {
	var c Call
	v, err := jsonvalue.Parse(data)
	if err != nil {
		return c, Errorf(InvalidJSON, "the request is not strict JSON: %v", err)
	}
	if v.Kind != jsonvalue.Object {
		return c, Errorf(InvalidRequest, "the request must be a JSON object, not %s", article(v.Kind))
	}
	id, hasID := v.Get("request_id")
	if hasID && id.Kind == jsonvalue.String && domain.ValidID(id.Text) {
		c.ID, c.IDHeard = id.Text, true
	}
	for _, m := range v.Members {
		switch m.Key {
		case "request_id", "tool", "arguments":
		default:
			return c, Errorf(InvalidRequest, "the request has a key other than request_id, tool and arguments")
		}
	}
	tool, hasTool := v.Get("tool")
	args, hasArgs := v.Get("arguments")
	switch {
	case !hasID:
		return c, Errorf(InvalidRequest, "the request has no request_id")
	case !hasTool:
		return c, Errorf(InvalidRequest, "the request has no tool")
	case !hasArgs:
		return c, Errorf(InvalidRequest, "the request has no arguments")
	case !c.IDHeard:
		return c, Errorf(InvalidRequest, "request_id must be a string of 1 to 64 ASCII letters, digits, '_' or '-', starting with a letter or digit")
	case tool.Kind != jsonvalue.String:
		return c, Errorf(InvalidRequest, "tool must be a string, not %s", article(tool.Kind))
	case args.Kind != jsonvalue.Object:
		return c, Errorf(InvalidRequest, "arguments must be an object, not %s", article(args.Kind))
	}
	switch tool.Text {
	case ToolInspect, ToolAnalyze, ToolVerify:
		c.Tool, c.ToolHeard = tool.Text, true
	default:
		return c, Errorf(UnknownTool, "tool must be one of %s, %s, %s (exact match)", ToolInspect, ToolAnalyze, ToolVerify)
	}
	return decodeArguments(c, args, false)
}

// MCPCall is an MCP call to tool, one of the three, before any check: its
// call ID is assigned first (for analyze it is a valid run_id argument
// when there is one), so that every answer carries it, refusals included.
func MCPCall(tool string, raw []byte, assign func() string) Call {
	c := Call{Tool: tool, ToolHeard: true, IDHeard: true}
	if tool == ToolAnalyze && Chars(raw) <= RequestLimitChars {
		if v, err := jsonvalue.Parse(raw); err == nil {
			if id, ok := v.Get("run_id"); ok && id.Kind == jsonvalue.String && domain.ValidID(id.Text) {
				c.ID = id.Text
				return c
			}
		}
	}
	c.ID = assign()
	return c
}

// DecodeMCP runs the checks of protocol §2 and §9 on the raw params.arguments
// of the MCP call c (absent when raw is empty).
func DecodeMCP(c Call, raw []byte) (Call, *Error) {
	if Chars(raw) > RequestLimitChars {
		return c, ArgumentsTooLong()
	}
	if len(raw) == 0 {
		raw = []byte("{}") // absent
	}
	v, err := jsonvalue.Parse(raw)
	if err != nil {
		return c, Errorf(InvalidJSON, "arguments is not strict JSON: %v", err)
	}
	if v.Kind == jsonvalue.Null {
		v = jsonvalue.Value{Kind: jsonvalue.Object}
	}
	if v.Kind != jsonvalue.Object {
		return c, Errorf(InvalidArguments, "arguments must be an object, not %s", article(v.Kind))
	}
	return decodeArguments(c, v, true)
}

// decodeArguments checks a tool's arguments object. Over MCP analyze also
// takes an optional run_id, which names the run.
func decodeArguments(c Call, args jsonvalue.Value, mcp bool) (Call, *Error) {
	var e *Error
	switch c.Tool {
	case ToolInspect:
		e = exactArguments(args, nil, nil)
	case ToolAnalyze:
		var optional []string
		if mcp {
			optional = []string{"run_id"}
		}
		if e = exactArguments(args, []string{"expected_source_digest"}, optional); e == nil {
			c.Digest, e = stringArgument(args, "expected_source_digest", IsDigest,
				"a string of 64 lowercase hex characters, as inspect_inputs returns it")
		}
		if _, given := args.Get("run_id"); e == nil && given {
			_, e = stringArgument(args, "run_id", domain.ValidID, IDRule)
		}
	case ToolVerify:
		if e = exactArguments(args, []string{"run_id"}, nil); e == nil {
			c.RunID, e = stringArgument(args, "run_id", domain.ValidID, IDRule)
		}
	}
	return c, e
}

// IDRule says what a request_id or run_id must be, as a message words it.
const IDRule = "a string of 1 to 64 ASCII letters, digits, '_' or '-', starting with a letter or digit"

// exactArguments checks that args holds every required key and no key
// but the required and optional ones.
func exactArguments(args jsonvalue.Value, required, optional []string) *Error {
	for _, m := range args.Members {
		if !slices.Contains(required, m.Key) && !slices.Contains(optional, m.Key) {
			switch {
			case len(required) == 0:
				return Errorf(InvalidArguments, "this tool takes no arguments")
			case len(optional) == 0:
				return Errorf(InvalidArguments, "arguments has a key other than %s", required[0])
			}
			return Errorf(InvalidArguments, "arguments has a key other than %s and %s", required[0], optional[0])
		}
	}
	for _, name := range required {
		if _, ok := args.Get(name); !ok {
			return Errorf(InvalidArguments, "arguments needs %s", name)
		}
	}
	return nil
}

func stringArgument(args jsonvalue.Value, name string, valid func(string) bool, want string) (string, *Error) {
	v, _ := args.Get(name)
	if v.Kind != jsonvalue.String {
		return "", Errorf(InvalidArguments, "%s must be %s, not %s", name, want, article(v.Kind))
	}
	if !valid(v.Text) {
		return "", Errorf(InvalidArguments, "%s must be %s", name, want)
	}
	return v.Text, nil
}

// article names a JSON kind with its article: "an array", "a string", "null".
func article(k jsonvalue.Kind) string {
	switch k {
	case jsonvalue.Null:
		return "null"
	case jsonvalue.Array, jsonvalue.Object:
		return "an " + k.String()
	}
	return "a " + k.String()
}

// IsDigest reports whether s is a SHA256 as the protocol writes one: 64
// lowercase hex characters.
func IsDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// ArgumentsTooLong is the answer to a tool call whose arguments are longer
// than RequestLimitChars.
func ArgumentsTooLong() *Error {
	return Errorf(RequestLimit, "arguments is longer than %d characters", RequestLimitChars)
}

// Chars counts the characters of data as the request limit counts them:
// each byte that does not continue a UTF-8 sequence, which is the code
// point count of valid UTF-8 (invalid UTF-8 is refused by the JSON check).
func Chars(data []byte) int {
	n := 0
	for _, b := range data {
		if b&0xC0 != 0x80 {
			n++
		}
	}
	return n
}
