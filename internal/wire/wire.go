// Package wire is the composition of the real-disk adapters into the
// app's ports: what cmd/tool-runner runs, and what tests that run the
// program in their own process (contracts' output checks, the MCP
// benchmark) run too, so there is one copy of it. Like cmd/, it may import
// anything; nothing but composition roots and tests import it.
package wire

import (
	"io"

	"github.com/metricproof/metricproof/adapters/engine"
	"github.com/metricproof/metricproof/adapters/keyfile"
	"github.com/metricproof/metricproof/adapters/osfs"
	"github.com/metricproof/metricproof/adapters/sysclock"
	"github.com/metricproof/metricproof/app"
)

// Real returns the composition of the real-disk adapters, with eng as the
// engine: the executable is hashed at most once per process, however many
// calls it serves.
func Real(eng *engine.Self) app.Wire {
	return func(o app.Options) (app.Ports, io.Closer, error) {
		ws, err := osfs.Open(o.Workspace)
		if err != nil {
			return app.Ports{}, nil, err
		}
		return app.Ports{
			Sources:  ws,
			Paths:    ws,
			Evidence: ws,
			Ledger:   ws,
			Keys:     keyfile.Reader{},
			Cancel:   ws.Marker(o.CancelFile),
			Clock:    sysclock.System{},
			Engine:   eng,
		}, ws, nil
	}
}
