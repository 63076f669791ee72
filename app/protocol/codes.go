package protocol

import "fmt"

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

// Retryable reports whether a call that failed with c may succeed if
// repeated unchanged: only OUTPUT_BUSY, once the other writer is done.
func (c Code) Retryable() bool { return c == OutputBusy }

// Error is a failure with its code and a message that is safe to show to
// anyone: it never holds an absolute path, key bytes, or anything from a
// request or a source but IDs that passed validation.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

func fail(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
