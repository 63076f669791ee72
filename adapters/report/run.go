package report

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/metricproof/metricproof/adapters/cli"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/protocol"
)

// Usage is what "tool-runner report --help" prints.
const Usage = `usage: tool-runner report --workspace W --output-dir O --run-id R
                          [--trusted-key P] [--ledger L] [--format markdown|html]

Verifies run R exactly as verify_result does and prints one page for the
person who decides on its release, to standard output: Markdown by
default, or one self-contained HTML page. It writes nothing.

  --workspace W     the directory holding data/ and contracts/ (required)
  --output-dir O    the directory holding the run (required)
  --run-id R        the run to report on (required)
  --trusted-key P   accept only a run signed by this Ed25519 public key (PEM)
  --ledger L        also check the call ledger's whole chain, and find the
                    record of the analyze that made the run
  --format F        markdown (the default) or html
  -h, --help        print this text and exit 0

Exit status: 0 verified, 1 verification found a fault (the page says so in
its first line), 2 an option fault (one line on standard error, nothing on
standard output), 3 cancelled by SIGINT or SIGTERM (no page).
`

// Report is "tool-runner report" (protocol §13), opened.
type Report struct {
	opts           cli.Options
	svc            *app.Service
	stdout, stderr io.Writer
	// running are the build settings of the engine running the report,
	// from which the page says whether a run it verified can be rebuilt.
	running map[string]string
}

// Open parses args (the command line after the word report) and opens the
// service; running are the running engine's build settings. When the
// command ends here (an option fault, named by its code in one line on
// stderr, or --help) it returns nil and the exit status: 2 for a fault, 0
// for help, 1 when the help could not be written.
func Open(args []string, stdout, stderr io.Writer, wire app.Wire, running map[string]string) (*Report, int) {
	o, help, e := cli.Parse(cli.Report, args)
	if e != nil {
		return nil, optionFault(stderr, e)
	}
	if help {
		if _, err := io.WriteString(stdout, Usage); err != nil {
			return nil, 1 // not delivered, as a page: no claim of success
		}
		return nil, 0
	}
	s, err := app.Open(o.Options, wire)
	if err != nil {
		return nil, optionFault(stderr, err)
	}
	return &Report{opts: o, svc: s, stdout: stdout, stderr: stderr, running: running}, 0
}

// Options are the options the command was opened with.
func (c *Report) Options() app.Options { return c.opts.Options }

// Refuse answers a fault met once the command was opened and before it
// ran (the composition root's confinement) as a fault of its opening is
// answered, and returns the exit status: 2.
func (c *Report) Refuse(err error) int { return optionFault(c.stderr, err) }

// Close closes the service.
func (c *Report) Close() error { return c.svc.Close() }

// Run verifies the run, prints the page and returns the exit status: 0
// verified, 1 a fault of the run or the ledger (the page is still
// printed), 2 an option fault, named by its code in one line on stderr,
// with nothing on stdout, 3 cancelled by a signal (no page).
func (c *Report) Run(ctx context.Context, _ io.Reader) int {
	r, err := c.svc.Review(ctx, c.opts.RunID)
	if e := protocol.ErrorOf(err); e != nil && e.Code == protocol.Cancelled {
		// A signal stopped the checks: the run was not found at fault, so
		// a page saying "do not rely on this run" would be false. Exit 3,
		// as a cancelled one-shot call (protocol §1).
		fmt.Fprintf(c.stderr, "%s: the report was cancelled by a signal before its checks finished; nothing was printed: run it again\n", protocol.Cancelled)
		return 3
	}
	if err != nil {
		return optionFault(c.stderr, err)
	}
	render := Markdown
	if c.opts.Format == cli.FormatHTML {
		render = HTML
	}
	var page bytes.Buffer
	if err := render(&page, r, c.running); err != nil {
		return optionFault(c.stderr, protocol.Errorf(protocol.InternalError, "the page could not be rendered; nothing was printed"))
	}
	if _, err := c.stdout.Write(page.Bytes()); err != nil {
		return 1 // not delivered: no claim of success
	}
	if !r.Verified() {
		return 1
	}
	return 0
}

// Run runs "tool-runner report": Open, Run, Close.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, wire app.Wire, running map[string]string) int {
	c, exit := Open(args, stdout, stderr, wire, running)
	if c == nil {
		return exit
	}
	defer c.Close()
	return c.Run(ctx, nil)
}

// optionFault writes the one line of an option fault, as "tool-runner
// mcp" does, and returns 2.
func optionFault(stderr io.Writer, err error) int {
	e := protocol.ErrorOf(err)
	fmt.Fprintf(stderr, "%s: %s\n", e.Code, e.Message)
	return 2
}
