package app

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/domain/strictjson"
)

// ProtocolVersion is the version of the stdio protocol this engine speaks.
const ProtocolVersion = "1.0"

// RequestLimitChars is the largest request, in Unicode code points.
const RequestLimitChars = 65_536

// The three tools.
const (
	ToolInspect = "inspect_inputs"
	ToolAnalyze = "analyze"
	ToolVerify  = "verify_result"
)

// request is a request that passed every check of SPEC §2.
type request struct {
	id   string
	tool string
	// digest is analyze's expected_source_digest; runID is verify's run_id.
	digest string
	runID  string
}

// heard is what a response may echo of a request that failed its checks:
// the request_id once the input is an object whose request_id is valid,
// the tool once the tool checks passed.
type heard struct {
	id   *string
	tool *string
}

// decodeRequest runs the checks of SPEC §2 in their order; the first
// failure is the answer.
func decodeRequest(data []byte) (request, heard, *Error) {
	var h heard
	v, err := strictjson.Parse(data)
	if err != nil {
		return request{}, h, fail(InvalidJSON, "the request is not strict JSON: %v", err)
	}
	if v.Kind != strictjson.Object {
		return request{}, h, fail(InvalidRequest, "the request must be a JSON object, not %s", article(v.Kind))
	}
	id, hasID := v.Get("request_id")
	if hasID && id.Kind == strictjson.String && domain.ValidID(id.Text) {
		h.id = &id.Text
	}
	for _, m := range v.Members {
		switch m.Key {
		case "request_id", "tool", "arguments":
		default:
			return request{}, h, fail(InvalidRequest, "the request has a key other than request_id, tool and arguments")
		}
	}
	tool, hasTool := v.Get("tool")
	args, hasArgs := v.Get("arguments")
	switch {
	case !hasID:
		return request{}, h, fail(InvalidRequest, "the request has no request_id")
	case !hasTool:
		return request{}, h, fail(InvalidRequest, "the request has no tool")
	case !hasArgs:
		return request{}, h, fail(InvalidRequest, "the request has no arguments")
	case h.id == nil:
		return request{}, h, fail(InvalidRequest, "request_id must be a string of 1 to 64 ASCII letters, digits, '_' or '-', starting with a letter or digit")
	case tool.Kind != strictjson.String:
		return request{}, h, fail(InvalidRequest, "tool must be a string, not %s", article(tool.Kind))
	case args.Kind != strictjson.Object:
		return request{}, h, fail(InvalidRequest, "arguments must be an object, not %s", article(args.Kind))
	}
	switch tool.Text {
	case ToolInspect, ToolAnalyze, ToolVerify:
		h.tool = &tool.Text
	default:
		return request{}, h, fail(UnknownTool, "tool must be one of %s, %s, %s (exact match)", ToolInspect, ToolAnalyze, ToolVerify)
	}
	req := request{id: id.Text, tool: tool.Text}
	var e *Error
	switch req.tool {
	case ToolInspect:
		e = exactArguments(args, "")
	case ToolAnalyze:
		if e = exactArguments(args, "expected_source_digest"); e == nil {
			req.digest, e = stringArgument(args, "expected_source_digest", isDigest,
				"a string of 64 lowercase hex characters, as inspect_inputs returns it")
		}
	case ToolVerify:
		if e = exactArguments(args, "run_id"); e == nil {
			req.runID, e = stringArgument(args, "run_id", domain.ValidID,
				"a string of 1 to 64 ASCII letters, digits, '_' or '-', starting with a letter or digit")
		}
	}
	return req, h, e
}

// exactArguments checks that args holds exactly the one key named, or no
// key when name is empty.
func exactArguments(args strictjson.Value, name string) *Error {
	for _, m := range args.Members {
		if m.Key != name {
			if name == "" {
				return fail(InvalidArguments, "this tool takes no arguments")
			}
			return fail(InvalidArguments, "arguments has a key other than %s", name)
		}
	}
	if name != "" && len(args.Members) == 0 {
		return fail(InvalidArguments, "arguments needs %s", name)
	}
	return nil
}

func stringArgument(args strictjson.Value, name string, valid func(string) bool, want string) (string, *Error) {
	v, _ := args.Get(name)
	if v.Kind != strictjson.String {
		return "", fail(InvalidArguments, "%s must be %s, not %s", name, want, article(v.Kind))
	}
	if !valid(v.Text) {
		return "", fail(InvalidArguments, "%s must be %s", name, want)
	}
	return v.Text, nil
}

// article names a JSON kind with its article: "an array", "a string", "null".
func article(k strictjson.Kind) string {
	switch k {
	case strictjson.Null:
		return "null"
	case strictjson.Array, strictjson.Object:
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

// envelope is the response of SPEC §3, its fields in the wire's key order.
type envelope struct {
	ProtocolVersion string       `json:"protocol_version"`
	RequestID       *string      `json:"request_id"`
	OK              bool         `json:"ok"`
	Status          string       `json:"status"`
	Tool            *string      `json:"tool"`
	Result          any          `json:"result"`
	Error           *wireError   `json:"error"`
	Artifacts       Artifacts    `json:"artifacts"`
	Verification    verification `json:"verification"`
}

type wireError struct {
	Code      Code   `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// Artifacts are the paths of a committed run's files, workspace-relative
// with forward slashes; empty except after a successful analyze.
type Artifacts struct {
	Result    string `json:"result,omitempty"`
	Receipt   string `json:"receipt,omitempty"`
	Checksums string `json:"checksums,omitempty"`
}

// verification states, in every response, what this engine does not claim.
type verification struct {
	NativeBI         string `json:"native_bi"`
	HostCancellation string `json:"host_cancellation"`
	OSSandbox        string `json:"os_sandbox"`
	RealModelQuality string `json:"real_model_quality"`
	HumanReview      string `json:"human_review"`
}

func limits() verification {
	return verification{
		NativeBI:         "not_run",
		HostCancellation: "not_tested",
		OSSandbox:        "not_claimed",
		RealModelQuality: "not_tested",
		HumanReview:      "not_performed",
	}
}

// Reply is one response line and the exit status that goes with it.
type Reply struct {
	// Line is the compact JSON response and its newline (or, for --help, the
	// usage text).
	Line []byte
	Exit int
}

func success(h heard, result any, artifacts Artifacts) Reply {
	return encode(envelope{
		ProtocolVersion: ProtocolVersion, RequestID: h.id, OK: true, Status: "success",
		Tool: h.tool, Result: result, Artifacts: artifacts, Verification: limits(),
	}, 0)
}

func failure(h heard, e *Error) Reply {
	return encode(envelope{
		ProtocolVersion: ProtocolVersion, RequestID: h.id, Status: e.Code.status(), Tool: h.tool,
		Error:        &wireError{Code: e.Code, Message: e.Message, Retryable: e.Code.Retryable()},
		Verification: limits(),
	}, e.Code.exit())
}

// encode writes one compact JSON line. An envelope always encodes; should
// a result ever fail to, the answer is INTERNAL_ERROR rather than silence.
func encode(env envelope, exit int) Reply {
	line, err := marshal(env, "")
	if err != nil {
		env.OK, env.Status, env.Result, env.Artifacts = false, "error", nil, Artifacts{}
		env.Error = &wireError{Code: InternalError, Message: "the response could not be encoded"}
		line, _ = marshal(env, "")
		exit = 1
	}
	return Reply{Line: line, Exit: exit}
}

// marshal encodes v as JSON without HTML escaping, indented by indent (or
// compact when indent is empty), ending in one newline.
func marshal(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return buf.Bytes(), nil
}
