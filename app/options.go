package app

import (
	"slices"
	"strconv"
	"strings"

	"github.com/metricproof/metricproof/domain"
)

// Options are the operator's choices, given on the command line. Paths are
// the operator's and never a request's. Both transports parse them with
// [ParseOptions], so one rule holds for both.
type Options struct {
	// Workspace is the directory holding the sources.
	Workspace string
	// OutputDir holds the run directories; empty when not given.
	OutputDir string
	// CancelFile is the cancel marker's path; empty when not given.
	CancelFile string
	// Ledger is the call ledger's path; empty when not given.
	Ledger string
	// SigningKey and TrustedKey are the paths of the operator's Ed25519
	// private and public key; empty when not given. They may lie anywhere.
	SigningKey string
	TrustedKey string
	// ListLimit is K of SPEC §9: over MCP every list that grows with the
	// data is cut to its first K items. For mcp it is DefaultListLimit
	// unless --list-limit is given; the other commands have no lists to
	// cut and leave it 0.
	ListLimit int
	// RunID and Format are the run and the page format of "tool-runner
	// report" (SPEC §13); empty for the other commands. Format is
	// FormatMarkdown unless --format is given.
	RunID  string
	Format string
	// Help asks for the usage text.
	Help bool
	// Command is the command these options were given to: the ledger's
	// place has rules for tool calls that "tool-runner ledger" does not
	// apply (SPEC §11).
	Command Command
}

// The bounds of --list-limit (SPEC §9), and its value when not given.
const (
	DefaultListLimit = 10
	MaxListLimit     = 1000
)

// Command names a command of tool-runner, for its option rules.
type Command int

// The commands of tool-runner (SPEC §1).
const (
	// OneShot answers one call over standard input and output.
	OneShot Command = iota
	// MCP serves the tools over MCP: "tool-runner mcp …".
	MCP
	// LedgerCheck checks the call ledger: "tool-runner ledger …".
	LedgerCheck
	// Report prints the reviewer's page of one run: "tool-runner report …"
	// (SPEC §13).
	Report
)

// The formats of the reviewer's page (SPEC §13).
const (
	FormatMarkdown = "markdown"
	FormatHTML     = "html"
)

// reportOptions are the options "tool-runner report" takes.
func reportOptions() []string {
	return []string{"--workspace", "--output-dir", "--run-id", "--trusted-key", "--ledger", "--format"}
}

// ParseOptions parses the command-line arguments of cmd, without the
// command's word. Unknown, repeated or malformed options, an option the
// command does not take, empty values, values starting with "--" and
// positional arguments are INVALID_OPTIONS; a missing --workspace is
// MISSING_WORKSPACE. Messages name the argument's position on the whole
// command line, never its text, which may hold a path.
func ParseOptions(cmd Command, args []string) (Options, *Error) {
	o := Options{Command: cmd}
	switch cmd {
	case MCP:
		o.ListLimit = DefaultListLimit
	case Report:
		o.Format = FormatMarkdown
	}
	first := 1 // the position of args[0] on the command line
	if cmd != OneShot {
		first = 2
	}
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		pos := first + i
		if arg == "--help" {
			if seen[arg] {
				return Options{}, fail(InvalidOptions, "argument %d repeats --help", pos)
			}
			seen[arg] = true
			o.Help = true
			continue
		}
		name, value, inline := strings.Cut(arg, "=")
		var dst *string
		switch name {
		case "--workspace":
			dst = &o.Workspace
		case "--output-dir":
			dst = &o.OutputDir
		case "--cancel-file":
			dst = &o.CancelFile
		case "--ledger":
			dst = &o.Ledger
		case "--signing-key":
			dst = &o.SigningKey
		case "--trusted-key":
			dst = &o.TrustedKey
		case "--list-limit":
			if cmd != MCP {
				// Another command refuses it as any unknown option, so its
				// answer stays what it was before the option existed.
				return Options{}, unknownArgument(arg, pos)
			}
			dst = new(string) // parsed below
		case "--run-id", "--format":
			if cmd != Report {
				// As --list-limit: the other commands' answers stay as
				// they were before the report existed.
				return Options{}, unknownArgument(arg, pos)
			}
			if name == "--run-id" {
				dst = &o.RunID
			} else {
				dst = &o.Format
			}
		default:
			return Options{}, unknownArgument(arg, pos)
		}
		if cmd == LedgerCheck && name != "--workspace" && name != "--ledger" {
			return Options{}, fail(InvalidOptions, "argument %d is an option that tool-runner ledger does not take; it takes --workspace and --ledger", pos)
		}
		if cmd == Report && !slices.Contains(reportOptions(), name) {
			return Options{}, fail(InvalidOptions, "argument %d is an option that tool-runner report does not take; see --help", pos)
		}
		if seen[name] {
			return Options{}, fail(InvalidOptions, "argument %d repeats %s", pos, name)
		}
		seen[name] = true
		if !inline {
			if i+1 >= len(args) {
				return Options{}, fail(InvalidOptions, "%s (argument %d) needs a value", name, pos)
			}
			i++
			value = args[i]
		}
		switch {
		case value == "":
			return Options{}, fail(InvalidOptions, "%s (argument %d) has an empty value", name, pos)
		case strings.HasPrefix(value, "--"):
			// Most likely a forgotten value followed by the next option.
			return Options{}, fail(InvalidOptions, "%s (argument %d) has a value starting with --", name, pos)
		}
		*dst = value
		if name == "--list-limit" {
			k, ok := listLimit(value)
			if !ok {
				return Options{}, fail(InvalidOptions, "--list-limit (argument %d) must be an integer from 0 to %d", pos, MaxListLimit)
			}
			o.ListLimit = k
		}
		switch {
		case name == "--run-id" && !domain.ValidID(value):
			return Options{}, fail(InvalidOptions, "--run-id (argument %d) is not a run ID: 1 to 64 letters, digits, _ or -, starting with a letter or digit", pos)
		case name == "--format" && value != FormatMarkdown && value != FormatHTML:
			return Options{}, fail(InvalidOptions, "--format (argument %d) must be %s or %s", pos, FormatMarkdown, FormatHTML)
		}
	}
	switch {
	case o.Help:
		return o, nil
	case o.Workspace == "":
		return Options{}, fail(MissingWorkspace, "--workspace is required")
	case cmd == LedgerCheck && o.Ledger == "":
		return Options{}, fail(InvalidOptions, "--ledger is required")
	case cmd == Report && o.OutputDir == "":
		return Options{}, fail(InvalidOptions, "--output-dir is required: the directory holding the run")
	case cmd == Report && o.RunID == "":
		return Options{}, fail(InvalidOptions, "--run-id is required: the run to report on")
	}
	return o, nil
}

// unknownArgument refuses an argument that is no option of the command.
func unknownArgument(arg string, pos int) *Error {
	if strings.HasPrefix(arg, "-") {
		return fail(InvalidOptions, "argument %d is not a known option; see --help", pos)
	}
	return fail(InvalidOptions, "argument %d is a positional argument; tool-runner takes none", pos)
}

// listLimit parses the value of --list-limit: decimal digits only (no sign,
// no space, no exponent), from 0 to MaxListLimit.
func listLimit(value string) (int, bool) {
	if strings.Trim(value, "0123456789") != "" {
		return 0, false
	}
	k, err := strconv.Atoi(value)
	if err != nil || k > MaxListLimit {
		return 0, false
	}
	return k, true
}
