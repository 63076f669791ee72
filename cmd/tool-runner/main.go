// Command tool-runner runs metricproof's three tools: one call of protocol
// 1.0 over standard input and output, "tool-runner mcp" for a long-lived
// MCP server, "tool-runner ledger" to check the call ledger, or
// "tool-runner report" for a run's reviewer's page, or "tool-runner
// version" for the engine's identity. See
// README.md and docs/protocol.md.
//
// This is the composition root: it wires the real-disk adapters into the
// app and hands the command line to the command it names, nothing more.
// Every command is opened (its options parsed, the workspace, keys, paths
// and ledger checked), then confined by the kernel to what it needs
// (protocol §16), then run.
//
// Go listens and dials with plain TCP here: Landlock's TCP rules do not
// cover a multipath TCP socket, which Go's listeners open by default.
//
//go:debug multipathtcp=0
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/metricproof/metricproof/adapters/engine"
	"github.com/metricproof/metricproof/adapters/landlock"
	"github.com/metricproof/metricproof/adapters/mcp"
	"github.com/metricproof/metricproof/adapters/mcp/mcphttp"
	"github.com/metricproof/metricproof/adapters/report"
	"github.com/metricproof/metricproof/adapters/stdio"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/internal/wire"
)

func main() {
	// A reader that hangs up early gets EPIPE on the write, not a signal
	// that would kill the process mid-answer.
	signal.Ignore(syscall.SIGPIPE)
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run dispatches on the first argument and returns the exit status. SIGINT
// and SIGTERM cancel the context every call runs under: a call stops at
// its next cancel check and still answers.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx := cancelledBySignals()
	eng := engine.New()
	off := os.Getenv(wire.OffVariable) == "off"
	if len(args) == 0 || args[0] != "mcp" {
		oneShotMemory()
	} else {
		serverMemory()
	}
	if len(args) == 0 {
		return stdio.Bare(stderr)
	}
	if args[0] == "version" {
		return version(args[1:], stdout, stderr, eng, off)
	}
	return dispatch(ctx, args, stdin, stdout, stderr, wire.Real(eng), func(c wire.Command) confiner {
		return wire.NewConfiner(c, off)
	})
}

// confiner confines the process between a command's opening and its run
// (wire.Confiner; a test's own in this package's tests).
type confiner interface {
	// Wire returns the wire a command is opened with.
	Wire(app.Wire) app.Wire
	// Confine confines the process to what the command opened with the
	// options needs; an error is coded, and the command must not run.
	Confine(app.Options) error
	// Allow adds the TCP ports a command binds and connects to once
	// confined, which only the opened command knows (mcp --http's).
	Allow(bind, connect []uint16)
}

// dispatch opens the command args name over disk, confines it with the
// confiner newConfiner gives for its kind, and runs it.
func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, disk app.Wire, newConfiner func(wire.Command) confiner) int {
	switch args[0] {
	case "mcp":
		f := newConfiner(wire.Tools)
		c, exit := mcp.Open(args[1:], stdout, stderr, f.Wire(disk), moduleVersion(), engine.Settings(), mcphttp.Transport{})
		if c != nil {
			// Over HTTP: its own port, and the issuer's key set's.
			if bind, connect := c.Network(); len(bind)+len(connect) > 0 {
				f.Allow(bind, connect)
			}
		}
		return runOpened(ctx, c, exit, stdin, f)
	case "ledger":
		f := newConfiner(wire.LedgerCheck)
		c, exit := stdio.OpenLedger(args[1:], stdout, f.Wire(disk))
		return runOpened(ctx, c, exit, stdin, f)
	case "report":
		f := newConfiner(wire.Report)
		c, exit := report.Open(args[1:], stdout, stderr, f.Wire(disk), engine.Settings())
		return runOpened(ctx, c, exit, stdin, f)
	}
	f := newConfiner(wire.Tools)
	if code, ok := probe(ctx, args, stdin, stdout, f, disk); ok {
		return code
	}
	c, exit := stdio.Open(ctx, args, stdout, f.Wire(disk))
	return runOpened(ctx, c, exit, stdin, f)
}

// version runs "tool-runner version", confined as every command is once
// its arguments are checked: it reads nothing but its own executable.
func version(args []string, stdout, stderr io.Writer, eng *engine.Self, off bool) int {
	return stdio.Version(args, stdout, stderr, eng, engine.Settings(), landlock.New(landlock.Need{Off: off}, nil).Apply)
}

// command is a command opened: its options checked and its service open.
type command interface {
	Options() app.Options
	Run(ctx context.Context, stdin io.Reader) int
	// Refuse answers a fault met between its opening and its run, as one
	// of its opening, and returns the exit status.
	Refuse(err error) int
	Close() error
}

// runOpened runs an opened command, c, and closes it; a nil c (the
// command ended when it was opened: a fault, or --help) is exit. Between
// the command's checks and its first read of a request, and once for
// every command, f confines the process to the paths of c.Options()
// (protocol §16); a confinement refused is answered by c, which then does
// not run.
func runOpened[C interface {
	comparable
	command
}](ctx context.Context, c C, exit int, stdin io.Reader, f confiner) int {
	var none C
	if c == none {
		return exit
	}
	defer c.Close()
	if err := f.Confine(c.Options()); err != nil {
		return c.Refuse(err)
	}
	return c.Run(ctx, stdin)
}

// cancelledBySignals returns a context that the first SIGINT or SIGTERM
// cancels. The signals stay caught until the process exits and are never
// given back their default action: later ones are dropped, so none can
// kill the process, not even between its answer and its exit (where
// signal.NotifyContext's stop would have let one end it with a signal's
// status instead of 0 or 3).
func cancelledBySignals() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	caught := make(chan os.Signal, 1)
	signal.Notify(caught, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-caught
		cancel()
	}()
	return ctx
}

// oneShotLimitBytes bounds the memory of a one-shot call, whose collector
// is off: a backstop far above what any valid call needs (about 25 MB at
// the maximum inputs), where the collector comes back.
const oneShotLimitBytes = 256 << 20

// oneShotMemory switches the garbage collector off for a one-shot call: it
// lives a few milliseconds and allocates a few megabytes, so collecting
// costs more than it returns (measured at the maximum inputs: inspect
// 11.8 → 8.6 ms, analyze 26.9 → 21.9 ms, verify 17.0 → 13.4 ms, peak RSS
// the same). The long-lived MCP server keeps Go's GOGC (serverMemory).
// GOGC or GOMEMLIMIT in the environment win.
func oneShotMemory() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(-1)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(oneShotLimitBytes)
	}
}

// serverLimitBytes is the MCP server's soft memory limit. protocol §9 bounds
// its peak RSS at 96 MiB whatever a client sends; the server bounds what
// its calls hold, and past this limit the collector runs more often rather
// than letting the heap grow to twice what is live (measured, 600 calls at
// once at the maximum inputs: peak RSS 72–85 MB with Go's defaults, 69 MB
// with this limit, in runs of the same machine).
const serverLimitBytes = 64 << 20

// serverMemory sets the MCP server's soft memory limit, unless GOMEMLIMIT
// in the environment sets one.
func serverMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(serverLimitBytes)
	}
}

// moduleVersion is the version the build recorded for this module, as the
// MCP server announces it: "(devel)" for a build from a checkout.
func moduleVersion() string {
	if v := engine.BuildFacts().ModuleVersion; v != "" {
		return v
	}
	return "(devel)"
}
