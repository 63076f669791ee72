package stdio_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/porttest"
	"github.com/metricproof/metricproof/adapters/stdio"
)

// failingWriter is a standard output that takes nothing: a full disk, a
// closed pipe.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A version line that cannot be delivered is no success: exit 2 and one
// line on standard error naming its code, as every other fault of the
// command.
func TestVersionThatCannotBeWrittenSaysSo(t *testing.T) {
	is := is.New(t)
	var stderr bytes.Buffer
	exit := stdio.Version(nil, failingWriter{}, &stderr, porttest.FixedEngine{SHA256: strings.Repeat("e", 64)}, nil)
	is.Equal(exit, 2)
	is.True(strings.HasPrefix(stderr.String(), "IO_OR_NUMERIC_ERROR: ")) // its code first
	is.Equal(strings.Count(stderr.String(), "\n"), 1)                    // one line

	stderr.Reset()
	var stdout bytes.Buffer
	is.Equal(stdio.Version(nil, &stdout, &stderr, porttest.FixedEngine{SHA256: strings.Repeat("e", 64)}, nil), 0)
	is.Equal(stderr.Len(), 0)                                             // nothing on stderr when it is delivered
	is.True(strings.HasPrefix(stdout.String(), `{"engine_sha256":"eeee`)) // the line itself
}
