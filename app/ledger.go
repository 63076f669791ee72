package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/metricproof/metricproof/app/ledger"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/app/remedy"
	"github.com/metricproof/metricproof/ports"
)

// The call ledger (protocol §11): one record per call, each line chained to
// the one before by its SHA256, appended before the call's answer is sent.
// The record's fields come from the call (package app/call builds it);
// here are the ledger's place, its checks and the append.

// ledgerWaitSeconds is the period of a call's wait for its turn at the
// ledger's lock: the wait lasts while the ledger changes,
// since every call that lets go of the lock has recorded itself, and gives
// up, unrecorded, after a period with no change (the holder is stuck) or
// after ports.MaxLockWaitPeriods periods (ledgerWaitMinutes) in all.
const ledgerWaitSeconds = 10

// ledgerWaitMinutes is the longest a wait lasts, however busy the ledger.
const ledgerWaitMinutes = ledgerWaitSeconds * ports.MaxLockWaitPeriods / 60

// records are the rules of this engine's ledger records.
func records() ledger.Rules {
	return ledger.Rules{Transports: ledger.Transports(), Callers: ledger.Callers()}
}

// lockWait is a wait for the ledger's lock, in the words of its faults:
// who waited, for what, what it leaves, and whether to say when to retry
// (a call not yet run may be retried; a record not made may not).
type lockWait struct {
	who, forWhat, leaves string
	retry                bool
}

// lockFault is the fault of a wait for the ledger's lock that gave up, or
// of a ledger whose lock may not be taken, by its cause; nil for any other
// error. A period with no record means that whoever holds the lock keeps
// it without recording, since every call records itself before it lets
// go; the wait cannot tell which process that is.
func lockFault(err error, w lockWait) *protocol.Error {
	afterStuck, afterBurst := "", ""
	if w.retry {
		afterStuck, afterBurst = ": retry once it has let go", ": retry when the burst is over, or spread the calls out"
	}
	for _, f := range []struct {
		cause   error
		code    protocol.Code
		message string
	}{
		{ports.ErrBusy, protocol.IOOrNumericError, fmt.Sprintf("%s waited %s, and for %d s no call was recorded in it: whoever holds its lock keeps it without recording anything (a stopped or hung process, of this program or of an account that can open the file: fuser or lsof on the ledger names it); %s%s", w.who, w.forWhat, ledgerWaitSeconds, w.leaves, afterStuck)},
		{ports.ErrWaitedTooLong, protocol.IOOrNumericError, fmt.Sprintf("%s waited %d minutes %s, while other calls kept being recorded, and its turn did not come; %s%s", w.who, ledgerWaitMinutes, w.forWhat, w.leaves, afterBurst)},
		{ports.ErrLockExposed, protocol.InvalidOutput, "the ledger is open to group or others, so another account could hold its lock, and this user may not change its mode: have the file's owner run chmod 600 on it; " + w.leaves},
		{ports.ErrLinked, protocol.InvalidOutput, "the ledger has more than one hard link, so another name of it may lie outside the workspace, and every record would be written there too: remove the extra link, or give --ledger a new path; " + w.leaves},
	} {
		if errors.Is(err, f.cause) {
			return protocol.Errorf(f.code, "%s", f.message)
		}
	}
	return nil
}

// CheckLedger is the pre-check every call makes before any work: the
// ledger's path still resolves where it did when the service opened (each
// call checks again, so a directory swapped for a symlink while a server
// runs is refused), and the ledger is empty or ends with a complete,
// well-formed record. Only the last line is read, so a call's cost does
// not grow with the ledger; the whole chain is [Service.CheckChain]'s job.
// Without --ledger it passes.
func (s *Service) CheckLedger(ctx context.Context) error {
	if s.ledger == "" {
		return nil
	}
	loc, err := s.places.ResolveLedger()
	if err != nil {
		return err
	}
	if loc.Rel != s.ledger {
		return protocol.Errorf(protocol.PathBoundary, "the ledger now resolves elsewhere than when this process started; nothing was run: restore its directory, or start again with --ledger naming the place you mean")
	}
	last, err := s.ledgerFile.LastLine(ctx)
	if err != nil {
		return ledgerReadFault(err)
	}
	if last == nil {
		return nil
	}
	if _, err := records().Parse(last); err != nil {
		return protocol.Errorf(protocol.LedgerTampered, "the ledger's last record is damaged or torn (%v); nothing was run: inspect it with tool-runner ledger, and see README on repairing it", err)
	}
	return nil
}

