package call

import (
	"bytes"

	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/app/jsonout"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
)

// Answer is one call's response, encoded once: the response object of
// protocol §3 as compact JSON (for a tool call with its lists cut and
// "truncated"). A transport writes these very bytes (the
// stdio line, the MCP tool result's text and structured content), and the
// ledger hashes them.
//
// Every transport calls Done once it has written the answer, or given up
// writing it: until then the call keeps its compute slot, so that answers
// waiting to be written count against the slots and a client that reads
// slowly slows the computing rather than piling answers up in memory.
type Answer struct {
	// JSON is the response object, compact, without a trailing newline.
	JSON []byte
	// Code is the failure's code; empty on success.
	Code protocol.Code
	// Files are the run files the answer is about, for a transport that
	// links to them: every file of the run a successful analyze committed,
	// in the order written, or the result.json of the run a successful
	// verify_result verified; nil otherwise.
	Files []evidence.RunFile
	done  func()
}

// OK reports whether the call succeeded.
func (a Answer) OK() bool { return a.Code == "" }

// Done gives back what the answer holds in the service: its compute slot.
// It may be called more than once.
func (a Answer) Done() {
	if a.done != nil {
		a.done()
	}
}

// envelope is the response, its fields in the wire's key
// order.
type envelope struct {
	ProtocolVersion string                `json:"protocol_version"`
	RequestID       *string               `json:"request_id"`
	OK              bool                  `json:"ok"`
	Status          string                `json:"status"`
	Tool            *string               `json:"tool"`
	Result          any                   `json:"result"`
	Error           *wireError            `json:"error"`
	Artifacts       app.Artifacts         `json:"artifacts"`
	Verification    protocol.Verification `json:"verification"`
	// Truncated is the tenth key, for tool calls only; nil
	// in a one-shot answer.
	Truncated *truncation `json:"truncated,omitempty"`
}

type wireError struct {
	Code      protocol.Code `json:"code"`
	Message   string        `json:"message"`
	Retryable bool          `json:"retryable"`
}

// outcome is what a call decided, before it is encoded: what the response
// says, and what the ledger records beside it.
type outcome struct {
	call protocol.Call
	// cut, for a tool call, is K: its answer's lists are cut to K items
	// (protocol §9.5); -1 for a one-shot call, whose answer is whole.
	cut    int
	result any
	// resultJSON, when not nil, is the whole result already encoded,
	// compact.
	resultJSON []byte
	artifacts  app.Artifacts
	err        *protocol.Error
	// committed is the run this call committed, and resultSHA256 the
	// SHA256 of its result.json; empty unless analyze committed.
	committed    string
	resultSHA256 string
	// files are the run files the answer is about (Answer.Files).
	files []evidence.RunFile
}

// whole is outcome.cut for an answer whose lists are not cut.
const whole = -1

func refused(c protocol.Call, cut int, err error) outcome {
	return outcome{call: c, cut: cut, err: protocol.ErrorOf(err)}
}

// Refuse is the one-shot answer to a call refused before its request was
// read (an option, workspace, key or ledger fault), whose request_id and
// tool are null.
func Refuse(err error) Answer { return refused(protocol.Call{}, whole, err).answer() }

// answer encodes the outcome. An envelope always encodes; should a result
// ever fail to, the answer is INTERNAL_ERROR rather than silence.
func (o outcome) answer() Answer {
	env := envelope{
		ProtocolVersion: protocol.Version, RequestID: o.call.HeardID(), Tool: o.call.HeardTool(),
		Verification: protocol.NotClaimed(),
	}
	if o.err == nil {
		env.OK, env.Status, env.Result, env.Artifacts = true, "success", o.result, o.artifacts
	} else {
		env.Status = o.err.Code.Status()
		env.Error = &wireError{Code: o.err.Code, Message: o.err.Message, Retryable: o.err.Retryable}
	}
	encoded := o.resultJSON
	if o.cut != whole {
		var t truncation
		env.Result, t = cutLists(env.Result, o.cut)
		env.Truncated, encoded = &t, nil // resultJSON, if any, is the whole result
	}
	data, err := encodeEnvelope(&env, encoded)
	if err != nil {
		env.OK, env.Status, env.Result, env.Artifacts = false, "error", nil, app.Artifacts{}
		env.Error = &wireError{Code: protocol.InternalError, Message: "the response could not be encoded"}
		if env.Truncated != nil {
			env.Truncated = &truncation{}
		}
		data, _ = jsonout.Append(nil, &env, false) // strings and booleans always encode
		return Answer{JSON: data, Code: protocol.InternalError}
	}
	a := Answer{JSON: data}
	if o.err != nil {
		a.Code = o.err.Code
	} else {
		a.Files = o.files
	}
	return a
}

// resultMember is how the envelope's result member starts when its value
// is null.
const resultMember = `"result":null`

// encodeEnvelope writes the response object. A result whose compact JSON
// is encoded (analyze encodes it while its commit waits on fsync) is
// copied in, not encoded again: the envelope is encoded with a null
// result, and encoded takes the null's place. That member is the sixth,
// after five that hold strings, null or a boolean and no object, so the
// first "result":null of the line is it.
func encodeEnvelope(env *envelope, encoded []byte) ([]byte, error) {
	if _, ok := env.Result.(domain.Result); !ok || encoded == nil {
		return jsonout.Append(make([]byte, 0, answerSizeHint(env.Result)), env, false)
	}
	e := *env
	e.Result = nil
	line, err := jsonout.Append(make([]byte, 0, 2048), &e, false)
	if err != nil {
		return nil, err
	}
	i := bytes.Index(line, []byte(resultMember))
	if i < 0 {
		return jsonout.Append(make([]byte, 0, answerSizeHint(env.Result)), env, false)
	}
	i += len(`"result":`)
	out := make([]byte, 0, len(line)+len(encoded))
	out = append(append(append(out, line[:i]...), encoded...), line[i+len("null"):]...)
	return out, nil
}

// encodeResult is a result's compact JSON, for encodeEnvelope.
func encodeResult(r *domain.Result) []byte {
	b, err := jsonout.Append(make([]byte, 0, evidence.ResultSizeHint(r, false)), r, false)
	if err != nil {
		return nil // the envelope encodes it again, and meets the error there
	}
	return b
}

// answerSizeHint guesses the size of a response, so that its buffer grows
// at most once or twice: a result's bytes are about proportional to its
// rows.
func answerSizeHint(result any) int {
	if r, ok := result.(domain.Result); ok {
		return 2048 + evidence.ResultSizeHint(&r, false)
	}
	return 2048
}
