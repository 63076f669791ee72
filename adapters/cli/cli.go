// Package cli parses tool-runner's command line (protocol §1, §9, §11,
// §13, §14): the options of the one-shot call, of "tool-runner mcp" (over
// stdio or HTTP), of "tool-runner ledger" and of "tool-runner report",
// into the use cases' [app.Options] and the few options that are a
// command's own (the MCP server's list limit and HTTP options, the
// report's run and format). Every command parses
// with it, so one rule holds for all; tests that open a service as a
// command would parse with it too.
//
// It refuses what is no option of the command with the app's codes
// (INVALID_OPTIONS, MISSING_WORKSPACE), in messages that name an
// argument's position on the whole command line, never its text, which
// may hold a path.
package cli

import (
	"slices"
	"strconv"
	"strings"

	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
)

// Command names a command of tool-runner, for its option rules.
type Command int

// The commands of tool-runner.
const (
	// OneShot answers one call over standard input and output.
	OneShot Command = iota
	// MCP serves the tools over MCP: "tool-runner mcp …".
	MCP
	// LedgerCheck checks the call ledger: "tool-runner ledger …".
	LedgerCheck
	// Report prints the reviewer's page of one run: "tool-runner report …".
	Report
)

// Options are a command's options: the use cases' and the command's own.
type Options struct {
	app.Options
	// ListLimit is K, for mcp: DefaultListLimit unless
	// --list-limit is given.
	ListLimit int
	// RunID and Format are the run and the page format of "tool-runner
	// report"; Format is FormatMarkdown unless --format is given.
	RunID  string
	Format string
	// HTTP are the options of "tool-runner mcp --http" (protocol §14);
	// HTTP.Addr is empty for the server over stdio.
	HTTP HTTP
}

// HTTP are the options of the MCP server over HTTP, as given: the address
// and the listed names are checked where they are used (adapters/remote),
// the files read there and by the token verifier.
type HTTP struct {
	// Addr is --http, host:port.
	Addr string
	// AuthIssuer, AuthAudience and AuthJWKS are --auth-issuer,
	// --auth-audience and --auth-jwks: whose tokens are accepted, the URL
	// they must name as their audience, and the issuer's key set as a file
	// (else fetched from the issuer's metadata).
	AuthIssuer, AuthAudience, AuthJWKS string
	// AllowedHosts and AllowedOrigins are each --allowed-host and
	// --allowed-origin, in order: the options that may be repeated.
	AllowedHosts, AllowedOrigins []string
	// TLSCert and TLSKey are --tls-cert and --tls-key.
	TLSCert, TLSKey string
}

// option is where an option of the HTTP server goes, and whether it
// may be repeated; nil for any other option.
func (h *HTTP) option(name string) (dst *string, repeated bool) {
	switch name {
	case "--http":
		return &h.Addr, false
	case "--auth-issuer":
		return &h.AuthIssuer, false
	case "--auth-audience":
		return &h.AuthAudience, false
	case "--auth-jwks":
		return &h.AuthJWKS, false
	case "--tls-cert":
		return &h.TLSCert, false
	case "--tls-key":
		return &h.TLSKey, false
	case "--allowed-host":
		h.AllowedHosts = append(h.AllowedHosts, "")
		return &h.AllowedHosts[len(h.AllowedHosts)-1], true
	case "--allowed-origin":
		h.AllowedOrigins = append(h.AllowedOrigins, "")
		return &h.AllowedOrigins[len(h.AllowedOrigins)-1], true
	}
	return nil, false
}

// fault checks the options of the HTTP server against one another: each
// needs --http, and the issuer and audience, and the certificate and key,
// go in pairs.
func (h HTTP) fault() *protocol.Error {
	given := []struct {
		name string
		set  bool
	}{
		{"--auth-issuer", h.AuthIssuer != ""}, {"--auth-audience", h.AuthAudience != ""}, {"--auth-jwks", h.AuthJWKS != ""},
		{"--allowed-host", len(h.AllowedHosts) > 0}, {"--allowed-origin", len(h.AllowedOrigins) > 0},
		{"--tls-cert", h.TLSCert != ""}, {"--tls-key", h.TLSKey != ""},
	}
	for _, g := range given {
		if g.set && h.Addr == "" {
			return protocol.Errorf(protocol.InvalidOptions, "%s is an option of the server over HTTP: give --http HOST:PORT too, or leave it out", g.name)
		}
	}
	switch {
	case (h.AuthIssuer == "") != (h.AuthAudience == ""):
		return protocol.Errorf(protocol.InvalidOptions, "--auth-issuer and --auth-audience go together: the issuer whose tokens are accepted, and this server's URL that they must name as their audience")
	case h.AuthJWKS != "" && h.AuthIssuer == "":
		return protocol.Errorf(protocol.InvalidOptions, "--auth-jwks needs --auth-issuer and --auth-audience: it is the key set of that issuer")
	case (h.TLSCert == "") != (h.TLSKey == ""):
		return protocol.Errorf(protocol.InvalidOptions, "--tls-cert and --tls-key go together: the server's certificate chain and its private key, both PEM")
	}
	return nil
}