// ledgerReadFault is a ledger that could not be read to check it.
func ledgerReadFault(err error) *protocol.Error {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return protocol.Errorf(protocol.Cancelled, "the call was cancelled while it waited for another process's lock on the ledger; nothing was run")
	case errors.Is(err, ports.ErrMissing):
		return protocol.Errorf(protocol.InvalidOptions, "the ledger does not exist (the first call recorded in it creates it); check the --ledger path")
	case errors.Is(err, ports.ErrNotRegular):
		return protocol.Errorf(protocol.InvalidOutput, "the ledger exists and is not a regular file; give --ledger a regular file, or a new name in an existing directory")
	}
	if e := lockFault(err, lockWait{who: "this call", forWhat: "for a shared lock on the ledger, to read its last record", leaves: "nothing was run", retry: true}); e != nil {
		return e
	}
	if errors.Is(err, ports.ErrNoBucket) {
		return remedy.NoBucket("the ledger")
	}
	return remedy.RetryableIf(err, protocol.Errorf(protocol.IOOrNumericError, "the ledger could not be read%s; nothing was run", remedy.Because(err)))
}

// LedgerHold is one call's hold on the ledger's lock; its zero value holds
// nothing. With a ledger, analyze takes the lock once its pending
// directory is staged and keeps it across its last checks, its commit and
// its record, so that no wait can leave a committed run
// without its record; every other call takes the lock only to append its
// record ([Service.Record]). The caller releases it once the call is
// recorded.
type LedgerHold struct {
	held ports.HeldLedger
	// unrecorded: the call may not be recorded, because the lock could
	// not be had or the ledger was found damaged under it.
	unrecorded bool
}

// Release drops the lock, if it is held. It may be called more than once.
func (h *LedgerHold) Release() {
	if h.held != nil {
		_ = h.held.Release() // a lock that cannot be released dies with the process
		h.held = nil
	}
}

// holdLedger takes the ledger's exclusive lock for an analyze about to
// commit. A wait for the lock that gives up (or a cancellation while
// another process holds it) leaves the call unrecorded: recording it would mean
// the same wait.
func (s *Service) holdLedger(ctx context.Context, hold *LedgerHold) error {
	held, err := s.ledgerFile.Lock(ctx, ledgerWaitSeconds*time.Second)
	if err == nil {
		hold.held = held
		return nil
	}
	hold.unrecorded = true
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return protocol.Errorf(protocol.Cancelled, "the call was cancelled while it waited for another process's lock on the ledger before its commit; nothing was committed, and the call was not recorded (recording it would mean waiting for that lock)")
	}
	if e := lockFault(err, lockWait{who: "this analyze", forWhat: "for the ledger's lock before its commit", leaves: "nothing was committed, and the call was not recorded", retry: true}); e != nil {
		return e
	}
	if errors.Is(err, ports.ErrNotRegular) {
		return protocol.Errorf(protocol.InvalidOutput, "the ledger is no longer a regular file; nothing was committed, and the call was not recorded: give --ledger a regular file")
	}
	return protocol.Errorf(protocol.IOOrNumericError, "the ledger could not be locked before the commit%s; nothing was committed, and the call was not recorded", remedy.Because(err))
}

// recheckLedger checks, under the held lock, that the ledger still ends
// with a well-formed record, so that the run about to be committed can be
// recorded. A damaged ledger is LEDGER_TAMPERED, unrecorded, and nothing
// is committed.
func (s *Service) recheckLedger(hold *LedgerHold) error {
	last, err := hold.held.LastLine()
	if err != nil {
		hold.unrecorded = true
		return remedy.RetryableIf(err, protocol.Errorf(protocol.IOOrNumericError, "the ledger could not be read under its lock before the commit%s; nothing was committed, and the call was not recorded", remedy.Because(err)))
	}
	if last == nil {
		return nil
	}
	if _, err := records().Parse(last); err != nil {
		hold.unrecorded = true
		return protocol.Errorf(protocol.LedgerTampered, "the ledger's last record was damaged while this call ran (%v); nothing was committed and the call was not recorded: inspect the ledger with tool-runner ledger, and see README on repairing it", err)
	}
	return nil
}

