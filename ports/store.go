package ports

import "errors"

// Errors of an evidence or ledger store reached over a network (S3-compatible
// object storage, protocol §15), besides those above. A store that cannot
// answer must never be taken for an answer: no run is "missing" and no
// ledger "empty" because the store was down.
var (
	// ErrUnavailable: the store could not be reached, or answered with a
	// failure of its own (a timeout, a refused connection, a server
	// error, throttling). Nothing is known about what was asked; the same
	// call may succeed later, so the app answers it as retryable.
	ErrUnavailable = errors.New("the store could not be reached")
	// ErrOutcomeUnknown: a write was sent and no answer came back, and the
	// store could not be asked afterwards whether it took effect. It comes
	// with ErrUnavailable. The object may exist now or appear later: a
	// commit so reported may be committed (verify it), a record so
	// reported may be in the ledger.
	ErrOutcomeUnknown = errors.New("the store did not say whether the write took effect")
	// ErrNoBucket: the store has no bucket of the name the operator gave.
	ErrNoBucket = errors.New("the bucket does not exist")
	// ErrStoreDenied: the store refused the request for its credentials
	// (unknown, expired, or not granted what the program needs). It comes
	// with ErrPermission.
	ErrStoreDenied = errors.New("the store refused the credentials")
)

// Errors of opening a store that an option names, before any request:
// the option's value cannot name one, or the standard environment cannot
// reach one. Neither says more than its own text, which names no file.
var (
	// ErrStoreURL: the value is not a URL of a store (s3://BUCKET/PREFIX
	// with a valid bucket name and plain key names).
	ErrStoreURL = errors.New("not an s3://BUCKET/PREFIX URL")
	// ErrStoreConfig: the standard AWS configuration (AWS_* environment
	// variables, the config and credentials files) could not be read, or
	// names no region.
	ErrStoreConfig = errors.New("the AWS configuration (AWS_* environment variables, the config and credentials files) could not be read or names no region")
	// ErrNoCredentials: the standard AWS environment and files hold no
	// credentials the client could use.
	ErrNoCredentials = errors.New("the AWS environment and files hold no usable credentials")
)

// StoreCauses are the failures of a store that an adapter wraps into the
// error it returns, as IOCauses are a disk's, so that the operator is told
// what to fix. Their texts are shown as they are.
func StoreCauses() []error {
	return []error{ErrNoBucket, ErrStoreDenied, ErrUnavailable}
}
