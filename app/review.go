package app

import (
	"context"

	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/app/ledger"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
)

// The reviewer's page (protocol §13): what "tool-runner report" says of one
// run, gathered here as plain values; adapters/report renders them. The
// run is verified by the very checks of verify_result (audit), and with
// --ledger the whole chain is checked as "tool-runner ledger" does.

// Review is everything the reviewer's page says of one run. Result and
// Receipt are set only for a run that verified: the numbers and evidence
// of a run that does not verify are not shown.
type Review struct {
	// RunID is the run reported on.
	RunID string
	// Fault is the first fault: verification's, else the ledger's chain;
	// nil when the run verified. FaultLine is the ledger line a
	// LEDGER_TAMPERED fault names; 0 for any other.
	Fault     *protocol.Error
	FaultLine int64
	// Checks are the checks in the order they ran, ending at the failing
	// one; with --ledger the chain check comes last, as LedgerCheckName.
	Checks []CheckOutcome
	// Result and Receipt are the run's, once verified; nil otherwise.
	Result  *domain.Result
	Receipt *evidence.Receipt
	// TrustedKey reports that --trusted-key was given: on a verified run,
	// the signer's key is that key.
	TrustedKey bool
	// Ledger is what the ledger says of the run; nil without --ledger.
	Ledger *LedgerEvidence
	// Disclaimer is the verification block of every response,
	// field by field in its key order.
	Disclaimer []Disclaimed
}

// Verified reports whether the run passed every check.
func (r Review) Verified() bool { return r.Fault == nil }

// CheckOutcome is one check of the page and whether it passed.
type CheckOutcome struct {
	Name   string
	Passed bool
}

// LedgerCheckName names the page's check of the ledger's whole chain.
const LedgerCheckName = "ledger_chain"

// LedgerEvidence is what the call ledger says of the run.
type LedgerEvidence struct {
	// Verified reports an unbroken chain of Records records; otherwise
	// BadLine is the first bad line.
	Verified bool
	Records  int64
	BadLine  int64
	// Record is the record of the analyze that made the run, nil when no
	// record names it (or the chain is damaged before one does).
	Record *LedgerEntry
	// Other is, when Record is nil, the first record of an analyze that
	// named the run's ID with another result: the run on disk is not the
	// one that call committed (it was made again under the same ID).
	Other *LedgerEntry
}

// LedgerEntry is one record of the ledger and the line it is on.
type LedgerEntry struct {
	Line, Seq    int64
	Time         string
	Transport    string
	ResultSHA256 string
}

// Disclaimed is one field of the verification block.
type Disclaimed struct {
	Field, Value string
}

// Disclaimer returns the verification block of every response, field by
// field in its key order.
func Disclaimer() []Disclaimed {
	d := protocol.NotClaimed()
	return []Disclaimed{
		{"native_bi", d.NativeBI},
		{"host_cancellation", d.HostCancellation},
		{"os_sandbox", d.OSSandbox},
		{"real_model_quality", d.RealModelQuality},
		{"human_review", d.HumanReview},
	}
}

// Review is the reviewer's page of run runID: it verifies
// the run exactly as verify_result does, checks the ledger's chain when
// --ledger is given, and gathers the page. It writes nothing and changes
// no mode. The error is for no page: an option fault (the output
// directory's place, a ledger that cannot be read, a store that does not
// answer when first asked) or CANCELLED, wherever
// the signal stopped it (a cancelled check found nothing at fault, so no
// page may say so); a run missing, damaged or tampered with is the page's
// Fault.
func (s *Service) Review(ctx context.Context, runID string) (r Review, err error) {
	defer func() {
		if recover() != nil {
			r, err = Review{}, protocol.Errorf(protocol.InternalError, "the engine failed unexpectedly while it verified the run; nothing was written")
		}
	}()
	out, err := s.places.ResolveOutput(false)
	if err != nil {
		return Review{}, err
	}
	// A store that does not answer gives no page, rather than one that
	// says the run failed a check: the run was not judged.
	if err := s.reach(ctx, out.Rel, out.Store, "the output directory"); err != nil {
		return Review{}, err
	}
	if err := s.reach(ctx, s.ledger, s.ledgerInStore, "the ledger"); err != nil {
		return Review{}, err
	}
	r = Review{RunID: runID, TrustedKey: s.trustedKey != nil, Disclaimer: Disclaimer()}
	a, done, failed, aerr := s.audit(ctx, r.RunID)
	for _, name := range done {
		r.Checks = append(r.Checks, CheckOutcome{Name: name, Passed: true})
	}
	fault := protocol.ErrorOf(aerr)
	if fault != nil && fault.Code == protocol.Cancelled {
		return Review{}, fault
	}
	if fault != nil {
		r.Fault = fault
		if failed != "" {
			r.Checks = append(r.Checks, CheckOutcome{Name: failed})
		}
	}
	if s.ledger != "" {
		if err := s.reviewLedger(ctx, &r, a); err != nil {
			return Review{}, err
		}
	}
	if r.Fault == nil {
		r.Result, r.Receipt = &a.parsedResult, &a.parsedReceipt
	}
	return r, nil
}

// reviewLedger checks the whole chain and finds the record of the analyze
// that committed the run: the first that names it (and, once the run
// verified, its result's SHA256). A damaged chain is the page's fault
// unless verification found one first.
func (s *Service) reviewLedger(ctx context.Context, r *Review, a *audit) error {
	ev := &LedgerEvidence{}
	report, err := s.walkChain(ctx, func(line int64, rec ledger.Record) {
		if ev.Record != nil || rec.RunID == nil || *rec.RunID != r.RunID || rec.ResultSHA256 == nil {
			return // a record names a run exactly when it has its result's SHA256 (protocol §11.3)
		}
		entry := &LedgerEntry{Line: line, Seq: rec.Seq, Time: rec.Time, Transport: rec.Transport, ResultSHA256: *rec.ResultSHA256}
		if r.Fault == nil && entry.ResultSHA256 != a.parsedReceipt.ResultSHA256 {
			if ev.Other == nil {
				ev.Other = entry
			}
			return
		}
		ev.Record, ev.Other = entry, nil
	})
	if err != nil {
		return err
	}
	ev.Verified, ev.Records, ev.BadLine = report.Verified, report.Records, report.Line
	r.Ledger = ev
	if r.Fault != nil {
		return nil // the page ends at the failing check of verification
	}
	r.Checks = append(r.Checks, CheckOutcome{Name: LedgerCheckName, Passed: report.Verified})
	if !report.Verified {
		r.Fault, r.FaultLine = report.Fault, report.Line
	}
	return nil
}
