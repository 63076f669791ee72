package app

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/metricproof/metricproof/app/protocol"
)

// Transport is how a call arrived: the name the ledger records, and how
// its input becomes a checked call. A transport adapter hands its own with
// every Input: [Stdio] or [MCPCalls]. The app never asks which it is.
type Transport interface {
	// Name is the transport's name in the ledger (protocol §11).
	Name() string
	// heard is the call as known before any check, which every answer
	// echoes, refusals included.
	heard(s *Service, in Input) call
	// decode runs the request checks on the input, in their order; the
	// first failure is the answer.
	decode(c call, in Input) (call, *Error)
}

// Stdio is the one-shot transport: the whole request of protocol §2, read
// from standard input.
type Stdio struct{}

// Name is "stdio".
func (Stdio) Name() string { return "stdio" }

func (Stdio) heard(*Service, Input) call { return call{} }

func (Stdio) decode(c call, in Input) (call, *Error) {
	switch in.Short {
	case OverLimit:
		return c, fail(RequestLimit, "the request is longer than %d characters", protocol.RequestLimitChars)
	case ReadFailed:
		return c, classify(readingInput, "", errors.New("read failed"))
	case Interrupted:
		return c, fail(Cancelled, "the call was cancelled while its request was being read; nothing was run")
	}
	var e *Error
	c.Call, e = protocol.DecodeRequest(in.Data)
	return c, e
}

// MCPCalls is the MCP server's transport: a tool's name and the raw
// params.arguments of a tools/call (protocol §2, §9), whose answer has its
// lists cut to K items.
type MCPCalls struct{}

// Name is "mcp".
func (MCPCalls) Name() string { return "mcp" }

func (MCPCalls) heard(s *Service, in Input) call {
	return call{Call: protocol.MCPCall(in.Tool, in.Data, s.newCallID), cut: true, listLimit: s.opts.ListLimit}
}

func (MCPCalls) decode(c call, in Input) (call, *Error) {
	var e *Error
	c.Call, e = protocol.DecodeMCP(c.Call, in.Data)
	return c, e
}

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
	// the service's lines (protocol §9, Load: calls wait in arrival order), and
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
	// OverLimit: the input passed protocol.RequestLimitChars and the rest
	// was not read (REQUEST_LIMIT).
	OverLimit
	// ReadFailed: reading the input failed (IO_OR_NUMERIC_ERROR).
	ReadFailed
	// Interrupted: the call was cancelled while its input was being read
	// (CANCELLED).
	Interrupted
)

// call is a call as far as its checks got (protocol.Call), and how its
// answer is cut: cut marks a call whose answer has its lists cut to
// listLimit items and the "truncated" key (protocol §9), one that arrived
// over MCP.
type call struct {
	protocol.Call
	cut       bool
	listLimit int
}

// callID assigns a call ID (protocol §9): the UTC time to the second and 8
// random lowercase hex digits, 20261201T073000Z-3f9a1c2e, so IDs sort by
// time and do not collide.
func callID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported systems
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
