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

// version says whether its engine can be rebuilt: true with no blockers
// for what README's command records from a clean clone, false with each
// blocker's code, in order, for what it does not.
func TestVersionSaysWhetherTheEngineCanBeRebuilt(t *testing.T) {
	readme := map[string]string{"-buildmode": "exe", "-compiler": "gc", "-trimpath": "true", "CGO_ENABLED": "0", "GOARCH": "amd64", "GOOS": "linux",
		"vcs": "git", "vcs.revision": strings.Repeat("a", 40), "vcs.modified": "false"}
	unstamped := map[string]string{"-buildmode": "exe", "-compiler": "gc", "-trimpath": "true", "CGO_ENABLED": "0", "GOARCH": "amd64", "GOOS": "linux"}
	tests := []struct {
		name     string
		settings map[string]string
		want     string
	}{
		{"README's build", readme, `"rebuildable":true,"rebuild_blockers":[]}`},
		{"GOFLAGS=-buildvcs=false", unstamped, `"rebuildable":false,"rebuild_blockers":["no_vcs_revision"]}`},
		{"no build information", nil, `"settings":{},"rebuildable":false,"rebuild_blockers":["no_build_info"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var stdout, stderr bytes.Buffer
			is.Equal(stdio.Version(nil, &stdout, &stderr, porttest.FixedEngine{SHA256: strings.Repeat("e", 64)}, tt.settings), 0)
			is.True(strings.HasSuffix(stdout.String(), tt.want+"\n")) // the two keys, last
		})
	}
}

// -h or --help alone is the usage, exit 0; with anything else it is an
// argument like any other.
func TestVersionHelpIsItsUsage(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}} {
		t.Run(args[0], func(t *testing.T) {
			is := is.New(t)
			var stdout, stderr bytes.Buffer
			is.Equal(stdio.Version(args, &stdout, &stderr, porttest.FixedEngine{SHA256: strings.Repeat("e", 64)}, nil), 0)
			is.Equal(stdout.String(), stdio.VersionUsage)
			is.Equal(stderr.Len(), 0)
		})
	}
	is := is.New(t)
	var stdout, stderr bytes.Buffer
	is.Equal(stdio.Version([]string{"--help", "-h"}, &stdout, &stderr, porttest.FixedEngine{SHA256: strings.Repeat("e", 64)}, nil), 2)
	is.Equal(stdout.Len(), 0)
	is.True(strings.HasPrefix(stderr.String(), "INVALID_OPTIONS: "))
}

// Bare tool-runner is the usage on standard error, exit 2.
func TestBareIsTheUsageOnStandardError(t *testing.T) {
	is := is.New(t)
	var stderr bytes.Buffer
	is.Equal(stdio.Bare(&stderr), 2)
	is.Equal(stderr.String(), stdio.Usage)
}
