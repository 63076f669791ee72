package app

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/metricproof/metricproof/domain"
)

// ProtocolVersion is the version of the tool protocol this engine speaks.
const ProtocolVersion = "1.0"

// Answer is one call's response, encoded once: the response object of
// protocol §3 as compact JSON (over MCP with its lists cut and "truncated",
// protocol §9). The stdio transport writes it as its line, the MCP transport
// as the call's text and structured content, and the ledger hashes these
// very bytes.
type Answer struct {
	// JSON is the response object, compact, without a trailing newline.
	JSON []byte
	// Code is the failure's code; empty on success.
	Code Code
	// Files are the run files the answer is about, for a transport that
	// links to them: every file of the run a successful analyze committed,
	// in the order written, or the result.json of the run a successful
	// verify_result verified; nil otherwise.
	Files []RunFile
}

// RunFile is one file of a committed run.
type RunFile struct {
	RunID, Name string
	// Size is its length in bytes.
	Size int
}

// OK reports whether the call succeeded.
func (a Answer) OK() bool { return a.Code == "" }

// envelope is the response of protocol §3, its fields in the wire's key order.
type envelope struct {
	ProtocolVersion string     `json:"protocol_version"`
	RequestID       *string    `json:"request_id"`
	OK              bool       `json:"ok"`
	Status          string     `json:"status"`
	Tool            *string    `json:"tool"`
	Result          any        `json:"result"`
	Error           *wireError `json:"error"`
	Artifacts       Artifacts  `json:"artifacts"`
	Verification    disclaimer `json:"verification"`
	// Truncated is protocol §9's tenth key, over MCP only; nil over stdio.
	Truncated *truncation `json:"truncated,omitempty"`
}

type wireError struct {
	Code      Code   `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// Artifacts are the paths of a committed run's files, workspace-relative
// with forward slashes; empty except after a successful analyze.
type Artifacts struct {
	Result      string `json:"result,omitempty"`
	Receipt     string `json:"receipt,omitempty"`
	Checksums   string `json:"checksums,omitempty"`
	Attestation string `json:"attestation,omitempty"`
}

// disclaimer states, in every response, what this engine does not claim.
type disclaimer struct {
	NativeBI         string `json:"native_bi"`
	HostCancellation string `json:"host_cancellation"`
	OSSandbox        string `json:"os_sandbox"`
	RealModelQuality string `json:"real_model_quality"`
	HumanReview      string `json:"human_review"`
}

// notClaimed is the one value of every response's verification block.
func notClaimed() disclaimer {
	return disclaimer{
		NativeBI:         "not_run",
		HostCancellation: "not_tested",
		OSSandbox:        "not_claimed",
		RealModelQuality: "not_tested",
		HumanReview:      "not_performed",
	}
}

// outcome is what a call decided, before it is encoded: what the response
// says, and what the ledger records beside it.
type outcome struct {
	call   call
	result any
	// resultJSON, when not nil, is the result already encoded, compact.
	resultJSON []byte
	artifacts  Artifacts
	err        *Error
	// committed is the run this call committed, and resultSHA256 the
	// SHA256 of its result.json; empty unless analyze committed.
	committed    string
	resultSHA256 string
	// files are the run files the answer is about (Answer.Files).
	files []RunFile
}

func refused(c call, e *Error) outcome { return outcome{call: c, err: e} }

// Refuse is the answer to a call refused before it was read: an option,
// workspace, key or ledger fault, whose request_id and tool are null.
func Refuse(e *Error) Answer { return refused(call{}, e).answer() }

// answer encodes the outcome. An envelope always encodes; should a result
// ever fail to, the answer is INTERNAL_ERROR rather than silence.
func (o outcome) answer() Answer {
	env := envelope{
		ProtocolVersion: ProtocolVersion, RequestID: o.call.HeardID(), Tool: o.call.HeardTool(),
		Verification: notClaimed(),
	}
	if o.err == nil {
		env.OK, env.Status, env.Result, env.Artifacts = true, "success", o.result, o.artifacts
	} else {
		env.Status = o.err.Code.Status()
		env.Error = &wireError{Code: o.err.Code, Message: o.err.Message, Retryable: o.err.Code.Retryable()}
	}
	encoded := o.resultJSON
	if o.call.cut {
		var t truncation
		env.Result, t = cutLists(env.Result, o.call.listLimit)
		env.Truncated, encoded = &t, nil // resultJSON, if any, is the whole result
	}
	w := jsonOut{b: make([]byte, 0, answerSizeHint(env.Result)), encodedResult: encoded}
	var data []byte
	if w.envelope(&env) {
		data = w.b
	} else {
		var err error
		if data, err = marshal(env, ""); err != nil {
			env.OK, env.Status, env.Result, env.Artifacts = false, "error", nil, Artifacts{}
			env.Error = &wireError{Code: InternalError, Message: "the response could not be encoded"}
			if env.Truncated != nil {
				env.Truncated = &truncation{}
			}
			data, _ = marshal(env, "")
			return Answer{JSON: bytes.TrimSuffix(data, []byte("\n")), Code: InternalError}
		}
		data = bytes.TrimSuffix(data, []byte("\n"))
	}
	a := Answer{JSON: data}
	if o.err != nil {
		a.Code = o.err.Code
	} else {
		a.Files = o.files
	}
	return a
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

// answerSizeHint guesses the size of a response, so that its buffer grows
// at most once or twice: a result's bytes are about proportional to its
// rows.
func answerSizeHint(result any) int {
	if r, ok := result.(domain.Result); ok {
		return 2048 + resultSizeHint(&r, false)
	}
	return 2048
}

// resultSizeHint is a close upper bound of a result's JSON size, compact
// or in the saved layout, so that its buffer is allocated once: the
// contributions, subjects and keys are nearly all of it.
func resultSizeHint(r *domain.Result, indented bool) int {
	perRow, perID := 48, 4 // the keys and punctuation around each
	if indented {
		perRow, perID = 90, 12
	}
	n := 4096
	for i := range r.Revenue.Contributions {
		c := &r.Revenue.Contributions[i]
		n += perRow + len(c.TransactionID)
		if c.NetRevenue != nil {
			n += len(*c.NetRevenue)
		}
	}
	for _, list := range [][]string{r.CustomerJoin.DuplicateKeys, r.CustomerJoin.UnmatchedKeys} {
		for _, id := range list {
			n += perID + len(id)
		}
	}
	for _, b := range r.Release.Blockers {
		for _, id := range b.Subjects {
			n += perID + len(id)
		}
	}
	return n
}
