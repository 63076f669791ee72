package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// The protocol's codes and error (package protocol), under the names the
// app and its callers use.
type (
	// Code is one of the protocol's error codes ([protocol.Code]).
	Code = protocol.Code
	// Error is a failure with its code and a message safe to show
	// ([protocol.Error]).
	Error = protocol.Error
)

// The error codes of protocol 1.0 ([protocol.Codes]).
const (
	InvalidOptions     = protocol.InvalidOptions
	RequestLimit       = protocol.RequestLimit
	InvalidJSON        = protocol.InvalidJSON
	InvalidRequest     = protocol.InvalidRequest
	UnknownTool        = protocol.UnknownTool
	InvalidArguments   = protocol.InvalidArguments
	MissingContext     = protocol.MissingContext
	MissingWorkspace   = protocol.MissingWorkspace
	PathBoundary       = protocol.PathBoundary
	InvalidOutput      = protocol.InvalidOutput
	Cancelled          = protocol.Cancelled
	MissingInput       = protocol.MissingInput
	InputLimit         = protocol.InputLimit
	InvalidData        = protocol.InvalidData
	InvalidDefinitions = protocol.InvalidDefinitions
	StaleContext       = protocol.StaleContext
	OutputBusy         = protocol.OutputBusy
	OutputCollision    = protocol.OutputCollision
	MissingResult      = protocol.MissingResult
	ReceiptTampered    = protocol.ReceiptTampered
	ResultTampered     = protocol.ResultTampered
	InvalidSavedResult = protocol.InvalidSavedResult
	StaleSources       = protocol.StaleSources
	EngineChanged      = protocol.EngineChanged
	IOOrNumericError   = protocol.IOOrNumericError
	InternalError      = protocol.InternalError
	SignatureInvalid   = protocol.SignatureInvalid
	LedgerTampered     = protocol.LedgerTampered
)

// Codes returns every code, in [protocol.Codes]' order.
func Codes() []Code { return protocol.Codes() }

