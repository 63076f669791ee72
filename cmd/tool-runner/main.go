// Command tool-runner answers one tool call of protocol 1.0: one JSON
// request on standard input until EOF, exactly one compact JSON response
// line on standard output. See README.md and ../../../shared/SPEC.md.
//
// This is the composition root: it wires the real-disk adapters into the
// app and nothing more.
package main

import (
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/metricproof/metricproof/adapters/engine"
	"github.com/metricproof/metricproof/adapters/osfs"
	"github.com/metricproof/metricproof/adapters/stdio"
	"github.com/metricproof/metricproof/adapters/sysclock"
	"github.com/metricproof/metricproof/app"
)

func main() {
	// A reader that hangs up early gets EPIPE on the write, not a signal
	// that would kill the process mid-answer.
	signal.Ignore(syscall.SIGPIPE)
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout))
}

// run answers one call and returns the exit status. Nothing is written to
// standard error on any handled path.
func run(args []string, stdin io.Reader, stdout io.Writer) int {
	r := app.Runner{
		Open: wire,
		Read: func(limitChars int) ([]byte, bool, error) { return stdio.Read(stdin, limitChars) },
	}
	reply := r.Run(args)
	if err := stdio.Write(stdout, reply.Line); err != nil && reply.Exit == 0 {
		return 1 // the answer was not delivered; a committed run stays committed
	}
	return reply.Exit
}

// wire opens the workspace on the real disk and fills the app's ports.
func wire(o app.Options) (app.Ports, error) {
	ws, err := osfs.Open(o.Workspace)
	if err != nil {
		return app.Ports{}, err
	}
	return app.Ports{
		Sources:  ws,
		Paths:    ws,
		Evidence: ws,
		Cancel:   ws.Marker(o.CancelFile),
		Clock:    sysclock.System{},
		Engine:   engine.Self{},
	}, nil
}