// The bounds of --list-limit (protocol §9.5), and its value when not given.
const (
	DefaultListLimit = 10
	MaxListLimit     = 1000
)

// The formats of the reviewer's page.
const (
	FormatMarkdown = "markdown"
	FormatHTML     = "html"
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
func Parse(cmd Command, args []string) (o Options, help bool, e *protocol.Error) {
	o.ReadOnly = cmd == LedgerCheck || cmd == Report // they append to no ledger
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
		if arg == "--help" || arg == "-h" {
			if help {
				return Options{}, false, protocol.Errorf(protocol.InvalidOptions, "argument %d repeats %s", pos, helpWords(arg, seen))
			}
			seen[arg] = true
			help = true
			continue
		}
		name, value, inline := strings.Cut(arg, "=")
		var dst *string
		repeated := false // an option that may be given more than once
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
				return Options{}, false, unknownArgument(arg, pos)
			}
			dst = new(string) // parsed below
		case "--http", "--auth-issuer", "--auth-audience", "--auth-jwks", "--allowed-host", "--allowed-origin", "--tls-cert", "--tls-key":
			if cmd != MCP {
				// As --list-limit: the other commands' answers stay as
				// they were before the server over HTTP existed.
				return Options{}, false, unknownArgument(arg, pos)
			}
			dst, repeated = o.HTTP.option(name)
		case "--run-id", "--format":
			if cmd != Report {
				// As --list-limit: the other commands' answers stay as
				// they were before the report existed.
				return Options{}, false, unknownArgument(arg, pos)
			}
			if name == "--run-id" {
				dst = &o.RunID
			} else {
				dst = &o.Format
			}
		default:
			return Options{}, false, unknownArgument(arg, pos)
		}
		if cmd == LedgerCheck && name != "--workspace" && name != "--ledger" {
			return Options{}, false, protocol.Errorf(protocol.InvalidOptions, "argument %d is an option that tool-runner ledger does not take; it takes --workspace and --ledger", pos)
		}
		if cmd == Report && !slices.Contains(reportOptions(), name) {
			return Options{}, false, protocol.Errorf(protocol.InvalidOptions, "argument %d is an option that tool-runner report does not take; see --help", pos)
		}
		if seen[name] && !repeated {
			return Options{}, false, protocol.Errorf(protocol.InvalidOptions, "argument %d repeats %s", pos, name)
		}
		seen[name] = true
		if !inline {
			if i+1 >= len(args) {
				return Options{}, false, protocol.Errorf(protocol.InvalidOptions, "%s (argument %d) needs a value", name, pos)
			}
			i++
			value = args[i]
		}
		switch {
		case value == "":
			return Options{}, false, protocol.Errorf(protocol.InvalidOptions, "%s (argument %d) has an empty value", name, pos)
		case strings.HasPrefix(value, "--"):
			// Most likely a forgotten value followed by the next option.
			return Options{}, false, protocol.Errorf(protocol.InvalidOptions, "%s (argument %d) has a value starting with --", name, pos)
		}
		*dst = value
		if name == "--list-limit" {
			k, ok := listLimit(value)
			if !ok {
				return Options{}, false, protocol.Errorf(protocol.InvalidOptions, "--list-limit (argument %d) must be an integer from 0 to %d", pos, MaxListLimit)
			}
			o.ListLimit = k
		}
		switch {
		case name == "--run-id" && !domain.ValidID(value):
			return Options{}, false, protocol.Errorf(protocol.InvalidOptions, "--run-id (argument %d) is not a run ID: 1 to 64 letters, digits, _ or -, starting with a letter or digit", pos)
		case name == "--format" && value != FormatMarkdown && value != FormatHTML:
			return Options{}, false, protocol.Errorf(protocol.InvalidOptions, "--format (argument %d) must be %s or %s", pos, FormatMarkdown, FormatHTML)
		}
	}
	if help {
		return o, true, nil
	}
	if e := o.HTTP.fault(); e != nil {
		return Options{}, false, e
	}
	switch {
	case o.Workspace == "":
		return Options{}, false, protocol.Errorf(protocol.MissingWorkspace, "--workspace is required")
	case cmd == LedgerCheck && o.Ledger == "":
		return Options{}, false, protocol.Errorf(protocol.InvalidOptions, "--ledger is required")
	case cmd == Report && o.OutputDir == "":
		return Options{}, false, protocol.Errorf(protocol.InvalidOptions, "--output-dir is required: the directory holding the run")
	case cmd == Report && o.RunID == "":
		return Options{}, false, protocol.Errorf(protocol.InvalidOptions, "--run-id is required: the run to report on")
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

// unknownArgument refuses an argument that is no option of the command.
func unknownArgument(arg string, pos int) *protocol.Error {
	if strings.HasPrefix(arg, "-") {
		return protocol.Errorf(protocol.InvalidOptions, "argument %d is not a known option; see --help", pos)
	}
	return protocol.Errorf(protocol.InvalidOptions, "argument %d is a positional argument; tool-runner takes none", pos)
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
