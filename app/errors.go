package app

import (
	"errors"

	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// Every failure gets its code where it happens: a check that finds
// something wrong says so with protocol.Errorf, and a port's or the
// domain's error is turned into one by the fault function of what was
// being done (sourceFault, writeFault, …), each beside the code that calls
// the port. The functions below are the ones several places share.

// domainFault is the code of a refusal of the domain, or nil when err is
// none.
func domainFault(err error) *protocol.Error {
	var (
		de  *domain.DataError
		le  *domain.LimitError
		dfe *domain.DefinitionsError
		ne  *domain.NumericError
	)
	switch {
	case errors.As(err, &de):
		return protocol.Errorf(protocol.InvalidData, "%s", de.Error())
	case errors.As(err, &le):
		return protocol.Errorf(protocol.InputLimit, "%s", le.Error())
	case errors.As(err, &dfe):
		return protocol.Errorf(protocol.InvalidDefinitions, "%s", dfe.Error())
	case errors.As(err, &ne):
		return protocol.Errorf(protocol.IOOrNumericError, "%s", ne.Error())
	}
	return nil
}

// sourceFault is a source that could not be read, or whose bytes the
// domain refused; name is the file, workspace-relative.
func sourceFault(name string, err error) *protocol.Error {
	if e := domainFault(err); e != nil {
		return e
	}
	switch {
	case errors.Is(err, ports.ErrMissing):
		return protocol.Errorf(protocol.MissingInput, "%s does not exist", name)
	case errors.Is(err, ports.ErrNotRegular):
		return protocol.Errorf(protocol.MissingInput, "%s is not a regular file", name)
	case errors.Is(err, ports.ErrTooLarge):
		return protocol.Errorf(protocol.InputLimit, "%s is larger than %d bytes", name, domain.MaxSourceBytes)
	case errors.Is(err, ports.ErrOutside):
		return protocol.Errorf(protocol.PathBoundary, "%s resolves outside the workspace", name)
	}
	return protocol.Errorf(protocol.IOOrNumericError, "%s could not be read%s", name, because(err))
}

// optionFault is an option naming a place in object storage that the
// composition could not open (protocol §15.5): INVALID_OPTIONS, decided
// before any request, unrecorded.
func optionFault(e *OptionError) *protocol.Error {
	switch {
	case errors.Is(e.Err, ports.ErrStoreURL):
		return protocol.Errorf(protocol.InvalidOptions, "%s is not a store's URL: s3://BUCKET or s3://BUCKET/PREFIX, the bucket 3 to 63 lowercase letters, digits, dots and hyphens, the prefix plain names (none empty, . or .., none starting with %s or %s, no control character, backslash, ?, # or %%)", e.Option, ".attempt-", ports.PendingPrefix)
	case errors.Is(e.Err, ports.ErrNoCredentials):
		return protocol.Errorf(protocol.InvalidOptions, "%s names object storage, and the standard AWS environment and files hold no credentials this program could use: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (docs/team.md says what they must be allowed)", e.Option)
	}
	return protocol.Errorf(protocol.InvalidOptions, "%s names object storage, and the standard AWS configuration (AWS_* environment variables, the config and credentials files) could not be read or names no region: set AWS_REGION (and AWS_ENDPOINT_URL_S3 for a server of your own), or correct the profile", e.Option)
}

// workspaceFault is a workspace that could not be opened.
func workspaceFault(err error) *protocol.Error {
	switch {
	case errors.Is(err, ports.ErrMissing):
		return protocol.Errorf(protocol.MissingWorkspace, "the workspace does not exist")
	case errors.Is(err, ports.ErrNotDir):
		return protocol.Errorf(protocol.MissingWorkspace, "the workspace is not a directory")
	}
	return protocol.Errorf(protocol.MissingWorkspace, "the workspace cannot be opened%s", because(err))
}

// markerFault is a cancel marker that could not be checked.
func markerFault(err error) *protocol.Error {
	if errors.Is(err, ports.ErrOutside) {
		return protocol.Errorf(protocol.PathBoundary, "the cancel file resolves outside the workspace")
	}
	return protocol.Errorf(protocol.IOOrNumericError, "the cancel file could not be checked%s", because(err))
}

// engineFault is an engine that could not be hashed.
func engineFault() *protocol.Error {
	return protocol.Errorf(protocol.IOOrNumericError, "the running engine could not be hashed")
}

// runFault is a run, or its file name (when not empty), that could not be
// read.
func runFault(runID, name string, err error) *protocol.Error {
	switch {
	case errors.Is(err, ports.ErrOutside):
		return protocol.Errorf(protocol.PathBoundary, "the run resolves outside the workspace")
	case errors.Is(err, ports.ErrNoBucket):
		return noBucket("the output directory")
	case name != "":
		return retryableIf(err, protocol.Errorf(protocol.IOOrNumericError, "%s of run %s could not be read%s", name, runID, because(err)))
	}
	return retryableIf(err, protocol.Errorf(protocol.IOOrNumericError, "the run %s could not be read%s", runID, because(err)))
}

// placeFault is a place in object storage, what ("the output directory",
// "the ledger"), that its store would not serve when asked once (Reach).
func placeFault(what string, err error) *protocol.Error {
	if errors.Is(err, ports.ErrNoBucket) {
		return noBucket(what)
	}
	return retryableIf(err, protocol.Errorf(protocol.IOOrNumericError, "%s could not be listed in its store%s", what, because(err)))
}

// noBucket is a place in object storage, what, whose bucket the store
// says it does not have: a fault of the option, which no retry mends.
func noBucket(what string) *protocol.Error {
	return protocol.Errorf(protocol.InvalidOutput, "the bucket of %s does not exist in its store; nothing was read or written: create it (docs/team.md says how), or correct the option's URL", what)
}

// retryableIf marks e retryable when err is a store that did not answer
// (ports.ErrUnavailable): the same call may then succeed (protocol §15.4).
func retryableIf(err error, e *protocol.Error) *protocol.Error {
	if errors.Is(err, ports.ErrUnavailable) {
		e.Retryable = true
	}
	return e
}

// because names the cause of an I/O failure in words the operator can act
// on, and what to do about it, when the adapter recognised it: " (no space
// left on the device: free space on that file system, then retry)". It
// never shows an OS error's own text, which may hold a path.
func because(err error) string {
	for _, cause := range append(ports.StoreCauses(), ports.IOCauses()...) {
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
		ports.ErrNoBucket:    "create it (docs/team.md says how), or correct the option's URL",
		ports.ErrStoreDenied: "give them what docs/team.md lists (to create, read and list objects), or set others",
		ports.ErrUnavailable: "retry; if it persists, check that the store is up and that AWS_ENDPOINT_URL_S3 (or AWS's own endpoint) reaches it",
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
