package app

import (
	"errors"

	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/app/remedy"
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
	return protocol.Errorf(protocol.IOOrNumericError, "%s could not be read%s", name, remedy.Because(err))
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
	return protocol.Errorf(protocol.MissingWorkspace, "the workspace cannot be opened%s", remedy.Because(err))
}

// markerFault is a cancel marker that could not be checked.
func markerFault(err error) *protocol.Error {
	if errors.Is(err, ports.ErrOutside) {
		return protocol.Errorf(protocol.PathBoundary, "the cancel file resolves outside the workspace")
	}
	return protocol.Errorf(protocol.IOOrNumericError, "the cancel file could not be checked%s", remedy.Because(err))
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
		return remedy.NoBucket("the output directory")
	case name != "":
		return remedy.RetryableIf(err, protocol.Errorf(protocol.IOOrNumericError, "%s of run %s could not be read%s", name, runID, remedy.Because(err)))
	}
	return remedy.RetryableIf(err, protocol.Errorf(protocol.IOOrNumericError, "the run %s could not be read%s", runID, remedy.Because(err)))
}

// placeFault is a place in object storage, what ("the output directory",
// "the ledger"), that its store would not serve when asked once (Reach).
func placeFault(what string, err error) *protocol.Error {
	if errors.Is(err, ports.ErrNoBucket) {
		return remedy.NoBucket(what)
	}
	return remedy.RetryableIf(err, protocol.Errorf(protocol.IOOrNumericError, "%s could not be listed in its store%s", what, remedy.Because(err)))
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