// Record appends a call's record to the ledger: the record made by
// record, which is called only when the call is to be recorded, stamped
// with the engine, the time and its place in the chain. It appends through
// hold, which analyze took before its commit, or which it takes now, and
// releases. It appends nothing, and succeeds, without a ledger or when
// the call may not be recorded (hold's lock could not be had). Its failure
// says why the call is not recorded, which the call's answer then says too.
func (s *Service) Record(hold *LedgerHold, record func() ledger.Record) error {
	defer hold.Release()
	if s.ledger == "" || hold.unrecorded {
		return nil
	}
	rec := record()
	if !slices.Contains(ledger.Transports(), rec.Transport) || rec.Principal.Named != slices.Contains(ledger.Callers(), rec.Transport) {
		// The chain check would refuse the record: a transport's bug.
		return protocol.Errorf(protocol.InternalError, "the call's transport has no name a record may take, or names its caller where a record may not, so the call was not recorded")
	}
	engine, err := s.p.Engine.Identity()
	if err != nil {
		return appendFault(err)
	}
	rec.EngineSHA256 = engine.SHA256
	line := func(last []byte) ([]byte, error) {
		if err := records().Link(&rec, last); err != nil {
			return nil, protocol.Errorf(protocol.IOOrNumericError, "the ledger's last record was damaged while this call ran (%v), so the call was not recorded: inspect the ledger with tool-runner ledger", err)
		}
		rec.Time = s.p.Clock.Now().UTC().Format(time.RFC3339Nano)
		encoded, err := ledger.Encode(rec)
		if err != nil {
			return nil, err
		}
		// The ledger never holds a line its own check refuses: the next
		// call's pre-check would answer LEDGER_TAMPERED to every call.
		if _, err := records().Parse(encoded); err != nil {
			return nil, protocol.Errorf(protocol.InternalError, "the call's record would not be a well-formed record (%v), so the call was not recorded", err)
		}
		return encoded, nil
	}
	if hold.held == nil {
		// The record is the call's outcome, already decided: it waits its
		// whole time, whatever cancels the call meanwhile.
		held, err := s.ledgerFile.Lock(context.Background(), ledgerWaitSeconds*time.Second)
		if err != nil {
			return appendFault(err)
		}
		hold.held = held
	}
	if err := hold.held.Append(line); err != nil {
		if errors.Is(err, ports.ErrRecordRemains) {
			// The record was written whole and could not be cut back off
			// for good: it may remain, and the next call builds on it. The
			// ledger never keeps a record of a response that was not sent
			// (protocol §11), so the answer is the one the record holds.
			return nil
		}
		return appendFault(err)
	}
	return nil
}

// appendFault is a record that could not be appended.
func appendFault(err error) *protocol.Error {
	var coded *protocol.Error
	if errors.As(err, &coded) {
		return coded
	}
	if e := lockFault(err, lockWait{who: "this call", forWhat: "for the ledger's lock, to record itself", leaves: "so this call was not recorded"}); e != nil {
		return e
	}
	if errors.Is(err, ports.ErrTornRemains) {
		return protocol.Errorf(protocol.IOOrNumericError, "recording the call in the ledger failed%s, and a torn part of the record stays at the end of the ledger, which could not be cut back: every call answers LEDGER_TAMPERED until it is repaired: inspect it with tool-runner ledger, and see README on repairing it", remedy.Because(err))
	}
	return remedy.RetryableIf(err, protocol.Errorf(protocol.IOOrNumericError, "recording the call in the ledger failed%s", remedy.Because(err)))
}

// LedgerReport is what "tool-runner ledger" says of a whole ledger.
type LedgerReport struct {
	// Verified reports an unbroken chain of Records records whose last
	// line hashes to Head.
	Verified bool
	Records  int64
	Head     string
	// Otherwise Line is the first bad line, and Fault says what is wrong.
	Line  int64
	Fault *protocol.Error
}

// CheckChain re-reads the whole ledger and checks every line: its shape,
// seq from 1 without a gap, and each prev. A broken chain
// is the report's fault; the error is for a ledger that could not be read.
func (s *Service) CheckChain(ctx context.Context) (LedgerReport, error) {
	return s.walkChain(ctx, nil)
}

// walkChain is CheckChain, which also hands every good record to visit
// (when not nil) with its line number, in order.
func (s *Service) walkChain(ctx context.Context, visit func(line int64, r ledger.Record)) (LedgerReport, error) {
	chain := records().Chain()
	var n int64
	var broken error
	err := s.ledgerFile.Scan(ctx, func(line []byte) error {
		n++
		r, err := chain.Add(line)
		if err != nil {
			broken = err
			return err
		}
		if visit != nil {
			visit(n, r)
		}
		return nil
	})
	switch {
	case broken != nil:
		fault := protocol.Errorf(protocol.LedgerTampered, "%v; records from this line on cannot be trusted: keep a copy of the ledger, and see README (The call ledger) before repairing it", broken)
		return LedgerReport{Line: n, Fault: fault}, nil
	case err != nil:
		return LedgerReport{}, ledgerReadFault(err)
	}
	return LedgerReport{Verified: true, Records: chain.Records, Head: chain.Head}, nil
}
