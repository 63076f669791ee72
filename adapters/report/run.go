package report

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/metricproof/metricproof/adapters/cli"
	"github.com/metricproof/metricproof/app"
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

// Run runs "tool-runner report" (protocol §13): args are the command line
// after the word report, and running the build settings of the engine
// running it, from which the page says whether a run it verified can be
// rebuilt. It verifies the run, prints the page and returns
// the exit status: 0 verified, 1 a fault of the run or the ledger (the
// page is still printed), 2 an option fault, named by its code in one line
// on stderr, with nothing on stdout, 3 cancelled by a signal (no page).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, wire app.Wire, running map[string]string) int {
	o, help, e := cli.Parse(app.Report, args)
	if e != nil {
		return optionFault(stderr, e)
	}
	if help {
		if _, err := io.WriteString(stdout, Usage); err != nil {
			return 1 // not delivered, as a page: no claim of success
		}
		return 0
	}
	s, e := app.Open(o, wire)
	if e != nil {
		return optionFault(stderr, e)
	}
	defer s.Close()
	r, e := s.Review(ctx)
	if e != nil && e.Code == app.Cancelled {
		// A signal stopped the checks: the run was not found at fault, so
		// a page saying "do not rely on this run" would be false. Exit 3,
		// as a cancelled one-shot call (protocol §1).
		fmt.Fprintf(stderr, "%s: the report was cancelled by a signal before its checks finished; nothing was printed: run it again\n", app.Cancelled)
		return 3
	}
	if e != nil {
		return optionFault(stderr, e)
	}
	render := Markdown
	if o.Format == app.FormatHTML {
		render = HTML
	}
	var page bytes.Buffer
	if err := render(&page, r, running); err != nil {
		return optionFault(stderr, &app.Error{Code: app.InternalError, Message: "the page could not be rendered; nothing was printed"})
	}
	if _, err := stdout.Write(page.Bytes()); err != nil {
		return 1 // not delivered: no claim of success
	}
	if !r.Verified() {
		return 1
	}
	return 0
}

// optionFault writes the one line of an option fault, as "tool-runner
// mcp" does, and returns 2.
func optionFault(stderr io.Writer, e *app.Error) int {
	fmt.Fprintf(stderr, "%s: %s\n", e.Code, e.Message)
	return 2
}
