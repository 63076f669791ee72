package app

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"time"

	"github.com/metricproof/metricproof/app/jsonvalue"
	"github.com/metricproof/metricproof/domain"
)

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

// Transport names how a call arrived, as the ledger records it.
type Transport string

// The two transports.
const (
	Stdio    Transport = "stdio"
	MCPCalls Transport = "mcp"
)

// Input is one call as its transport received it, before any check.
type Input struct {
	Transport Transport
	// Tool is the tool's name over MCP, where it comes before the
	// arguments; empty over stdio, where it is inside Data.
	Tool string
	// Data is the whole request over stdio, or the raw bytes of
	// params.arguments over MCP (nil when absent).
	Data []byte
	// Short says why Data is not all of the input.
	Short Short
	// Arrived, when not nil, is called once the call has taken its place in
	// the service's lines (SPEC §9, Load: calls wait in arrival order), and
	// before anything in it can wait. A transport that hands the service
	// its next call only after this keeps its calls in the order of its
	// input.
	Arrived func()
	// Keep, when not nil, is handed the release of the call's compute slot
	// when Serve returns, instead of Serve releasing it: a transport that
	// delivers the answer later calls it once the answer is delivered, so
	// that answers still to be written count against the slots too.
	Keep func(release func())
}

// Short says why a transport could not hand over its whole input.
type Short int

// Why an input is short.
const (
	// Whole: Data is all of it.
	Whole Short = iota
	// OverLimit: the input passed RequestLimitChars and the rest was not
	// read (REQUEST_LIMIT).
	OverLimit
	// ReadFailed: reading the input failed (IO_OR_NUMERIC_ERROR).
	ReadFailed
	// Interrupted: the call was cancelled while its input was being read
	// (CANCELLED).
	Interrupted
)

// call is a call that passed the checks of SPEC §2, or as much of one as
// a refusal may echo: the ID once it is known valid, the tool once the
// tool checks passed.
type call struct {
	id, tool           string
	idHeard, toolHeard bool
	// digest is analyze's expected_source_digest; runID is verify's run_id.
	digest string
	runID  string
	// mcp marks a call that arrived over MCP, whose answer has its lists
	// cut to listLimit items and the "truncated" key (SPEC §9).
	mcp       bool
	listLimit int
}

func (c call) heardID() *string {
	if !c.idHeard {
		return nil
	}
	return &c.id
}

func (c call) heardTool() *string {
	if !c.toolHeard {
		return nil
	}
	return &c.tool
}

// decodeRequest runs the checks of SPEC §2 on a whole stdio request, in
// their order; the first failure is the answer.
func decodeRequest(data []byte) (call, *Error) {
	var c call
	v, err := jsonvalue.Parse(data)
	if err != nil {
		return c, fail(InvalidJSON, "the request is not strict JSON: %v", err)
	}
	if v.Kind != jsonvalue.Object {
		return c, fail(InvalidRequest, "the request must be a JSON object, not %s", article(v.Kind))
	}
	id, hasID := v.Get("request_id")
	if hasID && id.Kind == jsonvalue.String && domain.ValidID(id.Text) {
		c.id, c.idHeard = id.Text, true
	}
	for _, m := range v.Members {
		switch m.Key {
		case "request_id", "tool", "arguments":
		default:
			return c, fail(InvalidRequest, "the request has a key other than request_id, tool and arguments")
		}
	}
	tool, hasTool := v.Get("tool")
	args, hasArgs := v.Get("arguments")
	switch {
	case !hasID:
		return c, fail(InvalidRequest, "the request has no request_id")
	case !hasTool:
		return c, fail(InvalidRequest, "the request has no tool")
	case !hasArgs:
		return c, fail(InvalidRequest, "the request has no arguments")
	case !c.idHeard:
		return c, fail(InvalidRequest, "request_id must be a string of 1 to 64 ASCII letters, digits, '_' or '-', starting with a letter or digit")
	case tool.Kind != jsonvalue.String:
		return c, fail(InvalidRequest, "tool must be a string, not %s", article(tool.Kind))
	case args.Kind != jsonvalue.Object:
		return c, fail(InvalidRequest, "arguments must be an object, not %s", article(args.Kind))
	}
	switch tool.Text {
	case ToolInspect, ToolAnalyze, ToolVerify:
		c.tool, c.toolHeard = tool.Text, true
	default:
		return c, fail(UnknownTool, "tool must be one of %s, %s, %s (exact match)", ToolInspect, ToolAnalyze, ToolVerify)
	}
	return decodeArguments(c, args, false)
}

