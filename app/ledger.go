package app

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/metricproof/metricproof/app/ledger"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// The call ledger (protocol §11): one record per call, each line chained to
// the one before by its SHA256, appended before the call's answer is sent.

// ledgerWaitSeconds is how long a call waits for its turn at the ledger's
// lock (held by other calls of this process or of others, or queued for
// by them) before it fails unrecorded.
const ledgerWaitSeconds = 10

// CheckLedger is the pre-check every call makes before any work: the
// ledger's path still resolves where it did when the service opened
// (protocol §9: each call checks again, so a directory swapped for a symlink
// while a server runs is refused), and the ledger is empty or ends with
// a complete, well-formed record. Only the last line is read, so a call's
// cost does not grow with the ledger; the whole chain is
// [Service.CheckChain]'s job. Without --ledger it passes.
func (s *Service) CheckLedger(ctx context.Context) *Error {
	if s.ledger == "" {
		return nil
	}
	rel, e := s.ledgerLocation()
	if e != nil {
		return e
	}
	if rel != s.ledger {
		return classify(resolvingLedger, "", found("the ledger now resolves elsewhere than when this process started; nothing was run: restore its directory, or start again with --ledger naming the place you mean"))
	}
	last, err := s.ledgerFile.LastLine(ctx)
	if err != nil {
		return classify(checkingLedger, "", err)
	}
	if last == nil {
		return nil
	}
	if _, err := records().Parse(last); err != nil {
		return classify(checkingLedger, "", found("the ledger's last record is damaged or torn (%v); nothing was run: inspect it with tool-runner ledger, and see README on repairing it", err))
	}
	return nil
}

// ledgerHold is one call's hold on the ledger's lock. With a ledger,
// analyze takes the lock once its pending directory is staged and keeps it
// across its last checks, its commit and its record (protocol §11), so that
// no wait can leave a committed run without its record. Every other call
// takes the lock only to append its record.
type ledgerHold struct {
	held ports.HeldLedger
	// unrecorded: the call's answer may not be recorded, because the lock
	// could not be had or the ledger was found damaged under it.
	unrecorded bool
}

// release drops the lock, if it is held.
func (h *ledgerHold) release() {
	if h.held != nil {
		_ = h.held.Release() // a lock that cannot be released dies with the process
		h.held = nil
	}
}

// holdLedger takes the ledger's exclusive lock for an analyze about to
// commit. A lock not had within the wait (or a cancellation while another
// process holds it) leaves the call unrecorded: recording it would mean
// the same wait.
func (s *Service) holdLedger(ctx context.Context, hold *ledgerHold) *Error {
	held, err := s.ledgerFile.Lock(ctx, ledgerWaitSeconds*time.Second)
	if err != nil {
		hold.unrecorded = true
		return classify(lockingLedger, "", err)
	}
	hold.held = held
	return nil
}

// recheckLedger checks, under the held lock, that the ledger still ends
// with a well-formed record, so that the run about to be committed can be
// recorded. A damaged ledger is LEDGER_TAMPERED, unrecorded, and nothing
// is committed.
func (s *Service) recheckLedger(hold *ledgerHold) *Error {
	last, err := hold.held.LastLine()
	if err != nil {
		hold.unrecorded = true
		return classify(recheckingLedger, "", err)
	}
	if last == nil {
		return nil
	}
	if _, err := records().Parse(last); err != nil {
		hold.unrecorded = true
		return classify(recheckingLedger, "", found("the ledger's last record was damaged while this call ran (%v); nothing was committed and the call was not recorded: inspect the ledger with tool-runner ledger, and see README on repairing it", err))
	}
	return nil
}

