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
)
