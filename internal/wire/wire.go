// Package wire is the composition of the real adapters into the app's
// ports: what cmd/tool-runner runs, and what tests that run the program
// in their own process (contracts' output checks, the MCP benchmark) run
// too, so there is one copy of it. Like cmd/, it may import anything;
// nothing but composition roots and tests import it.
//
// The workspace is always the disk's. The output directory and the ledger
// are each the disk's, or object storage's when the option's value starts
// with s3:// (protocol §15): the choice is made per option, here and
// nowhere else.
package wire

import (
	"context"
	"io"
	"strings"

	"github.com/metricproof/metricproof/adapters/engine"
	"github.com/metricproof/metricproof/adapters/keyfile"
	"github.com/metricproof/metricproof/adapters/osfs"
	"github.com/metricproof/metricproof/adapters/s3store"
	"github.com/metricproof/metricproof/adapters/sysclock"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/ports"
)

// Real returns the composition of the real adapters, with eng as the
// engine: the executable is hashed at most once per process, however many
// calls it serves.
func Real(eng *engine.Self) app.Wire {
	return func(o app.Options) (app.Ports, io.Closer, error) {
		ws, err := osfs.Open(o.Workspace)
		if err != nil {
			return app.Ports{}, nil, err
		}
		p := app.Ports{
			Sources:  ws,
			Paths:    ws,
			Evidence: ws,
			Ledger:   ws,
			Keys:     keyfile.Reader{},
			Cancel:   ws.Marker(o.CancelFile),
			Clock:    sysclock.System{},
			Engine:   eng,
		}
		if err := withStores(&p, o); err != nil {
			ws.Close()
			return app.Ports{}, nil, err
		}
		return p, ws, nil
	}
}

// InStore reports whether an option's value names a place in object
// storage rather than a path.
func InStore(value string) bool { return strings.HasPrefix(value, s3store.Scheme) }

// withStores puts object storage into p for each option that names a
// place there: the client is made only then, so a command on the disk
// alone never reads the AWS configuration. A malformed URL, or an
// environment without region or credentials, is the option's fault.
func withStores(p *app.Ports, o app.Options) error {
	var first string // the first option naming a store, for a fault of the client
	for _, opt := range []struct{ name, value string }{{"--output-dir", o.OutputDir}, {"--ledger", o.Ledger}} {
		if !InStore(opt.value) {
			continue
		}
		if _, err := s3store.Canonical(opt.value); err != nil {
			return &app.OptionError{Option: opt.name, Err: err}
		}
		if first == "" {
			first = opt.name
		}
	}
	if first == "" {
		return nil
	}
	buckets, err := s3store.Connect(context.Background())
	if err != nil {
		return &app.OptionError{Option: first, Err: err}
	}
	p.Paths = paths{disk: p.Paths, store: buckets}
	if InStore(o.OutputDir) {
		p.Evidence = buckets
	}
	if InStore(o.Ledger) {
		p.Ledger = buckets
	}
	p.Reach = buckets.Reach
	return nil
}

// paths resolves a store's URL in the store, and any other path on disk.
type paths struct {
	disk  ports.PathResolver
	store *s3store.Buckets
}

func (r paths) Resolve(path string) (ports.Location, error) {
	if InStore(path) {
		return r.store.Resolve(path)
	}
	return r.disk.Resolve(path)
}
