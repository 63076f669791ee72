package wire

import (
	"io"
	"sync"

	"github.com/metricproof/metricproof/adapters/landlock"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/ports"
)

// OffVariable is the environment variable that leaves the program
// unconfined when it is "off": for debugging, shown by tool-runner
// version (protocol §16).
const OffVariable = "METRICPROOF_LANDLOCK"

// Command is what a command does with the operator's paths, from which
// its confinement follows.
type Command int

const (
	// Tools: a one-shot call or the MCP server, which read the sources
	// and write runs and the ledger.
	Tools Command = iota
	// Report: tool-runner report, which reads the sources, the runs and
	// the ledger.
	Report
	// LedgerCheck: tool-runner ledger, which reads the ledger.
	LedgerCheck
)

// Confiner is the kernel's confinement of one command (protocol §16),
// from its opening to its run: the composition root wires the command with
// [Confiner.Wire], opens it (which checks every option and path), and
// calls [Confiner.Confine] before the command reads a request. Tests that
// run the program in their own process use [Real] alone: confining would
// confine the test.
type Confiner struct {
	command Command
	off     bool

	mu            sync.Mutex
	bind, connect []uint16
	// store are the ports of the object store the opened command's
	// options name (its endpoint's), none without one.
	store []uint16
	// paths is the opened workspace's resolver, recorded by the wire: the
	// rules are derived through the very resolver the calls use.
	paths  ports.PathResolver
	opened bool
	c      *landlock.Confinement
}

// NewConfiner returns the confinement of one command of the given kind;
// off leaves the process unconfined (the operator's OffVariable).
func NewConfiner(command Command, off bool) *Confiner {
	return &Confiner{command: command, off: off}
}

// Wire returns w, whose ports' workspace the confinement will derive its
// rules through, and whose evidence store narrows the confinement once it
// has created a missing output directory ([landlock.Confinement.Narrow]).
func (f *Confiner) Wire(w app.Wire) app.Wire {
	return func(o app.Options) (app.Ports, io.Closer, error) {
		p, closer, err := w(o)
		if err != nil {
			return p, closer, err
		}
		f.mu.Lock()
		f.paths, f.opened, f.store = p.Paths, true, nil
		if r, ok := p.Paths.(paths); ok {
			f.store = r.store.Ports() // an option names a store
		}
		f.mu.Unlock()
		p.Evidence = narrowing{EvidenceStore: p.Evidence, f: f}
		return p, closer, nil
	}
}

// Allow adds TCP ports the command may bind and connect to once confined
// ([landlock.Need]'s Bind and Connect), for a port that only the opened
// command knows: an HTTP transport's own, its token issuer's. Call it
// before Confine. A port that follows from app.Options (an object store's
// endpoint) belongs in need instead.
func (f *Confiner) Allow(bind, connect []uint16) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bind = append(f.bind, bind...)
	f.connect = append(f.connect, connect...)
}

// Confine confines the process, for good, to what the command opened with
// o needs. A command that was not opened through Wire, or a confinement
// the kernel refuses, is a coded error: the command must not run.
func (f *Confiner) Confine(o app.Options) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.opened {
		return protocol.Errorf(protocol.InternalError, "the program was not wired to confine itself, so it did nothing")
	}
	if f.c != nil {
		return nil // once
	}
	c := landlock.New(f.need(o), f.paths)
	if _, err := c.Apply(); err != nil {
		return protocol.Errorf(protocol.IOOrNumericError, "the program could not confine itself to the files and ports this command needs, so it did nothing (the call is not recorded): retry, and if it persists, check that nothing moves the workspace's folders while it starts")
	}
	f.c = c
	return nil
}

// narrow adds the narrower layer, once confined.
func (f *Confiner) narrow() error {
	f.mu.Lock()
	c := f.c
	f.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Narrow()
}

// need is what the command opened with o needs once confined: the tool
// calls read the sources and write the output directory and the ledger;
// report reads all three; the ledger command reads the ledger. No command
// binds or connects TCP but the ports allowed, and those of the object
// store its options name. The cancel file needs
// nothing: it is only looked for.
func (f *Confiner) need(o app.Options) landlock.Need {
	n := landlock.Need{Workspace: o.Workspace, OutputDir: o.OutputDir, Ledger: o.Ledger, Off: f.off}
	switch f.command {
	case Tools:
		n.Sources, n.Output, n.LedgerUse = true, landlock.Write, landlock.Write
	case Report:
		n.Sources, n.Output, n.LedgerUse = true, landlock.Read, landlock.Read
	case LedgerCheck:
		n.LedgerUse = landlock.Read
	}
	n.Bind = append(n.Bind, f.bind...)
	n.Connect = append(n.Connect, f.connect...)
	n.Connect = append(n.Connect, f.store...)
	return n
}

// narrowing is an evidence store whose OpenWriter narrows the
// confinement.
type narrowing struct {
	ports.EvidenceStore
	f *Confiner
}

var _ ports.EvidenceStore = narrowing{}

// OpenWriter implements ports.EvidenceStore: the store's, then the
// narrower layer, before anything is written below the output directory.
func (n narrowing) OpenWriter(dir string) (ports.EvidenceWriter, error) {
	w, err := n.EvidenceStore.OpenWriter(dir)
	if nerr := n.f.narrow(); nerr != nil {
		if w != nil {
			_ = w.Close()
		}
		return nil, nerr
	}
	return w, err
}
