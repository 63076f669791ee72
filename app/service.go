package app

import (
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"sync/atomic"

	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/ports"
)

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
	// Confine, when set, confines the process once Open has checked every
	// option and before any request is read (protocol §16): the
	// composition root's hook, run once. An error stops the command.
	Confine func() error
}

// Wire opens the adapters for the operator's options: the composition
// root's one job. It reports ports.ErrMissing or ports.ErrNotDir when the
// workspace is not an existing directory. The closer releases what it
// opened.
type Wire func(Options) (Ports, io.Closer, error)

// Service runs the three tools over one set of ports for one operator's
// options. A transport opens it once ([Open]), hands it every call
// ([Service.Serve]), and closes it. It is safe for concurrent calls: at
// most [ComputeSlots] of them compute at once, the rest wait in arrival
// order (protocol §9, Load); analyze commits of one service are serialized,
// since the writer lock excludes other processes, and would refuse a
// second call of this one as OUTPUT_BUSY.
type Service struct {
	p      Ports
	closer io.Closer
	opts   Options
	// ledger is the ledger's resolved workspace-relative path; empty
	// without --ledger.
	ledger string
	// ledgerFile is the ledger, its directory opened once by Open: every
	// access to it after that goes through this handle (protocol §11).
	ledgerFile ports.Ledger
	// signingKey signs every run analyze commits; trustedKey is the only
	// key verify_result accepts. Either may be nil.
	signingKey ed25519.PrivateKey
	trustedKey ed25519.PublicKey
	// compute admits at most ComputeSlots calls (and resource reads, see
	// Compute) at a time, in arrival order.
	slots *turns
	// commits is the output directory's commit turn: one analyze at a
	// time, taken before it reads anything and before its compute slot,
	// so that an analyze waiting for it holds no slot.
	commits *turns
	// The ledger's lock needs no mutex here: the store queues this
	// process's callers itself (ports.LedgerStore).
	// memo is the last computation from sources read (memo.go).
	memo atomic.Pointer[memo]
}

// Open wires the ports for the options and checks what every call needs
// before standard input is read: the workspace (MISSING_WORKSPACE), the
// keys (INVALID_OPTIONS), and the ledger's place (PATH_BOUNDARY,
// INVALID_OUTPUT); then it runs the Confine hook. Its faults are never
// recorded in the ledger.
func Open(o Options, wire Wire) (s *Service, e *Error) {
	defer func() {
		if recover() != nil {
			s, e = nil, fail(InternalError, "the engine failed unexpectedly while it started")
		}
	}()
	p, closer, err := wire(o)
	if err != nil {
		return nil, classify(openingWorkspace, "", err)
	}
	s = &Service{p: p, closer: closer, opts: o, slots: newTurns(ComputeSlots()), commits: newTurns(1)}
	if e := s.readKeys(); e != nil {
		s.Close()
		return nil, e
	}
	if o.Ledger != "" {
		rel, e := s.ledgerLocation()
		if e != nil {
			s.Close()
			return nil, e
		}
		l, err := p.Ledger.OpenLedger(rel)
		if err != nil {
			s.Close()
			return nil, classify(resolvingLedger, "", err)
		}
		s.ledger, s.ledgerFile = rel, l
	}
	if p.Confine != nil {
		if err := p.Confine(); err != nil {
			s.Close()
			return nil, classify(confining, "", err)
		}
	}
	return s, nil
}

// Close releases what Open opened.
func (s *Service) Close() error {
	var err error
	if s.ledgerFile != nil {
		err = s.ledgerFile.Close()
	}
	if s.closer == nil {
		return err
	}
	return errors.Join(err, s.closer.Close())
}

// readKeys reads the signing and trusted keys the options name.
func (s *Service) readKeys() *Error {
	if s.opts.SigningKey != "" {
		k, err := s.p.Keys.SigningKey(s.opts.SigningKey)
		if err != nil {
			return classify(readingSigningKey, "", err)
		}
		s.signingKey = k
	}
	if s.opts.TrustedKey != "" {
		k, err := s.p.Keys.TrustedKey(s.opts.TrustedKey)
		if err != nil {
			return classify(readingTrustedKey, "", err)
		}
		s.trustedKey = k
	}
	return nil
}

// CheckPaths checks every operator path as the calls will: the output
// directory against the write boundary, the cancel file and the ledger
// inside theirs, and hashes the engine. The MCP server runs it at start,
// so that a server that could answer no analyze does not start; each call
// checks again.
func (s *Service) CheckPaths() *Error {
	if s.opts.OutputDir != "" {
		if _, e := s.outputLocation(true); e != nil {
			return e
		}
	}
	if s.opts.CancelFile != "" {
		if _, err := s.p.Cancel.Cancelled(context.Background()); err != nil {
			return classify(checkingMarker, "", err)
		}
	}
	if s.ledger != "" {
		if _, e := s.ledgerLocation(); e != nil {
			return e
		}
	}
	if _, err := s.p.Engine.Identity(); err != nil {
		return classify(identifyingEngine, "", err)
	}
	return nil
}

