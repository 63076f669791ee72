// Package rebuild says whether an engine can be rebuilt from its receipt
// (docs/engine.md), from the build settings Go recorded in it: an auditor
// rebuilds an engine by checking out the receipt's vcs_revision and
// building it with README's command, and gets the same bytes only if the
// engine was built that way from a clean checkout of that revision.
//
// Each way an engine falls short is a [Blocker], one of a closed set, in a
// fixed order, with a sentence that says what happened and what to do.
// "tool-runner version" lists their codes, the reviewer's page their
// sentences. Some builds cannot be told from README's (Go does not record
// -ldflags under -trimpath), so no blocker means "README's command from a
// clean checkout could have made it", not a proof that it did: the proof
// is a rebuild whose SHA256 matches.
package rebuild

// Blocker is one reason an engine cannot be rebuilt from its receipt: its
// value is its code on the version line.
type Blocker string

// The blockers, in the order [Check] lists them.
const (
	NoBuildInfo Blocker = "no_build_info"
	NoRevision  Blocker = "no_vcs_revision"
	Modified    Blocker = "vcs_modified"
	NoTrimpath  Blocker = "no_trimpath"
	CGO         Blocker = "cgo_enabled"
	OtherFlags  Blocker = "other_build_flags"
)

// Why says the blocker in a sentence for a person, with what to do.
func (b Blocker) Why() string {
	switch b {
	case NoBuildInfo:
		return "The engine records no build information, so nothing says how it was built: build it with README's command."
	case NoRevision:
		return "The build recorded no VCS revision, so its receipts name no source to check out: it was built with " +
			"-buildvcs=false (GOFLAGS may set it), by go run, from an export, or in a git worktree (which Go does not stamp). " +
			"Build in a git clone with README's command, which passes -buildvcs=true."
	case Modified:
		return "The build was made from a checkout with uncommitted changes, which no commit holds: commit them, or build from a clean checkout."
	case NoTrimpath:
		return "The build did not use -trimpath (go run, or another command than README's), so the checkout's path is in the engine: " +
			"build with README's command."
	case CGO:
		return "The build used cgo (CGO_ENABLED=1), which links the machine's C library: build with README's command, which sets CGO_ENABLED=0."
	case OtherFlags:
		return "The build used flags README's command does not (-race, -cover, -tags, -gcflags, -asan, -msan, GOEXPERIMENT, " +
			"another -buildmode or compiler): build with README's command alone, with no GOFLAGS."
	}
	return string(b)
}

// otherFlags are the settings whose presence makes another engine than
// README's command builds; -buildmode and -compiler are checked by value.
func otherFlags() []string {
	return []string{"-race", "-msan", "-asan", "-cover", "-tags", "-gcflags", "-asmflags", "-gccgoflags", "GOEXPERIMENT", "GOFIPS140"}
}

// Check returns the blockers of an engine whose build settings are
// settings (key to value, as "go version -m" lists them), in the order
// of the constants above, never nil (the version line writes [] for
// none); empty when README's command from a clean checkout of a revision
// could have built it.
func Check(settings map[string]string) []Blocker {
	b := []Blocker{}
	if len(settings) == 0 {
		return append(b, NoBuildInfo)
	}
	if settings["vcs.revision"] == "" {
		b = append(b, NoRevision)
	}
	if settings["vcs.modified"] == "true" {
		b = append(b, Modified)
	}
	if settings["-trimpath"] != "true" {
		b = append(b, NoTrimpath)
	}
	if settings["CGO_ENABLED"] != "0" {
		b = append(b, CGO)
	}
	other := settings["-buildmode"] != "exe" || settings["-compiler"] != "gc"
	for _, k := range otherFlags() {
		if _, ok := settings[k]; ok {
			other = true
		}
	}
	if other {
		b = append(b, OtherFlags)
	}
	return b
}