func fail(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// finding is what a check found wrong by itself, with no port or domain
// error behind it: a digest that differs, a receipt that names another
// run. Its message is safe to show; the step that found it decides the
// code in [classify].
type finding struct{ msg string }

func (f *finding) Error() string { return f.msg }

func found(format string, args ...any) error {
	return &finding{msg: fmt.Sprintf(format, args...)}
}

// step names what the app was doing when something failed; with the error
// it decides the code.
type step int

const (
	openingWorkspace step = iota
	readingSigningKey
	readingTrustedKey
	resolvingLedger
	confining
	checkingLedger
	lockingLedger    // analyze's hold on the ledger's lock before its commit
	recheckingLedger // analyze's check of the last record under that lock
	appendingLedger
	readingInput
	resolvingOutput
	checkingMarker
	checkingCancel
	readingSource
	comparingDigest
	rereadingSource // analyze's re-check before the commit
	encodingRun
	writingRun
	identifyingEngine
	readingRun
	// The checks of verify_result, in the order of [Checks].
	checkingPresence
	checkingShapes
	bindingReceipt
	bindingResult
	checkingSignature
	checkingSources
	checkingEngine
	recomputing
)

// findingCodes gives the code of a finding, by the step that found it.
func findingCodes() map[step]Code {
	return map[step]Code{
		readingSigningKey: InvalidOptions,
		readingTrustedKey: InvalidOptions,
		resolvingLedger:   PathBoundary,
		checkingLedger:    LedgerTampered,
		recheckingLedger:  LedgerTampered,
		appendingLedger:   IOOrNumericError, // protocol §11: a failed append
		resolvingOutput:   PathBoundary,
		writingRun:        OutputCollision,
		checkingCancel:    Cancelled,
		comparingDigest:   StaleContext,
		rereadingSource:   StaleContext,
		checkingPresence:  MissingResult,
		checkingShapes:    InvalidSavedResult,
		bindingReceipt:    ReceiptTampered,
		bindingResult:     ResultTampered,
		checkingSignature: SignatureInvalid,
		checkingSources:   StaleSources,
		checkingEngine:    EngineChanged,
		recomputing:       ResultTampered,
	}
}

// classify is the one table from failures to codes: a finding takes the
// code of the step that found it; a domain error its own; a port error the
// code its step gives it. subject names the file or directory involved,
// workspace-relative.
func classify(s step, subject string, err error) *Error {
	var (
		f   *finding
		de  *domain.DataError
		le  *domain.LimitError
		dfe *domain.DefinitionsError
		ne  *domain.NumericError
	)
	if errors.As(err, &f) {
		code, ok := findingCodes()[s]
		if !ok {
			return fail(InternalError, "unexpected failure")
		}
		return fail(code, "%s", f.msg)
	}
	domainErr := errors.As(err, &de) || errors.As(err, &le) || errors.As(err, &dfe) || errors.As(err, &ne)
	if s == recomputing {
		if !domainErr {
			return fail(InternalError, "the recomputed result could not be encoded")
		}
		// The receipt's own source bytes, refused by the engine that made
		// the run, which would have refused them too: the run is forged.
		return fail(ResultTampered, "run %s is bound to sources this engine refuses (%s)", subject, classify(readingSource, fileOf(err), err).Message)
	}
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
		return fail(MissingWorkspace, "the workspace cannot be opened%s", because(err))
	case readingSigningKey, readingTrustedKey:
		option, want, how := "--signing-key", "an Ed25519 private key in PKCS#8 PEM, unencrypted and alone in its file (a public key goes to --trusted-key)", "make one with openssl genpkey -algorithm ed25519, then chmod 600"
		if s == readingTrustedKey {
			option, want, how = "--trusted-key", "an Ed25519 public key in SPKI PEM, alone in its file (a private key goes to --signing-key)", "make it from the signer's private key with openssl pkey -pubout"
		}
		switch {
		case errors.Is(err, ports.ErrMissing):
			return fail(InvalidOptions, "the file of %s does not exist; give the path of an existing key file, or %s", option, how)
		case errors.Is(err, ports.ErrNotRegular):
			return fail(InvalidOptions, "the file of %s is not a regular file; give the path of the key file itself", option)
		case errors.Is(err, ports.ErrKeyExposed):
			return fail(InvalidOptions, "the file of %s grants access to group or others; make it private with chmod 600 (and make a new key if others may have read it)", option)
		case errors.Is(err, ports.ErrKeyFormat):
			return fail(InvalidOptions, "the file of %s is not %s; %s", option, want, how)
		}
		return fail(InvalidOptions, "the file of %s could not be read%s; check that this user may read it", option, because(err))
	case resolvingLedger:
		switch {
		case errors.Is(err, ports.ErrOutside):
			return fail(PathBoundary, "the ledger resolves outside the workspace; give --ledger a path inside it")
		case errors.Is(err, ports.ErrNotDir), errors.Is(err, ports.ErrMissing):
			return fail(InvalidOutput, "the ledger's directory does not exist; create it first")
		case errors.Is(err, ports.ErrNameTooLong):
			return fail(InvalidOutput, "the ledger's path is not one its file system accepts%s", because(err))
		case errors.Is(err, ports.ErrNotRegular):
			return fail(InvalidOutput, "the ledger exists and is not a regular file; give --ledger a regular file, or a new name in an existing directory")
		case errors.Is(err, ports.ErrMoved):
			return fail(PathBoundary, "a directory on the ledger's path was replaced by a symlink while the ledger was being opened; nothing was run: restore it, or give --ledger the place you mean")
		}
		return fail(IOOrNumericError, "the ledger could not be resolved%s", because(err))
	case confining:
		return fail(IOOrNumericError, "the program could not confine itself to the files and ports this command needs, so it did nothing%s: retry, and if it persists, check that nothing moves the workspace's folders while it starts", because(err))
	case checkingLedger:
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return fail(Cancelled, "the call was cancelled while it waited for another process's lock on the ledger; nothing was run")
		case errors.Is(err, ports.ErrMissing):
			return fail(InvalidOptions, "the ledger does not exist (the first call recorded in it creates it); check the --ledger path")
		case errors.Is(err, ports.ErrNotRegular):
			return fail(InvalidOutput, "the ledger exists and is not a regular file; give --ledger a regular file, or a new name in an existing directory")
		case errors.Is(err, ports.ErrBusy):
			return fail(IOOrNumericError, "this call waited %d s for a shared lock on the ledger, to read its last record, and did not get one: %s; nothing was run: retry", ledgerWaitSeconds, whoHeldTheLedger)
		case errors.Is(err, ports.ErrLinked):
			return fail(InvalidOutput, "%s; nothing was run", ledgerLinked)
		}
		return fail(IOOrNumericError, "the ledger could not be read%s; nothing was run", because(err))
	case lockingLedger:
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return fail(Cancelled, "the call was cancelled while it waited for another process's lock on the ledger before its commit; nothing was committed, and the call was not recorded (recording it would mean waiting for that lock)")
		case errors.Is(err, ports.ErrBusy):
			return fail(IOOrNumericError, "this analyze waited %d s for the ledger's lock before its commit and did not get it: %s; nothing was committed, and the call was not recorded: retry", ledgerWaitSeconds, whoHeldTheLedger)
		case errors.Is(err, ports.ErrLockExposed):
			return fail(InvalidOutput, "%s; nothing was committed, and the call was not recorded", ledgerExposed)
		case errors.Is(err, ports.ErrLinked):
			return fail(InvalidOutput, "%s; nothing was committed, and the call was not recorded", ledgerLinked)
		case errors.Is(err, ports.ErrNotRegular):
			return fail(InvalidOutput, "the ledger is no longer a regular file; nothing was committed, and the call was not recorded: give --ledger a regular file")
		}
		return fail(IOOrNumericError, "the ledger could not be locked before the commit%s; nothing was committed, and the call was not recorded", because(err))
	case recheckingLedger:
		return fail(IOOrNumericError, "the ledger could not be read under its lock before the commit%s; nothing was committed, and the call was not recorded", because(err))
	case appendingLedger:
		switch {
		case errors.Is(err, ports.ErrBusy):
			return fail(IOOrNumericError, "this call waited %d s for the ledger's lock, to record itself, and did not get it: %s; so this call was not recorded", ledgerWaitSeconds, whoHeldTheLedger)
		case errors.Is(err, ports.ErrLockExposed):
			return fail(InvalidOutput, "%s; so this call was not recorded", ledgerExposed)
		case errors.Is(err, ports.ErrLinked):
			return fail(InvalidOutput, "%s; so this call was not recorded", ledgerLinked)
		case errors.Is(err, ports.ErrTornRemains):
			return fail(IOOrNumericError, "recording the call in the ledger failed%s, and a torn part of the record stays at the end of the ledger, which could not be cut back: every call answers LEDGER_TAMPERED until it is repaired: inspect it with tool-runner ledger, and see README on repairing it", because(err))
		}
		return fail(IOOrNumericError, "recording the call in the ledger failed%s", because(err))
	case readingInput:
		return fail(IOOrNumericError, "standard input could not be read")
	case resolvingOutput:
		switch {
		case errors.Is(err, errNotADirectory):
			return fail(InvalidOutput, "%s", errNotADirectory.Error())
		case errors.Is(err, ports.ErrOutside):
			return fail(PathBoundary, "the output directory resolves outside the workspace")
		case errors.Is(err, ports.ErrNotDir):
			return fail(InvalidOutput, "the output directory's path runs through a file")
		case errors.Is(err, ports.ErrNameTooLong):
			return fail(InvalidOutput, "the output directory's path is not one its file system accepts%s", because(err))
		}
		return fail(IOOrNumericError, "the output directory could not be resolved%s", because(err))
	case checkingMarker:
		if errors.Is(err, ports.ErrOutside) {
			return fail(PathBoundary, "the cancel file resolves outside the workspace")
		}
		return fail(IOOrNumericError, "the cancel file could not be checked%s", because(err))
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
		return fail(IOOrNumericError, "%s could not be read%s", subject, because(err))
	case encodingRun:
		return fail(InternalError, "the %s could not be encoded", subject)
	case writingRun:
		switch {
		case errors.Is(err, ports.ErrBusy):
			return fail(OutputBusy, "another analyze holds the writer lock of %s; retry when it is done", subject)
		case errors.Is(err, ports.ErrLockExposed):
			return fail(InvalidOutput, "the output directory's writer lock file (%s) is open to group or others, so another account could hold it, and this user may not change its mode; nothing was written: have the file's owner run chmod 600 on it", ports.LockFile)
		case errors.Is(err, ports.ErrLinked):
			return fail(InvalidOutput, "the output directory's writer lock file (%s) has more than one hard link, so another name of it may lie outside the workspace; nothing was written: remove the extra link (or, when no analyze is running, this lock file: the next analyze makes a new one)", ports.LockFile)
		case errors.Is(err, ports.ErrExists):
			return fail(OutputCollision, "%s already exists; existing evidence is never overwritten: use a new run ID", subject)
		case errors.Is(err, ports.ErrNotDir), errors.Is(err, ports.ErrNameTooLong):
			return classify(resolvingOutput, subject, err)
		case errors.Is(err, ports.ErrOutside):
			return fail(PathBoundary, "the output directory or its lock file leads out of the output directory (a symlink put there after the path was checked?); nothing was written: remove it, or choose another output directory")
		case errors.Is(err, ports.ErrInsideEvidence):
			return fail(PathBoundary, "the output directory %s became a run or lies inside one while this call was reading the sources; nothing was written: choose an output directory outside every run", subject)
		case errors.Is(err, ports.ErrMaybeCommitted):
			return fail(IOOrNumericError, "the run %s was renamed into place, but making it durable failed%s and it could not be moved back out of sight: the run may be committed, and may not survive a crash of the machine: verify it with verify_result before you rely on it (a retry with the same run ID answers OUTPUT_COLLISION while it stands)", subject, because(err))
		case errors.Is(err, ports.ErrNoReplaceUnsupported):
			return fail(IOOrNumericError, "the filesystem of %s cannot rename without replacing, so no commit is safe; nothing was committed", subject)
		}
		return fail(IOOrNumericError, "writing the run in %s failed%s; nothing was committed", subject, because(err))
	case identifyingEngine, checkingEngine:
		return fail(IOOrNumericError, "the running engine could not be hashed")
	case readingRun, checkingPresence, checkingShapes:
		switch {
		case errors.Is(err, ports.ErrOutside):
			return fail(PathBoundary, "the run resolves outside the workspace")
		case s == checkingPresence && errors.Is(err, ports.ErrMissing):
			return fail(MissingResult, "run %s has no %s", subject, fileOf(err))
		case s == checkingShapes && errors.Is(err, ports.ErrNotRegular):
			return fail(InvalidSavedResult, "%s of run %s is not a regular file", fileOf(err), subject)
		case s == checkingShapes && errors.Is(err, ports.ErrTooLarge):
			return fail(InvalidSavedResult, "%s of run %s is larger than %d bytes", fileOf(err), subject, MaxSavedBytes)
		}
		if name := fileOf(err); name != "" {
			return fail(IOOrNumericError, "%s of run %s could not be read%s", name, subject, because(err))
		}
		return fail(IOOrNumericError, "the run %s could not be read%s", subject, because(err))
	case checkingSources:
		switch {
		case errors.Is(err, ports.ErrMissing), errors.Is(err, ports.ErrNotRegular), errors.Is(err, ports.ErrTooLarge):
			return fail(StaleSources, "the sources changed since run %s: %s", subject, classify(readingSource, fileOf(err), err).Message)
		}
		return classify(readingSource, fileOf(err), err)
	}
	return fail(InternalError, "unexpected failure")
}

