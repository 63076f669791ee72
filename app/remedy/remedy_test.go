package remedy_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/app/remedy"
	"github.com/metricproof/metricproof/ports"
)

// A recognised cause is named with what to do, and the OS error's own
// text, which may hold a path, never is; an unknown failure adds nothing.
func TestBecauseNamesTheCauseNeverTheOSText(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"a full disk", fmt.Errorf("write /home/op/runs/x: %w", ports.ErrNoSpace), " (" + ports.ErrNoSpace.Error() + ": free space on that file system, then retry)"},
		{"a store that did not answer", fmt.Errorf("GET https://s3.example/b: %w", ports.ErrUnavailable), " (" + ports.ErrUnavailable.Error() + ": retry; if it persists, check that the store is up and that AWS_ENDPOINT_URL_S3 (or AWS's own endpoint) reaches it)"},
		{"an unknown failure", errors.New("open /home/op/secret: bad"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got := remedy.Because(tt.err)
			is.Equal(got, tt.want)
			is.True(!strings.Contains(got, "/home"))
		})
	}
}

// Only a store that did not answer makes a fault retryable.
func TestRetryableIfOnlyTheStoreDidNotAnswer(t *testing.T) {
	is := is.New(t)
	e := func() *protocol.Error { return protocol.Errorf(protocol.IOOrNumericError, "x") }
	is.True(remedy.RetryableIf(fmt.Errorf("get: %w", ports.ErrUnavailable), e()).Retryable)
	is.True(!remedy.RetryableIf(ports.ErrNoSpace, e()).Retryable)
	is.Equal(remedy.NoBucket("the ledger").Code, protocol.InvalidOutput)
}
