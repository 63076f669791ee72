package protocol

import (
	"errors"
	"fmt"
)

// Code is one of the protocol's error codes. The set is closed: these
// constants are all there are.
type Code string

// The error codes of protocol 1.0: the 26 of the seed, then
// SIGNATURE_INVALID (protocol §10) and LEDGER_TAMPERED (protocol §11).
const (
	InvalidOptions     Code = "INVALID_OPTIONS"
	RequestLimit       Code = "REQUEST_LIMIT"
	InvalidJSON        Code = "INVALID_JSON"
	InvalidRequest     Code = "INVALID_REQUEST"
	UnknownTool        Code = "UNKNOWN_TOOL"
	InvalidArguments   Code = "INVALID_ARGUMENTS"
	MissingContext     Code = "MISSING_CONTEXT"
	MissingWorkspace   Code = "MISSING_WORKSPACE"
	PathBoundary       Code = "PATH_BOUNDARY"
	InvalidOutput      Code = "INVALID_OUTPUT"
	Cancelled          Code = "CANCELLED"
	MissingInput       Code = "MISSING_INPUT"
	InputLimit         Code = "INPUT_LIMIT"
	InvalidData        Code = "INVALID_DATA"
	InvalidDefinitions Code = "INVALID_DEFINITIONS"
	StaleContext       Code = "STALE_CONTEXT"
	OutputBusy         Code = "OUTPUT_BUSY"
	OutputCollision    Code = "OUTPUT_COLLISION"
	MissingResult      Code = "MISSING_RESULT"
	ReceiptTampered    Code = "RECEIPT_TAMPERED"
	ResultTampered     Code = "RESULT_TAMPERED"
	InvalidSavedResult Code = "INVALID_SAVED_RESULT"
	StaleSources       Code = "STALE_SOURCES"
	EngineChanged      Code = "ENGINE_CHANGED"
	IOOrNumericError   Code = "IO_OR_NUMERIC_ERROR"
	InternalError      Code = "INTERNAL_ERROR"
	SignatureInvalid   Code = "SIGNATURE_INVALID"
	LedgerTampered     Code = "LEDGER_TAMPERED"
)

// Codes returns every code: the seed's list in its order, then the two
// that signed evidence and the call ledger add.
func Codes() []Code {
	return []Code{InvalidOptions, RequestLimit, InvalidJSON, InvalidRequest, UnknownTool,
		InvalidArguments, MissingContext, MissingWorkspace, PathBoundary, InvalidOutput,
		Cancelled, MissingInput, InputLimit, InvalidData, InvalidDefinitions, StaleContext,
		OutputBusy, OutputCollision, MissingResult, ReceiptTampered, ResultTampered,
		InvalidSavedResult, StaleSources, EngineChanged, IOOrNumericError, InternalError,
		SignatureInvalid, LedgerTampered}
}

// Status is the response status of a call that failed with c: "cancelled"
// for CANCELLED, "error" for every other code.
func (c Code) Status() string {
	if c == Cancelled {
		return "cancelled"
	}
	return "error"
}

// Error is a failure with its code and a message that is safe to show to
// anyone: it never holds an absolute path, key bytes, or anything from a
// request or a source but IDs that passed validation. The code is chosen
// where the failure happens ([Errorf]) and read at the edge ([ErrorOf]).
type Error struct {
	Code    Code
	Message string
	// Retryable reports whether the caller can make the call succeed by
	// itself, doing what the message says and nothing the operator must
	// do: the same call later, or (STALE_CONTEXT) the same call with the
	// digest a new inspection returns. [Errorf] sets it for the codes that
	// always are ([Code.Retryable]); a failure that knows better sets it
	// itself (a store that could not be reached is IO_OR_NUMERIC_ERROR and
	// retryable, a full disk is not).
	Retryable bool
}

// Retryable reports whether every failure of code c is retryable:
// OUTPUT_BUSY (once the other writer is done) and STALE_CONTEXT (inspect
// again and pass the new digest). The state they are about moves on by
// itself or by a new read; every other code needs a different call or
// the operator.
func (c Code) Retryable() bool { return c == OutputBusy || c == StaleContext }

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf is a failure with code and a message made as fmt.Sprintf makes
// it, retryable when its code always is ([Code.Retryable]).
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Retryable: code.Retryable()}
}

// ErrorOf is the protocol's failure in err's chain, or INTERNAL_ERROR for
// an error that carries none (a bug: every failure gets its code where it
// happens); nil for nil.
func ErrorOf(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Errorf(InternalError, "unexpected failure")
}

// Verification is the verification block of every response (protocol
// §3): what this engine does not claim, in the wire's key order.
type Verification struct {
	NativeBI         string `json:"native_bi"`
	HostCancellation string `json:"host_cancellation"`
	OSSandbox        string `json:"os_sandbox"`
	RealModelQuality string `json:"real_model_quality"`
	HumanReview      string `json:"human_review"`
}

// NotClaimed is the one value of every response's verification block.
func NotClaimed() Verification {
	return Verification{
		NativeBI:         "not_run",
		HostCancellation: "not_tested",
		OSSandbox:        "not_claimed",
		RealModelQuality: "not_tested",
		HumanReview:      "not_performed",
	}
}

// Amended is the same failure, code and retryability, with more said
// after its message (format is fmt.Sprintf's): "; run r1 stays committed".
func (e *Error) Amended(format string, args ...any) *Error {
	return &Error{Code: e.Code, Message: e.Message + fmt.Sprintf(format, args...), Retryable: e.Retryable}
}