// record appends the call's record and returns the answer to send: a,
// or IO_OR_NUMERIC_ERROR when the record could not be appended (a run
// the call committed stays committed, and the message says so). It
// appends through the call's hold on the lock, which analyze took before
// its commit or the record takes now, and releases it.
func (s *Service) record(in Input, o outcome, a Answer, hold *ledgerHold) Answer {
	defer hold.release()
	engine, err := s.p.Engine.Identity()
	if err != nil {
		return s.unrecorded(o, classify(appendingLedger, "", err))
	}
	rec := ledger.Record{
		Transport:      in.Transport.Name(),
		RequestID:      o.call.HeardID(),
		Tool:           o.call.HeardTool(),
		Status:         "success",
		ResponseSHA256: domain.SHA256Hex(a.JSON),
		EngineSHA256:   engine.SHA256,
	}
	if in.Short == Whole { // only a whole input has a hash to record
		sum := domain.SHA256Hex(in.Data)
		rec.InputSHA256 = &sum
	}
	if a.Code != "" {
		code := string(a.Code)
		rec.Status, rec.Code = a.Code.Status(), &code
	}
	if o.committed != "" {
		rec.RunID, rec.ResultSHA256 = &o.committed, &o.resultSHA256
	}
	line := func(last []byte) ([]byte, error) {
		if err := records().Link(&rec, last); err != nil {
			return nil, found("the ledger's last record was damaged while this call ran (%v), so the call was not recorded: inspect the ledger with tool-runner ledger", err)
		}
		rec.Time = s.p.Clock.Now().UTC().Format(time.RFC3339Nano)
		return ledger.Encode(rec)
	}
	if hold.held == nil {
		// The record is the call's outcome, already decided: it waits its
		// whole time, whatever cancels the call meanwhile.
		held, err := s.ledgerFile.Lock(context.Background(), ledgerWaitSeconds*time.Second)
		if err != nil {
			return s.unrecorded(o, classify(appendingLedger, "", err))
		}
		hold.held = held
	}
	if err := hold.held.Append(line); err != nil {
		if errors.Is(err, ports.ErrRecordRemains) {
			// The record was written whole and could not be cut back off
			// for good: it may remain, and the next call builds on it. The
			// ledger never keeps a record of a response that was not sent
			// (protocol §11), so the answer is the one the record holds.
			return a
		}
		return s.unrecorded(o, classify(appendingLedger, "", err))
	}
	return a
}

// unrecorded is the answer of a call whose record could not be appended.
func (s *Service) unrecorded(o outcome, e *Error) Answer {
	if o.committed != "" {
		e = fail(e.Code, "%s; run %s was committed and stays committed", e.Message, o.committed)
	} else {
		e = fail(e.Code, "%s; the call's own outcome was %s", e.Message, outcomeName(o))
	}
	return refused(o.call, e).answer()
}

func outcomeName(o outcome) string {
	if o.err == nil {
		return "success"
	}
	return string(o.err.Code)
}

// records are the rules of this engine's ledger records: its transports.
func records() ledger.Rules {
	return ledger.Rules{Transports: []string{Stdio{}.Name(), MCPCalls{}.Name()}}
}

// LedgerReport is the one line of tool-runner ledger.
type LedgerReport struct {
	// Verified reports an unbroken chain of Records records whose last
	// line hashes to Head.
	Verified bool
	Records  int64
	Head     string
	// Otherwise Line is the first bad line, and Fault says what is wrong.
	Line  int64
	Fault *Error
}

// JSON encodes the report as its compact line, without a newline.
func (r LedgerReport) JSON() []byte {
	var v any
	if r.Verified {
		v = struct {
			Ledger  string `json:"ledger"`
			Records int64  `json:"records"`
			Head    string `json:"head"`
		}{"verified", r.Records, r.Head}
	} else {
		v = struct {
			Ledger  string `json:"ledger"`
			Line    int64  `json:"line"`
			Code    Code   `json:"code"`
			Message string `json:"message"`
		}{"tampered", r.Line, r.Fault.Code, r.Fault.Message}
	}
	data, _ := marshal(v, "") // plain strings and numbers always encode
	return bytes.TrimSuffix(data, []byte("\n"))
}

// CheckChain re-reads the whole ledger and checks every line: its shape,
// seq from 1 without a gap, and each prev.
func (s *Service) CheckChain() (LedgerReport, *Error) {
	return s.walkChain(context.Background(), nil)
}

// walkChain is CheckChain, which also hands every good record to visit
// (when not nil) with its line number, in order.
func (s *Service) walkChain(ctx context.Context, visit func(line int64, r ledger.Record)) (LedgerReport, *Error) {
	chain := records().Chain()
	var n int64
	err := s.ledgerFile.Scan(ctx, func(line []byte) error {
		n++
		r, err := chain.Add(line)
		if err != nil {
			return found("%v", err)
		}
		if visit != nil {
			visit(n, r)
		}
		return nil
	})
	if err != nil {
		e := classify(checkingLedger, "", err)
		if e.Code != LedgerTampered {
			return LedgerReport{}, e
		}
		e.Message += "; records from this line on cannot be trusted: keep a copy of the ledger, and see README (The call ledger) before repairing it"
		return LedgerReport{Line: n, Fault: e}, nil
	}
	return LedgerReport{Verified: true, Records: chain.Records, Head: chain.Head}, nil
}

// LedgerFault is the line of tool-runner ledger for an option fault:
// {"ledger":"error","code","message"}, without a newline.
func LedgerFault(e *Error) []byte {
	data, _ := marshal(struct {
		Ledger  string `json:"ledger"`
		Code    Code   `json:"code"`
		Message string `json:"message"`
	}{"error", e.Code, e.Message}, "")
	return bytes.TrimSuffix(data, []byte("\n"))
}