// mcpCall is an MCP call to tool, one of the three, before any check: its
// call ID is assigned first (for analyze it is a valid run_id argument
// when there is one), so that every answer carries it, refusals included.
func mcpCall(tool string, raw []byte, assign func() string) call {
	c := call{tool: tool, toolHeard: true, idHeard: true}
	if tool == ToolAnalyze && chars(raw) <= RequestLimitChars {
		if v, err := jsonvalue.Parse(raw); err == nil {
			if id, ok := v.Get("run_id"); ok && id.Kind == jsonvalue.String && domain.ValidID(id.Text) {
				c.id = id.Text
				return c
			}
		}
	}
	c.id = assign()
	return c
}

// decodeMCP runs the checks of SPEC §2 and §9 on the raw params.arguments
// of the MCP call c.
func decodeMCP(c call, raw []byte) (call, *Error) {
	if chars(raw) > RequestLimitChars {
		return c, fail(RequestLimit, "arguments is longer than %d characters", RequestLimitChars)
	}
	if len(raw) == 0 {
		raw = []byte("{}") // absent
	}
	v, err := jsonvalue.Parse(raw)
	if err != nil {
		return c, fail(InvalidJSON, "arguments is not strict JSON: %v", err)
	}
	if v.Kind == jsonvalue.Null {
		v = jsonvalue.Value{Kind: jsonvalue.Object}
	}
	if v.Kind != jsonvalue.Object {
		return c, fail(InvalidArguments, "arguments must be an object, not %s", article(v.Kind))
	}
	return decodeArguments(c, v, true)
}

// decodeArguments checks a tool's arguments object. Over MCP analyze also
// takes an optional run_id, which names the run.
func decodeArguments(c call, args jsonvalue.Value, mcp bool) (call, *Error) {
	var e *Error
	switch c.tool {
	case ToolInspect:
		e = exactArguments(args, nil, nil)
	case ToolAnalyze:
		var optional []string
		if mcp {
			optional = []string{"run_id"}
		}
		if e = exactArguments(args, []string{"expected_source_digest"}, optional); e == nil {
			c.digest, e = stringArgument(args, "expected_source_digest", isDigest,
				"a string of 64 lowercase hex characters, as inspect_inputs returns it")
		}
		if _, given := args.Get("run_id"); e == nil && given {
			_, e = stringArgument(args, "run_id", domain.ValidID, idRule)
		}
	case ToolVerify:
		if e = exactArguments(args, []string{"run_id"}, nil); e == nil {
			c.runID, e = stringArgument(args, "run_id", domain.ValidID, idRule)
		}
	}
	return c, e
}

const idRule = "a string of 1 to 64 ASCII letters, digits, '_' or '-', starting with a letter or digit"

// exactArguments checks that args holds every required key and no key
// but the required and optional ones.
func exactArguments(args jsonvalue.Value, required, optional []string) *Error {
	for _, m := range args.Members {
		if !slices.Contains(required, m.Key) && !slices.Contains(optional, m.Key) {
			switch {
			case len(required) == 0:
				return fail(InvalidArguments, "this tool takes no arguments")
			case len(optional) == 0:
				return fail(InvalidArguments, "arguments has a key other than %s", required[0])
			}
			return fail(InvalidArguments, "arguments has a key other than %s and %s", required[0], optional[0])
		}
	}
	for _, name := range required {
		if _, ok := args.Get(name); !ok {
			return fail(InvalidArguments, "arguments needs %s", name)
		}
	}
	return nil
}

func stringArgument(args jsonvalue.Value, name string, valid func(string) bool, want string) (string, *Error) {
	v, _ := args.Get(name)
	if v.Kind != jsonvalue.String {
		return "", fail(InvalidArguments, "%s must be %s, not %s", name, want, article(v.Kind))
	}
	if !valid(v.Text) {
		return "", fail(InvalidArguments, "%s must be %s", name, want)
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

func isDigest(s string) bool {
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

// chars counts the characters of data as the stdio transport does: each
// byte that does not continue a UTF-8 sequence, which is the code point
// count of valid UTF-8 (invalid UTF-8 is refused by the JSON check).
func chars(data []byte) int {
	n := 0
	for _, b := range data {
		if b&0xC0 != 0x80 {
			n++
		}
	}
	return n
}

// callID assigns a call ID (SPEC §9): the UTC time to the second and 8
// random lowercase hex digits, 20261201T073000Z-3f9a1c2e, so IDs sort by
// time and do not collide.
func callID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported systems
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