// whoHeldTheLedger says, truthfully, why a wait for the ledger's lock ran
// out: the wait cannot tell one holder that kept it from many that took
// turns, nor this process's calls from others'.
const whoHeldTheLedger = "other calls (of this process or others, or another account that can open the file) held it or were ahead in line all that time"

// ledgerExposed is the fault of a ledger whose mode cannot be made 0600.
const ledgerExposed = "the ledger is open to group or others, so another account could hold its lock, and this user may not change its mode: have the file's owner run chmod 600 on it"

// ledgerLinked is the fault of a ledger with more than one hard link.
const ledgerLinked = "the ledger has more than one hard link, so another name of it may lie outside the workspace, and every record would be written there too: remove the extra link, or give --ledger a new path"

// because names the cause of an I/O failure in words the operator can act
// on, and what to do about it, when the adapter recognised it: " (no space
// left on the device: free space on that file system, then retry)". It
// never shows an OS error's own text, which may hold a path.
func because(err error) string {
	for _, cause := range ports.IOCauses() {
		if !errors.Is(err, cause) {
			continue
		}
		if remedy, ok := remedies()[cause]; ok {
			return " (" + cause.Error() + ": " + remedy + ")"
		}
		return " (" + cause.Error() + ")"
	}
	return ""
}

// remedies says, for each cause of ports.IOCauses, what the operator can
// do about it.
func remedies() map[error]string {
	return map[error]string{
		ports.ErrNoSpace:     "free space on that file system, then retry",
		ports.ErrQuota:       "free space within the quota or raise it, then retry",
		ports.ErrReadOnly:    "mount it read-write, or choose a place on a writable file system",
		ports.ErrPermission:  "give the user running tool-runner access there, or choose another place",
		ports.ErrNameTooLong: "choose a shorter path",
		ports.ErrPlatform:    "analyze, and any call or check with a ledger, need Linux or macOS; inspect_inputs and verify_result work here",
	}
}

// inFile ties a port error to the name of the file it is about, so the
// message can name it.
type inFile struct {
	name string
	err  error
}

func (e *inFile) Error() string { return e.name + ": " + e.err.Error() }
func (e *inFile) Unwrap() error { return e.err }

func about(name string, err error) error { return &inFile{name: name, err: err} }

func fileOf(err error) string {
	var f *inFile
	if errors.As(err, &f) {
		return f.name
	}
	return ""
}
