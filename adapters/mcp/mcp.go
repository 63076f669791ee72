// Package mcp is metricproof's Model Context Protocol transport (protocol
// §9): "tool-runner mcp" serves the three tools and the run files to any
// MCP host over standard input and output, through the same call layer as
// the one-shot protocol.
//
// It only frames. The SDK (github.com/modelcontextprotocol/go-sdk) speaks
// the protocol, on its own transport: the handshake, tools/list,
// tools/call, resources, cancellation. The tools are registered with the
// SDK's low-level Server.AddTool, so the raw bytes of params.arguments
// reach the call layer, which checks them as it checks a one-shot request;
// their schemas are generated from contracts/schemas (tools.go). A tool
// result holds the answer the call layer built, its lists cut to
// --list-limit items, then a resource link to each run file it is about;
// the run files are resources (resources.go).
//
// In front of the SDK's stdio transport sits a decorator of the byte
// stream (stdio.go) that runs the checker of protocol §9.7 (package
// message) on every line. The HTTP transport is package mcphttp, over the
// same server (New, with its own Carrier), handed to Open as an [HTTP].
package mcp

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/metricproof/metricproof/adapters/cli"
	"github.com/metricproof/metricproof/adapters/internal/rebuild"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/call"
	"github.com/metricproof/metricproof/app/protocol"
)

// Usage is what "tool-runner mcp --help" prints.
const Usage = `usage: tool-runner mcp --workspace W [--output-dir O] [--cancel-file F]
                       [--ledger L] [--signing-key K] [--trusted-key P]
                       [--list-limit N]
                       [--http HOST:PORT [--auth-issuer ISS --auth-audience URL
                        [--auth-jwks FILE]] [--allowed-host H]...
                        [--allowed-origin O]... [--tls-cert F --tls-key F]]

Serves inspect_inputs, analyze and verify_result as a Model Context Protocol
server over standard input and output (JSON-RPC, one message per line), and
the files of committed runs as resources (metricproof://runs/{run_id}/{file}).
The options are those of the one-shot runner (tool-runner --help), all
checked at start: a fault prints one line naming its code to standard error
and exits 2. An engine whose runs cannot be rebuilt from their receipts
(tool-runner version lists why) says so in one line on standard error at
start, and serves. --list-limit N (0 to 1000, default 10) cuts each list that
grows with the data to its first N items in a tool result; the result's
"truncated" names the lists cut, and the run files hold them whole. The
server runs until its input ends, or SIGINT or SIGTERM, answers the calls
in flight, and exits 0.

With --http HOST:PORT it serves the same over MCP's Streamable HTTP
transport at /mcp instead (stateless: any number of servers may share one
output directory behind a load balancer), prints {"listening":"URL"} on
standard error once ready (a port of 0 picks a free one), and runs until
SIGINT or SIGTERM, letting the calls in flight finish. On an address other
than loopback it needs --auth-issuer ISS and --auth-audience URL: every
request then carries a bearer token from ISS whose audience is URL, with
the scope metricproof:read, and metricproof:run to call analyze; the
issuer's keys come from its metadata, or from the JSON Web Key Set file
--auth-jwks FILE. --allowed-host H is a host name the server also answers
to (a reverse proxy's), --allowed-origin O a web page's origin that may
call it; --tls-cert and --tls-key serve HTTPS (else put it behind a TLS
proxy). GET /healthz and /readyz answer probes. See docs/mcp.md.
`

// Server is "tool-runner mcp", opened.
type Server struct {
	opts           cli.Options
	svc            *app.Service
	version        string
	stdout, stderr io.Writer
	// remote is the server bound over HTTP with --http; nil over stdio.
	remote Remote
}

// HTTP opens "tool-runner mcp --http": package mcphttp's Transport, which
// the composition root hands to Open, since mcphttp imports this package.
type HTTP interface {
	// Check checks the HTTP options before the workspace is opened.
	Check(o cli.HTTP) error
	// Open binds the server over HTTP for an opened service. A fault of
	// the operator's options (the address, the issuer) is coded
	// INVALID_OPTIONS; any other (served schemas that do not load: a
	// broken build) is left uncoded, and so is answered INTERNAL_ERROR.
	Open(o cli.Options, svc *app.Service, version string, stderr io.Writer) (Remote, error)
}

// Remote is the server bound over HTTP.
type Remote interface {
	// Serve serves until ctx ends, then stops (protocol §14); it returns
	// the exit status.
	Serve(ctx context.Context) int
	// Network is the TCP the server needs once it serves (Server.Network).
	Network() (bind, connect []uint16)
	// Close lets its address go when it was never served.
	Close() error
}

