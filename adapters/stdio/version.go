package stdio

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/metricproof/metricproof/adapters/internal/rebuild"
	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/ports"
)

// VersionUsage is what "tool-runner version --help" prints.
const VersionUsage = `usage: tool-runner version

Prints one compact JSON line about the running engine: engine_sha256, the
SHA256 of this executable, which a receipt of a run it makes names; the
receipt's build facts (go_version, module_version, vcs_revision,
vcs_modified); settings, every build setting Go recorded; and rebuildable,
whether README's build command from a clean checkout of vcs_revision could
have made it, with rebuild_blockers naming why not (no_vcs_revision,
vcs_modified, no_trimpath, cgo_enabled, other_build_flags, no_build_info;
docs/engine.md says what each means and what to do); and confinement,
what the kernel confines every command to on this machine (landlock_abi,
filesystem, network, scoped; docs/protocol.md §16). It takes no other
argument.

Exit status: 0 printed, 2 an argument or the line could not be printed
(one line on standard error naming its code).
`

// VersionLine is what "tool-runner version" prints (protocol §1,
// contracts/schemas/version.schema.json): the engine's SHA256 and the
// receipt's build facts under the receipt's names, so an auditor compares
// them with a receipt key by key, every build setting Go recorded, so
// they know how to rebuild that engine (docs/engine.md), and whether it
// can be rebuilt at all: an engine without a revision says so at once,
// not at audit time.
type VersionLine struct {
	EngineSHA256 string `json:"engine_sha256"`
	evidence.Build
	Settings map[string]string `json:"settings"`
	// Rebuildable is true when RebuildBlockers is empty.
	Rebuildable     bool              `json:"rebuildable"`
	RebuildBlockers []rebuild.Blocker `json:"rebuild_blockers"`
	Confinement     confinement       `json:"confinement"`
}

// confinement is ports.Confinement under the names of protocol §16: all
// three booleans are false when the kernel has no Landlock or the operator
// turned confinement off (METRICPROOF_LANDLOCK=off).
type confinement struct {
	LandlockABI int  `json:"landlock_abi"`
	Filesystem  bool `json:"filesystem"`
	Network     bool `json:"network"`
	Scoped      bool `json:"scoped"`
}

// Version runs "tool-runner version"; args are the arguments after it, of
// which there may be none (or -h or --help alone, for the usage),
// settings are the binary's build settings, and confine confines the
// process once the arguments are checked and says what it enforces. Exit
// 0 with one compact JSON line on stdout. An argument is INVALID_OPTIONS,
// and a confinement the kernel refused, an engine that cannot be hashed
// or a line that cannot be written IO_OR_NUMERIC_ERROR: one line on stderr
// naming the code, exit 2, as mcp's option faults.
func Version(args []string, stdout, stderr io.Writer, eng ports.Engine, settings map[string]string, confine func() (ports.Confinement, error)) int {
	if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
		_, _ = io.WriteString(stdout, VersionUsage)
		return 0
	}
	if len(args) > 0 {
		// The position on the whole command line, never the text.
		fmt.Fprintf(stderr, "%s: argument 2 is not allowed: tool-runner version takes no arguments\n", protocol.InvalidOptions)
		return 2
	}
	c, err := confine()
	if err != nil {
		fmt.Fprintf(stderr, "%s: the program could not confine itself to its own executable, so nothing was printed: retry\n", protocol.IOOrNumericError)
		return 2
	}
	id, err := eng.Identity()
	if err != nil {
		fmt.Fprintf(stderr, "%s: the running engine could not be hashed; nothing was printed\n", protocol.IOOrNumericError)
		return 2
	}
	if settings == nil {
		settings = map[string]string{}
	}
	blockers := rebuild.Check(settings)
	line, err := json.Marshal(VersionLine{EngineSHA256: id.SHA256, Build: evidence.BuildOf(id), Settings: settings,
		Rebuildable: len(blockers) == 0, RebuildBlockers: blockers, Confinement: confinement(c)})
	if err != nil {
		fmt.Fprintf(stderr, "%s: the version line could not be encoded\n", protocol.InternalError)
		return 2
	}
	if err := Write(stdout, append(line, '\n')); err != nil {
		fmt.Fprintf(stderr, "%s: the version line could not be written to standard output; check where it goes\n", protocol.IOOrNumericError)
		return 2
	}
	return 0
}
