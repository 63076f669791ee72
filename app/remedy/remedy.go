// Package remedy words a port's failure for the operator: the cause the
// adapter recognised and what to do about it ([Because]), whether the same
// call may succeed when retried ([RetryableIf]), and a store without the
// bucket an option names ([NoBucket]). It never shows an OS error's own
// text, which may hold a path.
package remedy

import (
	"errors"

	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/ports"
)

// RetryableIf marks e retryable when err is a store that did not answer
// (ports.ErrUnavailable): the same call may then succeed (protocol §15.4).
func RetryableIf(err error, e *protocol.Error) *protocol.Error {
	if errors.Is(err, ports.ErrUnavailable) {
		e.Retryable = true
	}
	return e
}

// NoBucket is a place in object storage, what, whose bucket the store
// says it does not have: a fault of the option, which no retry mends.
func NoBucket(what string) *protocol.Error {
	return protocol.Errorf(protocol.InvalidOutput, "the bucket of %s does not exist in its store; nothing was read or written: create it (docs/team.md says how), or correct the option's URL", what)
}

// Because names the cause of an I/O failure and what to do about it, when
// the adapter recognised it, as a message's aside: " (no space left on
// the device: free space on that file system, then retry)"; "" otherwise.
func Because(err error) string {
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

// remedies says, for each cause of ports.IOCauses and ports.StoreCauses,
// what the operator can do about it.
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