// Open parses args (the command line after "mcp"), opens the service and
// checks every operator path as the calls will, so that a server that
// could answer no analyze does not start. When the command ends here (an
// option fault, one line on stderr naming its code, or --help) it returns
// nil and the exit status: 2 for a fault. version is the module version
// the server announces; settings are the engine's build settings, and an
// engine no one can rebuild says so on stderr once it is open
// ([EngineWarning]); web serves --http (nil: refused).
func Open(args []string, stdout, stderr io.Writer, wire app.Wire, version string, settings map[string]string, web HTTP) (*Server, int) {
	o, help, e := cli.Parse(cli.MCP, args)
	if e != nil {
		return nil, optionFault(stderr, e)
	}
	if help {
		_, _ = io.WriteString(stdout, Usage)
		return nil, 0
	}
	if o.HTTP.Addr != "" {
		if web == nil {
			return nil, optionFault(stderr, protocol.Errorf(protocol.InvalidOptions, "--http is not served by this program"))
		}
		// Every option before the workspace is opened: the address, the
		// hosts and origins, authorization on a non-loopback address.
		if err := web.Check(o.HTTP); err != nil {
			return nil, optionFault(stderr, err)
		}
	}
	svc, err := app.Open(o.Options, wire)
	if err != nil {
		return nil, optionFault(stderr, err)
	}
	if err := svc.CheckPaths(); err != nil {
		svc.Close()
		return nil, optionFault(stderr, err)
	}
	s := &Server{opts: o, svc: svc, version: version, stdout: stdout, stderr: stderr}
	if o.HTTP.Addr != "" {
		if s.remote, err = web.Open(o, svc, version, stderr); err != nil {
			svc.Close()
			return nil, optionFault(stderr, err)
		}
	}
	// Once every option passed: a fault stays its one line alone.
	_, _ = io.WriteString(stderr, EngineWarning(settings))
	return s, 0
}

// Options are the options the server was opened with.
func (s *Server) Options() app.Options { return s.opts.Options }

// Refuse answers a fault met once the server was opened and before it
// served (the composition root's confinement) as a fault of its opening
// is answered, and returns the exit status: 2.
func (s *Server) Refuse(err error) int { return optionFault(s.stderr, err) }

// Close closes the service, and the HTTP front's address when the server
// was never run.
func (s *Server) Close() error {
	if s.remote != nil {
		_ = s.remote.Close()
	}
	return s.svc.Close()
}

// Network is the TCP the server needs once it serves, for its confinement
// (protocol §16): over HTTP, the port it listens on, and the issuer's key
// set's port when it fetches the set again; over stdio, none.
func (s *Server) Network() (bind, connect []uint16) {
	if s.remote == nil {
		return nil, nil
	}
	return s.remote.Network()
}

// Run serves the session on stdin and the server's standard output until
// the input ends, and returns 0. When ctx is cancelled (SIGINT, SIGTERM)
// the server stops taking calls, cancels the calls in flight, writes
// their answers and returns 0. With --http it serves HTTP instead, reads
// nothing from stdin, and stops on ctx as protocol §14 says.
func (s *Server) Run(ctx context.Context, stdin io.Reader) int {
	if s.remote != nil {
		return s.remote.Serve(ctx)
	}
	st := newStream(stdin, s.stdout, ctx.Done())
	server, err := New(Config{Calls: call.New(s.svc), Transport: stdioTransport(s.opts.ListLimit), Version: s.version, Stop: ctx, Carrier: st})
	if err != nil {
		fmt.Fprintf(s.stderr, "%s: %v\n", protocol.InternalError, err)
		return 2
	}
	if err := serveStdio(context.WithoutCancel(ctx), server, st); err != nil {
		fmt.Fprintf(s.stderr, "%s: the session could not start\n", protocol.InternalError)
		return 2
	}
	return 0
}

// ServeStdio serves calls over in and out as "tool-runner mcp" does, until
// in ends or stop is done and every call it read is answered: for tests
// and benchmarks that run the server in their own process.
func ServeStdio(calls *call.Calls, listLimit int, version string, in io.Reader, out io.Writer, stop context.Context) error {
	st := newStream(in, out, stop.Done())
	server, err := New(Config{Calls: calls, Transport: stdioTransport(listLimit), Version: version, Stop: stop, Carrier: st})
	if err != nil {
		return err
	}
	return serveStdio(context.WithoutCancel(stop), server, st)
}

// EngineWarning is the line "tool-runner mcp" writes on standard error at
// start when its engine cannot be rebuilt from the receipts of its runs
// (protocol §9.1), each reason in the order "tool-runner version" lists
// them, with what to do; "" when nothing rules a rebuild out. An operator
// learns it when the server starts, not when an auditor fails to rebuild
// a run. settings are the engine's build settings.
func EngineWarning(settings map[string]string) string {
	blockers := rebuild.Check(settings)
	if len(blockers) == 0 {
		return ""
	}
	why := make([]string, len(blockers))
	for i, b := range blockers {
		why[i] = b.Why()
	}
	return "warning: no run this engine makes can be rebuilt from its receipt, so no auditor can check the engine that made it " +
		"(tool-runner version lists why): " + strings.Join(why, " ") + "\n"
}

// optionFault reports a fault of the options or of their paths: one line
// naming its code, exit 2.
func optionFault(stderr io.Writer, err error) int {
	e := protocol.ErrorOf(err)
	fmt.Fprintf(stderr, "%s: %s\n", e.Code, e.Message)
	return 2
}
