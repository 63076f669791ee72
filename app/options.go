package app

import (
	"strings"
)

// Options are the operator's choices, given on the command line. Paths are
// the operator's and never a request's.
type Options struct {
	// Workspace is the directory holding the sources.
	Workspace string
	// OutputDir holds the run directories; empty when not given.
	OutputDir string
	// CancelFile is the cancel marker's path; empty when not given.
	CancelFile string
	// Help asks for the usage text.
	Help bool
}

// Usage is what --help prints.
const Usage = `usage: tool-runner --workspace W [--output-dir O] [--cancel-file F]

Reads one JSON request on standard input until EOF and writes exactly one
compact JSON response line on standard output (protocol 1.0).

  --workspace W     the directory holding data/ and contracts/ (required)
  --output-dir O    where analyze commits runs and verify_result reads them;
                    workspace-relative or absolute, inside W
  --cancel-file F   a marker path inside W; when it exists the call stops
  --help            print this text and exit 0

Tools: inspect_inputs {}, analyze {"expected_source_digest"}, verify_result {"run_id"}.
Exit status: 0 success, 1 handled error, 3 cancelled.
`

// ParseOptions parses the command-line arguments. Unknown, repeated or
// malformed options, empty values, values starting with "--" and
// positional arguments are INVALID_OPTIONS; a missing --workspace is MISSING_WORKSPACE. Messages name
// the argument's position, never its text, which may hold a path.
func ParseOptions(args []string) (Options, *Error) {
	var o Options
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		pos := i + 1
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
		default:
			if strings.HasPrefix(arg, "-") {
				return Options{}, fail(InvalidOptions, "argument %d is not a known option; see --help", pos)
			}
			return Options{}, fail(InvalidOptions, "argument %d is a positional argument; tool-runner takes none", pos)
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
	}
	if o.Help {
		return o, nil
	}
	if o.Workspace == "" {
		return Options{}, fail(MissingWorkspace, "--workspace is required")
	}
	return o, nil
}
