package stdio_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/porttest"
	"github.com/metricproof/metricproof/adapters/stdio"
	"github.com/metricproof/metricproof/ports"
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
	exit := stdio.Version(nil, failingWriter{}, &stderr, porttest.FixedEngine{SHA256: strings.Repeat("e", 64)}, nil, confined)
	is.Equal(exit, 2)
	is.True(strings.HasPrefix(stderr.String(), "IO_OR_NUMERIC_ERROR: ")) // its code first
	is.Equal(strings.Count(stderr.String(), "\n"), 1)                    // one line

	stderr.Reset()
	var stdout bytes.Buffer
	is.Equal(stdio.Version(nil, &stdout, &stderr, porttest.FixedEngine{SHA256: strings.Repeat("e", 64)}, nil, confined), 0)
	is.Equal(stderr.Len(), 0)                                             // nothing on stderr when it is delivered
	is.True(strings.HasPrefix(stdout.String(), `{"engine_sha256":"eeee`)) // the line itself
}

// confined is a confinement that worked, on a kernel of Landlock ABI 7.
func confined() (ports.Confinement, error) {
	return ports.Confinement{LandlockABI: 7, Filesystem: true, Network: true, Scoped: true}, nil
}

// The arguments are checked before the process is confined, and a
// confinement the kernel refused prints no line: exit 2 and one line on
// standard error naming the code.
func TestVersionConfinesOnceItsArgumentsAreChecked(t *testing.T) {
	refused := errors.New("landlock_restrict_self: E2BIG")
	tests := []struct {
		name       string
		args       []string
		confineErr error
		exit       int
		confines   bool
		stdout     string
		stderr     string
	}{
		{"confined", nil, nil, 0, true, `"confinement":{"landlock_abi":7,"filesystem":true,"network":true,"scoped":true}}` + "\n", ""},
		{"an argument, never confined", []string{"x"}, nil, 2, false, "", "INVALID_OPTIONS: "},
		{"refused by the kernel", nil, refused, 2, true, "", "IO_OR_NUMERIC_ERROR: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			called := false
			confine := func() (ports.Confinement, error) {
				called = true
				c, _ := confined()
				return c, tt.confineErr
			}
			var stdout, stderr bytes.Buffer
			exit := stdio.Version(tt.args, &stdout, &stderr, porttest.FixedEngine{SHA256: strings.Repeat("e", 64)}, nil, confine)
			is.Equal(exit, tt.exit)
			is.Equal(called, tt.confines)
			is.True(strings.HasSuffix(stdout.String(), tt.stdout)) // the confinement closes the line
			is.Equal(stdout.Len() == 0, tt.stdout == "")
			is.True(strings.HasPrefix(stderr.String(), tt.stderr))
			is.Equal(strings.Count(stderr.String(), "\n"), map[bool]int{true: 0, false: 1}[tt.stderr == ""]) // at most one line
		})
	}
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
			is.Equal(stdio.Version(nil, &stdout, &stderr, porttest.FixedEngine{SHA256: strings.Repeat("e", 64)}, tt.settings, confined), 0)
			is.True(strings.Contains(stdout.String(), strings.TrimSuffix(tt.want, "}")+`,"confinement":`)) // the two keys, then the confinement
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
			is.Equal(stdio.Version(args, &stdout, &stderr, porttest.FixedEngine{SHA256: strings.Repeat("e", 64)}, nil, confined), 0)
			is.Equal(stdout.String(), stdio.VersionUsage)
			is.Equal(stderr.Len(), 0)
		})
	}
	is := is.New(t)
	var stdout, stderr bytes.Buffer
	is.Equal(stdio.Version([]string{"--help", "-h"}, &stdout, &stderr, porttest.FixedEngine{SHA256: strings.Repeat("e", 64)}, nil, confined), 2)
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