// Serve answers one call: the ledger's pre-check, the request checks of
// protocol §2 (and §9 over MCP), the tool, and the ledger's record, appended
// before the answer is returned. Every path, a recovered panic included,
// ends in exactly one Answer.
func (s *Service) Serve(ctx context.Context, in Input) (a Answer) {
	adm := s.arrive(in)
	if in.Arrived != nil {
		in.Arrived()
	}
	defer func() {
		if in.Keep != nil {
			in.Keep(adm.release)
		} else {
			adm.release()
		}
	}()
	var o outcome // the call as heard, for an answer to a panic below
	defer func() {
		if recover() != nil {
			e := fail(InternalError, "the engine failed unexpectedly; nothing was committed by this failure")
			if o.committed != "" {
				e = fail(InternalError, "the engine failed unexpectedly after run %s was committed; it stays committed: check it with verify_result", o.committed)
			}
			a = refused(o.call, e).answer()
		}
	}()
	hold := &ledgerHold{}
	defer hold.release()
	o, recordable := s.decide(ctx, in, adm, hold)
	a = o.answer()
	if s.ledger == "" || !recordable || hold.unrecorded {
		return a
	}
	return s.record(in, o, a, hold)
}

// decide runs a call to its outcome. recordable is false for the answers
// the ledger cannot hold: a ledger that failed its pre-check. hold is the
// call's hold on the ledger's lock, which analyze may take.
func (s *Service) decide(ctx context.Context, in Input, adm *admission, hold *ledgerHold) (o outcome, recordable bool) {
	var c call
	defer func() {
		if recover() != nil {
			o, recordable = refused(c, fail(InternalError, "the engine failed unexpectedly; nothing was committed by this failure")), true
		}
	}()
	c = in.Transport.heard(s, in)
	if e := s.CheckLedger(ctx); e != nil {
		return refused(c, e), false
	}
	c, e := in.Transport.decode(c, in)
	if e != nil {
		return refused(c, e), true
	}
	return s.run(ctx, c, adm, hold), true
}

// run runs a call that passed every request check, once it has its turn.
func (s *Service) run(ctx context.Context, c call, adm *admission, hold *ledgerHold) outcome {
	if c.Tool != protocol.ToolInspect && s.opts.OutputDir == "" {
		return refused(c, fail(MissingContext, "%s needs --output-dir, chosen by the operator", c.Tool))
	}
	if c.Tool == protocol.ToolAnalyze {
		defer adm.leaveCommits()
	}
	if e := adm.take(ctx, c.Tool); e != nil {
		return refused(c, e)
	}
	if c.Tool != protocol.ToolInspect || s.ledger != "" {
		// The engine's hash is needed later (the receipt, check 6, the
		// record) and costs one pass over the executable: take it on
		// another core while this one reads and computes. Identity runs
		// once; the later call waits for this one.
		go func() {
			defer func() { _ = recover() }() // the later call meets it again, and answers it
			_, _ = s.p.Engine.Identity()
		}()
	}
	o := outcome{call: c}
	switch c.Tool {
	case protocol.ToolInspect:
		o.result, o.err = s.inspect(ctx)
	case protocol.ToolAnalyze:
		var run committedRun
		// Over MCP the answer holds only the first K of each list: the
		// whole result is not encoded ahead for it.
		run, o.err = s.analyze(ctx, c.ID, c.Digest, !c.cut, hold)
		o.result, o.resultJSON, o.artifacts, o.committed, o.resultSHA256 = run.result, run.resultJSON, run.artifacts, run.id, run.resultSHA256
		o.files = run.files
	case protocol.ToolVerify:
		var v VerifyResult
		var resultSize int
		v, resultSize, o.err = s.verify(ctx, c.RunID)
		o.result, o.files = v, []RunFile{{RunID: c.RunID, Name: ResultFile, Size: resultSize}}
	}
	if o.err != nil {
		return refused(c, o.err)
	}
	return o
}

// checkCancel answers CANCELLED when the caller's context is done (the
// transport's cancellation: a signal, an MCP notifications/cancelled) or
// the operator's marker exists. point names the check in the message.
func (s *Service) checkCancel(ctx context.Context, point string) *Error {
	if ctx.Err() != nil {
		return classify(checkingCancel, "", found("the call was cancelled (checked %s); it stopped and nothing was committed", point))
	}
	cancelled, err := s.p.Cancel.Cancelled(ctx)
	if err != nil {
		return classify(checkingMarker, "", err)
	}
	if cancelled {
		return classify(checkingCancel, "", found("the cancel file exists (checked %s); the call stopped and nothing was committed", point))
	}
	if ctx.Err() != nil { // cancelled while the marker was looked at
		return classify(checkingCancel, "", found("the call was cancelled (checked %s); it stopped and nothing was committed", point))
	}
	return nil
}

// newCallID assigns a call ID from the clock.
func (s *Service) newCallID() string { return callID(s.p.Clock.Now()) }

// ListLimit is K of protocol §9, the length the MCP answers cut their lists
// to, for the options in force.
func (s *Service) ListLimit() int { return s.opts.ListLimit }
