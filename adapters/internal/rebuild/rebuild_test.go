package rebuild_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/internal/rebuild"
)

// readme is what README's command records from a clean git clone.
func readme() map[string]string {
	return map[string]string{
		"-buildmode": "exe", "-compiler": "gc", "-trimpath": "true", "CGO_ENABLED": "0",
		"GOARCH": "amd64", "GOOS": "linux", "GOAMD64": "v1", "DefaultGODEBUG": "x=1",
		"vcs": "git", "vcs.revision": "777fd261bd3167e275015836b594be3ef1b5b29a",
		"vcs.time": "2026-12-02T18:23:52Z", "vcs.modified": "false",
	}
}

// with returns README's settings changed by set (a "" value deletes).
func with(set map[string]string) map[string]string {
	s := readme()
	for k, v := range set {
		if v == "" {
			delete(s, k)
			continue
		}
		s[k] = v
	}
	return s
}

// Each way a build falls short of README's command from a clean clone is
// its blocker, in the fixed order; README's build has none.
func TestEachBuildThatCannotBeRebuiltSaysWhy(t *testing.T) {
	goRun := with(map[string]string{"-trimpath": "", "vcs": "", "vcs.revision": "", "vcs.time": "", "vcs.modified": "", "CGO_ENABLED": "1",
		"CGO_CFLAGS": "-O2 -g", "-ldflags": "-X main.x=y"})
	tests := []struct {
		name     string
		settings map[string]string
		want     []rebuild.Blocker
	}{
		{"README's command from a clean clone", readme(), []rebuild.Blocker{}},
		{"no build information", map[string]string{}, []rebuild.Blocker{rebuild.NoBuildInfo}},
		{"GOFLAGS=-buildvcs=false", with(map[string]string{"vcs": "", "vcs.revision": "", "vcs.time": "", "vcs.modified": ""}), []rebuild.Blocker{rebuild.NoRevision}},
		{"a checkout with changes", with(map[string]string{"vcs.modified": "true"}), []rebuild.Blocker{rebuild.Modified}},
		{"no -trimpath", with(map[string]string{"-trimpath": ""}), []rebuild.Blocker{rebuild.NoTrimpath}},
		{"-trimpath=false", with(map[string]string{"-trimpath": "false"}), []rebuild.Blocker{rebuild.NoTrimpath}},
		{"cgo", with(map[string]string{"CGO_ENABLED": "1"}), []rebuild.Blocker{rebuild.CGO}},
		{"-race", with(map[string]string{"-race": "true"}), []rebuild.Blocker{rebuild.OtherFlags}},
		{"-cover", with(map[string]string{"-cover": "true"}), []rebuild.Blocker{rebuild.OtherFlags}},
		{"-tags", with(map[string]string{"-tags": "netgo"}), []rebuild.Blocker{rebuild.OtherFlags}},
		{"-gcflags", with(map[string]string{"-gcflags": "-N -l"}), []rebuild.Blocker{rebuild.OtherFlags}},
		{"GOEXPERIMENT", with(map[string]string{"GOEXPERIMENT": "arenas"}), []rebuild.Blocker{rebuild.OtherFlags}},
		{"-buildmode=pie", with(map[string]string{"-buildmode": "pie"}), []rebuild.Blocker{rebuild.OtherFlags}},
		{"gccgo", with(map[string]string{"-compiler": "gccgo"}), []rebuild.Blocker{rebuild.OtherFlags}},
		{"go run", goRun, []rebuild.Blocker{rebuild.NoRevision, rebuild.NoTrimpath, rebuild.CGO}},
		{"all at once, in order", with(map[string]string{"vcs.revision": "", "vcs.modified": "true", "-trimpath": "", "CGO_ENABLED": "1", "-race": "true"}),
			[]rebuild.Blocker{rebuild.NoRevision, rebuild.Modified, rebuild.NoTrimpath, rebuild.CGO, rebuild.OtherFlags}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			before := maps.Clone(tt.settings)
			is.Equal(rebuild.Check(tt.settings), tt.want)
			is.Equal(tt.settings, before) // read, not changed
		})
	}
}

// Every blocker has its own sentence, which says what to do and names no
// path.
func TestEveryBlockerSaysWhatToDo(t *testing.T) {
	all := []rebuild.Blocker{rebuild.NoBuildInfo, rebuild.NoRevision, rebuild.Modified, rebuild.NoTrimpath, rebuild.CGO, rebuild.OtherFlags}
	seen := map[string]bool{}
	for _, b := range all {
		t.Run(string(b), func(t *testing.T) {
			is := is.New(t)
			why := b.Why()
			is.True(why != string(b))                                                                                     // a sentence, not the code
			is.True(!seen[why])                                                                                           // its own
			is.True(strings.Contains(why, "build") && strings.Contains(why, "README's command") || b == rebuild.Modified) // what to do
			is.True(!strings.Contains(why, "/"))                                                                          // no path
			seen[why] = true
		})
	}
	is.New(t).Equal(rebuild.Blocker("x").Why(), "x")
}
