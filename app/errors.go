package app

import (
	"errors"
	"fmt"

	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// Code is one of the protocol's error codes. The set is closed: these
// constants are all there are.
type Code string

// The error codes of protocol 1.0.
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
)

// Codes returns every code, in the order of the seed's list.
func Codes() []Code {
	return []Code{InvalidOptions, RequestLimit, InvalidJSON, InvalidRequest, UnknownTool,
		InvalidArguments, MissingContext, MissingWorkspace, PathBoundary, InvalidOutput,
		Cancelled, MissingInput, InputLimit, InvalidData, InvalidDefinitions, StaleContext,
		OutputBusy, OutputCollision, MissingResult, ReceiptTampered, ResultTampered,
		InvalidSavedResult, StaleSources, EngineChanged, IOOrNumericError, InternalError}
}

// Wire facts of a code: the response status, the process exit status, and
// whether the caller may simply retry.
func (c Code) status() string {
	if c == Cancelled {
		return "cancelled"
	}
	return "error"
}

func (c Code) exit() int {
	if c == Cancelled {
		return 3
	}
	return 1
}

// Retryable reports whether a call that failed with c may succeed if
// repeated unchanged: only OUTPUT_BUSY, once the other writer is done.
func (c Code) Retryable() bool { return c == OutputBusy }

// Error is a failure with its code and a message that is safe to show to
// anyone: it never holds an absolute path, and nothing from a request or a
// source but IDs that passed validation.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

func fail(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// step names what the app was doing when a port or the domain failed; with
// the error it decides the code.
type step int

const (
	openingWorkspace step = iota
	readingSource
	rereadingSource // analyze's re-check before the commit, and verify's
	resolvingOutput
	checkingMarker
	writingRun
	readingRun
	identifyingEngine
)

// classify is the one table from failures to codes. subject names the file
// or directory involved, workspace-relative.
func classify(s step, subject string, err error) *Error {
	var (
		de  *domain.DataError
		le  *domain.LimitError
		dfe *domain.DefinitionsError
		ne  *domain.NumericError
	)
	switch {
	case errors.As(err, &de):
		return fail(InvalidData, "%s", de.Error())
	case errors.As(err, &le):
		return fail(InputLimit, "%s", le.Error())
	case errors.As(err, &dfe):
		return fail(InvalidDefinitions, "%s", dfe.Error())
	case errors.As(err, &ne):
		return fail(IOOrNumericError, "%s", ne.Error())
	}
	switch s {
	case openingWorkspace:
		switch {
		case errors.Is(err, ports.ErrMissing):
			return fail(MissingWorkspace, "the workspace does not exist")
		case errors.Is(err, ports.ErrNotDir):
			return fail(MissingWorkspace, "the workspace is not a directory")
		}
		return fail(MissingWorkspace, "the workspace cannot be opened")
	case readingSource, rereadingSource:
		switch {
		case errors.Is(err, ports.ErrMissing):
			return fail(MissingInput, "%s does not exist", subject)
		case errors.Is(err, ports.ErrNotRegular):
			return fail(MissingInput, "%s is not a regular file", subject)
		case errors.Is(err, ports.ErrTooLarge):
			return fail(InputLimit, "%s is larger than %d bytes", subject, domain.MaxSourceBytes)
		case errors.Is(err, ports.ErrOutside):
			return fail(PathBoundary, "%s resolves outside the workspace", subject)
		}
		return fail(IOOrNumericError, "%s could not be read", subject)
	case resolvingOutput:
		switch {
		case errors.Is(err, ports.ErrOutside):
			return fail(PathBoundary, "the output directory resolves outside the workspace")
		case errors.Is(err, ports.ErrNotDir):
			return fail(InvalidOutput, "the output directory's path runs through a file")
		}
		return fail(IOOrNumericError, "the output directory could not be resolved")
	case checkingMarker:
		if errors.Is(err, ports.ErrOutside) {
			return fail(PathBoundary, "the cancel file resolves outside the workspace")
		}
		return fail(IOOrNumericError, "the cancel file could not be checked")
	case writingRun:
		switch {
		case errors.Is(err, ports.ErrBusy):
			return fail(OutputBusy, "another analyze holds the writer lock of %s; retry when it is done", subject)
		case errors.Is(err, ports.ErrExists):
			return fail(OutputCollision, "%s already exists; existing evidence is never overwritten: use a new run ID", subject)
		case errors.Is(err, ports.ErrNotDir):
			return classify(resolvingOutput, subject, err)
		case errors.Is(err, ports.ErrOutside):
			return fail(PathBoundary, "the output directory or its lock file resolves outside the workspace")
		case errors.Is(err, ports.ErrInsideEvidence):
			return fail(PathBoundary, "the output directory %s became a run or lies inside one while this call was reading the sources; nothing was written: choose an output directory outside every run", subject)
		case errors.Is(err, ports.ErrNoReplaceUnsupported):
			return fail(IOOrNumericError, "the filesystem of %s cannot rename without replacing, so no commit is safe; nothing was committed", subject)
		}
		return fail(IOOrNumericError, "writing the run in %s failed; nothing was committed", subject)
	case readingRun:
		if errors.Is(err, ports.ErrOutside) {
			return fail(PathBoundary, "the run resolves outside the workspace")
		}
		return fail(IOOrNumericError, "the run %s could not be read", subject)
	case identifyingEngine:
		return fail(IOOrNumericError, "the running engine could not be hashed")
	}
	return fail(InternalError, "unexpected failure")
}
