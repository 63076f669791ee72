package wire

import (
	"io"

	"github.com/metricproof/metricproof/adapters/engine"
	"github.com/metricproof/metricproof/adapters/landlock"
	"github.com/metricproof/metricproof/app"
)

// OffVariable is the environment variable that leaves the program
// unconfined when it is "off": for debugging, shown by tool-runner
// version (protocol §16).
const OffVariable = "METRICPROOF_LANDLOCK"

// Confined is Real, confined by the kernel once Open has checked the
// options (protocol §16): what cmd/tool-runner runs. off leaves the
// process unconfined. Tests that run the program in their own process use
// Real: confining would confine the test.
func Confined(eng *engine.Self, off bool) app.Wire {
	unconfined := Real(eng)
	return func(o app.Options) (app.Ports, io.Closer, error) {
		p, closer, err := unconfined(o)
		if err != nil {
			return p, closer, err
		}
		c := landlock.New(need(o, off), p.Paths)
		p.Evidence = c.Evidence(p.Evidence)
		p.Confine = func() error {
			_, err := c.Apply()
			return err
		}
		return p, closer, nil
	}
}

// need is what the command of o needs once confined: the tool calls read
// the sources and write the output directory and the ledger; report reads
// all three; the ledger command reads the ledger. No command binds or
// connects yet.
func need(o app.Options, off bool) landlock.Need {
	// The cancel file needs nothing: it is only looked for.
	n := landlock.Need{Workspace: o.Workspace, OutputDir: o.OutputDir, Ledger: o.Ledger, Off: off}
	switch o.Command {
	case app.OneShot, app.MCP:
		n.Sources, n.Output, n.LedgerUse = true, landlock.Write, landlock.Write
	case app.Report:
		n.Sources, n.Output, n.LedgerUse = true, landlock.Read, landlock.Read
	case app.LedgerCheck:
		n.LedgerUse = landlock.Read
	}
	return n
}
