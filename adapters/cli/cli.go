// Package cli parses tool-runner's command line (protocol §1, §9, §11): the
// options of the one-shot call, of "tool-runner mcp", of "tool-runner
// ledger" and of "tool-runner report", into the app's [app.Options]. Both transports parse with it, so
// one rule holds for both; tests that open a service as a command would
// parse with it too.
//
// It refuses what is no option of the command with the app's codes
// (INVALID_OPTIONS, MISSING_WORKSPACE), in messages that name an
// argument's position on the whole command line, never its text, which
// may hold a path.
package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/domain"
)

// reportOptions are the options "tool-runner report" takes.
func reportOptions() []string {
	return []string{"--workspace", "--output-dir", "--run-id", "--trusted-key", "--ledger", "--format"}
}

// Parse parses the command-line arguments of cmd, without the command's
// word. help reports --help or -h (one of them, once): then a missing
// --workspace or --ledger is no fault, and o holds what was parsed. Unknown, repeated or malformed options, an option the command
// does not take, empty values, values starting with "--" and positional
// arguments are INVALID_OPTIONS; a missing --workspace is
// MISSING_WORKSPACE.
func Parse(cmd app.Command, args []string) (o app.Options, help bool, e *app.Error) {
	o = app.Options{Command: cmd}
	switch cmd {
	case app.MCP:
		o.ListLimit = app.DefaultListLimit
	case app.Report:
		o.Format = app.FormatMarkdown
	}
	first := 1 // the position of args[0] on the command line
	if cmd != app.OneShot {
		first = 2
	}
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		pos := first + i
		if arg == "--help" || arg == "-h" {
			if help {
				return app.Options{}, false, fault(app.InvalidOptions, "argument %d repeats %s", pos, helpWords(arg, seen))
			}
			seen[arg] = true
			help = true
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
			if cmd != app.MCP {
				// Another command refuses it as any unknown option, so its
				// answer stays what it was before the option existed.
				return app.Options{}, false, unknownArgument(arg, pos)
			}
			dst = new(string) // parsed below
		case "--run-id", "--format":
			if cmd != app.Report {
				// As --list-limit: the other commands' answers stay as
				// they were before the report existed.
				return app.Options{}, false, unknownArgument(arg, pos)
			}
			if name == "--run-id" {
				dst = &o.RunID
			} else {
				dst = &o.Format
			}
		default:
			return app.Options{}, false, unknownArgument(arg, pos)
		}
		if cmd == app.LedgerCheck && name != "--workspace" && name != "--ledger" {
			return app.Options{}, false, fault(app.InvalidOptions, "argument %d is an option that tool-runner ledger does not take; it takes --workspace and --ledger", pos)
		}
		if cmd == app.Report && !slices.Contains(reportOptions(), name) {
			return app.Options{}, false, fault(app.InvalidOptions, "argument %d is an option that tool-runner report does not take; see --help", pos)
		}
		if seen[name] {
			return app.Options{}, false, fault(app.InvalidOptions, "argument %d repeats %s", pos, name)
		}
		seen[name] = true
		if !inline {
			if i+1 >= len(args) {
				return app.Options{}, false, fault(app.InvalidOptions, "%s (argument %d) needs a value", name, pos)
			}
			i++
			value = args[i]
		}
		switch {
		case value == "":
			return app.Options{}, false, fault(app.InvalidOptions, "%s (argument %d) has an empty value", name, pos)
		case strings.HasPrefix(value, "--"):
			// Most likely a forgotten value followed by the next option.
			return app.Options{}, false, fault(app.InvalidOptions, "%s (argument %d) has a value starting with --", name, pos)
		}
		*dst = value
		if name == "--list-limit" {
			k, ok := listLimit(value)
			if !ok {
				return app.Options{}, false, fault(app.InvalidOptions, "--list-limit (argument %d) must be an integer from 0 to %d", pos, app.MaxListLimit)
			}
			o.ListLimit = k
		}
		switch {
		case name == "--run-id" && !domain.ValidID(value):
			return app.Options{}, false, fault(app.InvalidOptions, "--run-id (argument %d) is not a run ID: 1 to 64 letters, digits, _ or -, starting with a letter or digit", pos)
		case name == "--format" && value != app.FormatMarkdown && value != app.FormatHTML:
			return app.Options{}, false, fault(app.InvalidOptions, "--format (argument %d) must be %s or %s", pos, app.FormatMarkdown, app.FormatHTML)
		}
	}
	switch {
	case help:
		return o, true, nil
	case o.Workspace == "":
		return app.Options{}, false, fault(app.MissingWorkspace, "--workspace is required")
	case cmd == app.LedgerCheck && o.Ledger == "":
		return app.Options{}, false, fault(app.InvalidOptions, "--ledger is required")
	case cmd == app.Report && o.OutputDir == "":
		return app.Options{}, false, fault(app.InvalidOptions, "--output-dir is required: the directory holding the run")
	case cmd == app.Report && o.RunID == "":
		return app.Options{}, false, fault(app.InvalidOptions, "--run-id is required: the run to report on")
	}
	return o, false, nil
}

// helpWords names the help option a repeat repeats: its own spelling when
// the first had it ("--help", as before -h existed), else both.
func helpWords(arg string, seen map[string]bool) string {
	if seen[arg] {
		return arg
	}
	return "the help option (-h, --help)"
}

func fault(code app.Code, format string, args ...any) *app.Error {
	return &app.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// unknownArgument refuses an argument that is no option of the command.
func unknownArgument(arg string, pos int) *app.Error {
	if strings.HasPrefix(arg, "-") {
		return fault(app.InvalidOptions, "argument %d is not a known option; see --help", pos)
	}
	return fault(app.InvalidOptions, "argument %d is a positional argument; tool-runner takes none", pos)
}

// listLimit parses the value of --list-limit: decimal digits only (no sign,
// no space, no exponent), from 0 to MaxListLimit.
func listLimit(value string) (int, bool) {
	if strings.Trim(value, "0123456789") != "" {
		return 0, false
	}
	k, err := strconv.Atoi(value)
	if err != nil || k > app.MaxListLimit {
		return 0, false
	}
	return k, true
}
