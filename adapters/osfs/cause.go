package osfs

import (
	"errors"
	"syscall"

	"github.com/metricproof/metricproof/ports"
)

// ioFault is an OS error with the cause the operator can act on.
type ioFault struct {
	cause, err error
}

func (e *ioFault) Error() string   { return e.cause.Error() + ": " + e.err.Error() }
func (e *ioFault) Unwrap() []error { return []error{e.cause, e.err} }

// withCause wraps an OS error whose errno the ports name (a full disk, a
// quota, a read-only mount, a denied permission, a name too long) with
// that cause, so the app can tell the operator what to fix. Other errors,
// and errors already wrapped, pass as they are.
func withCause(err error) error {
	var cause error
	var wrapped *ioFault
	switch {
	case err == nil:
		return nil
	case errors.As(err, &wrapped):
		return err
	case errors.Is(err, syscall.ENOSPC):
		cause = ports.ErrNoSpace
	case errors.Is(err, syscall.EDQUOT):
		cause = ports.ErrQuota
	case errors.Is(err, syscall.EROFS):
		cause = ports.ErrReadOnly
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		cause = ports.ErrPermission
	case errors.Is(err, syscall.ENAMETOOLONG):
		cause = ports.ErrNameTooLong
	default:
		return err
	}
	return &ioFault{cause: cause, err: err}
}
