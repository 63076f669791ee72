package mcp_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/mcp"
	"github.com/metricproof/metricproof/adapters/mcp/internal/mcptest"
)

// At start (protocol §9.1), an engine that cannot be rebuilt from its
// receipts says so on standard error, one line naming each reason and what
// to do, after its options passed and before it serves; a rebuildable one
// says nothing, and an option fault is its one line alone. Standard output
// carries none of it.
func TestAnEngineNoOneCanRebuildSaysSoAtStart(t *testing.T) {
	unstamped := mcptest.ReadmeBuild()
	delete(unstamped, "vcs.revision")
	delete(unstamped, "vcs.modified")
	dirty := mcptest.ReadmeBuild()
	dirty["vcs.modified"] = "true"
	goRun := mcptest.ReadmeBuild()
	delete(goRun, "-trimpath")
	goRun["CGO_ENABLED"] = "1"
	tests := []struct {
		name     string
		settings map[string]string
		args     []string
		reasons  []string // what the one line says, in order; none: nothing on stderr
		code     string   // an option fault's code instead
	}{
		{"README's build", mcptest.ReadmeBuild(), nil, nil, ""},
		{"no revision (GOFLAGS=-buildvcs=false, a git worktree)", unstamped, nil, []string{"no VCS revision", "-buildvcs=true"}, ""},
		{"uncommitted changes", dirty, nil, []string{"uncommitted changes"}, ""},
		{"go run", goRun, nil, []string{"-trimpath", "cgo"}, ""},
		{"no build information", map[string]string{}, nil, []string{"no build information"}, ""},
		{"an option fault", unstamped, []string{"--list-limit", "x"}, nil, "INVALID_OPTIONS"},
		{"--http with no HTTP transport given to Open", unstamped, []string{"--http", "127.0.0.1:0"}, nil, "INVALID_OPTIONS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			w := mcptest.NewWorld(t)
			var stdout, stderr bytes.Buffer
			s, exit := mcp.Open(append([]string{"--workspace", mcptest.WSRoot}, tt.args...), &stdout, &stderr, w.Wire, "test", tt.settings, nil)
			if s != nil {
				defer s.Close()
			}
			is.Equal(stdout.Len(), 0) // standard output is the protocol's alone
			if tt.code != "" {
				is.Equal(s, nil)
				is.Equal(exit, 2)
				is.True(strings.HasPrefix(stderr.String(), tt.code+": ")) // the fault ...
				is.Equal(strings.Count(stderr.String(), "\n"), 1)         // ... alone
				return
			}
			is.True(s != nil)
			is.Equal(stderr.String(), mcp.EngineWarning(tt.settings)) // what Open printed is the warning
			if tt.reasons == nil {
				is.Equal(stderr.Len(), 0) // a rebuildable engine says nothing
				return
			}
			line := stderr.String()
			is.Equal(strings.Count(line, "\n"), 1) // one line
			is.True(strings.HasSuffix(line, "\n"))
			is.True(strings.HasPrefix(line, "warning: no run this engine makes can be rebuilt from its receipt")) // what it means
			is.True(strings.Contains(line, "tool-runner version"))                                                // where the details are
			at := 0
			for _, r := range tt.reasons {
				i := strings.Index(line[at:], r)
				is.True(i >= 0) // each reason, in order
				at += i
			}
		})
	}
}
