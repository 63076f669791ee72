package app

import (
	"context"
	"io"

	"github.com/metricproof/metricproof/ports"
)

// Options are the operator's choices the use cases need, from the command
// line (package adapters/cli parses them). Paths are the operator's and
// never a request's.
type Options struct {
	// Workspace is the directory holding the sources.
	Workspace string
	// OutputDir holds the run directories; empty when not given.
	OutputDir string
	// CancelFile is the cancel marker's path; empty when not given.
	CancelFile string
	// Ledger is the call ledger's path; empty when not given.
	Ledger string
	// SigningKey and TrustedKey are the paths of the operator's Ed25519
	// private and public key; empty when not given. They may lie anywhere.
	SigningKey string
	TrustedKey string
	// ReadOnly opens the service to read evidence only ("tool-runner
	// ledger" and "tool-runner report"): nothing will be appended to the
	// ledger, so it may be any file in the workspace.
	ReadOnly bool
}

// Ports are the adapters the use cases run on.
type Ports struct {
	Sources  ports.SourceReader
	Paths    ports.PathResolver
	Evidence ports.EvidenceStore
	// Ledger keeps the call ledger; needed only with --ledger.
	Ledger ports.LedgerStore
	// Keys reads the signing keys; needed only with --signing-key or
	// --trusted-key.
	Keys   ports.KeyReader
	Cancel ports.Canceller
	Clock  ports.Clock
	Engine ports.Engine
	// Reach, set when an option names a place in object storage, asks
	// the store once whether it answers at rel, a Location.Rel with Store
	// set (protocol §15): the one read a server makes at start and for
	// its readiness. Its errors are the ports' words for a store.
	Reach func(ctx context.Context, rel string) error
}

// Wire opens the adapters for the operator's options: the composition
// root's one job. It reports ports.ErrMissing or ports.ErrNotDir when the
// workspace is not an existing directory, and an *OptionError when an
// option names a place it cannot open. The closer releases what it
// opened.
type Wire func(Options) (Ports, io.Closer, error)

// OptionError is a Wire's refusal of an option whose value names a place
// in object storage that cannot be used as given, found before any
// request: Option is the option ("--output-dir", "--ledger"), and Err
// the ports' word for why (ports.ErrStoreURL, ports.ErrStoreConfig,
// ports.ErrNoCredentials).
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return e.Option + ": " + e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }
