package app

import (
	"context"
	"errors"
	"time"

	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/app/place"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/app/remedy"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// Run is what a successful analyze made: the run's ID, its result (the
// JSON value of result.json), the paths and sizes of its files, and the
// SHA256 of result.json for the ledger.
type Run struct {
	ID     string
	Result domain.Result
	// Artifacts are the paths of the run's files, for the response.
	Artifacts Artifacts
	// Files are the run's files, in the order written.
	Files        []evidence.RunFile
	ResultSHA256 string
}

// Artifacts are the paths of a committed run's files, workspace-relative
// with forward slashes: the response's "artifacts".
type Artifacts struct {
	Result      string `json:"result,omitempty"`
	Receipt     string `json:"receipt,omitempty"`
	Checksums   string `json:"checksums,omitempty"`
	Attestation string `json:"attestation,omitempty"`
}

// Analyze is analyze (protocol §6.2): it computes the result over sources
// whose digest must be digest and commits it, with its receipt and
// checksums (and its attestation when a signing key is given), as the run
// directory O/runID: all files or nothing, never over existing evidence.
//
// With a ledger, hold receives the ledger's lock, taken once the run is
// staged and kept across the last checks and the commit, so that the
// call's record is appended under the same hold: the
// caller records the call with [Service.Record] and releases hold. beside,
// when not nil, runs on a goroutine of its own with the result while the
// commit waits on its fsyncs, for work the caller would otherwise do
// after (the response's copy of the result is encoded there).
//
// One analyze of a service runs at a time (see [Service]).
func (s *Service) Analyze(ctx context.Context, runID, digest string, hold *LedgerHold, beside func(*domain.Result)) (Run, error) {
	if err := s.needsOutputDir(protocol.ToolAnalyze); err != nil {
		return Run{}, err
	}
	s.warmEngine()
	if err := s.checkCancel(ctx, "before work"); err != nil {
		return Run{}, err
	}
	out, err := s.places.ResolveOutput(true)
	if err != nil {
		return Run{}, err
	}
	snap, err := s.sources.read()
	if err != nil {
		return Run{}, sourceFault(fileOf(err), err)
	}
	_, result, err := s.sources.compute(snap)
	if err != nil {
		return Run{}, sourceFault("", err)
	}
	if snap.digest() != digest {
		// The engine keeps no record of past inspections (a one-shot call
		// has none to keep), so it cannot tell a digest the sources have
		// moved away from from one no inspection ever returned: it says
		// both, and echoes neither digest, so that no caller commits a run
		// over sources it did not inspect.
		return Run{}, protocol.Errorf(protocol.StaleContext, "expected_source_digest matches no inspection of the sources as they are now: "+
			"either they changed since the inspect_inputs that returned it, or it was not taken from one; nothing was written: "+
			"call inspect_inputs again and pass the source_digest it returns, unchanged")
	}
	files, resultSum, err := s.encodeRun(runID, snap, result)
	if err != nil {
		return Run{}, err
	}
	if err := s.checkCancel(ctx, "before writes"); err != nil {
		return Run{}, err
	}
	done := make(chan struct{})
	if beside == nil {
		close(done)
	} else {
		go func() {
			defer close(done)
			defer func() { _ = recover() }() // the caller meets it again, without the head start
			beside(&result)
		}()
	}
	where, err := s.commit(ctx, out, runID, digest, files, hold)
	if err != nil {
		return Run{}, err // beside's work is not wanted
	}
	<-done
	run := Run{ID: runID, Result: result, ResultSHA256: resultSum, Artifacts: Artifacts{
		Result:    where(ports.ResultFile),
		Receipt:   where(ports.ReceiptFile),
		Checksums: where(ports.ChecksumsFile),
	}}
	if s.signingKey != nil {
		run.Artifacts.Attestation = where(ports.AttestationFile)
	}
	for _, f := range files {
		run.Files = append(run.Files, evidence.RunFile{RunID: runID, Name: f.Name, Size: len(f.Data)})
	}
	return run, nil
}

// encodeRun encodes the files of a run, in the order they are written:
// result.json, receipt.json, checksums.json, and attestation.json when a
// signing key is given; and the SHA256 of result.json, taken once.
func (s *Service) encodeRun(runID string, snap snapshot, result domain.Result) ([]ports.File, string, error) {
	// result.json first: it does not need the engine, whose hash may still
	// be running on another core.
	resultBytes, resultSum := s.sources.savedResult(snap, &result, evidence.ResultSizeHint(&result, true))
	engine, err := s.p.Engine.Identity()
	if err != nil {
		return nil, "", engineFault()
	}
	encodingFault := func(what string) error {
		return protocol.Errorf(protocol.InternalError, "the %s could not be encoded", what)
	}
	receipt := newReceipt(runID, snap, engine, resultSum, s.p.Clock.Now())
	if s.signingKey != nil {
		if receipt.Signer, err = evidence.SignerOf(s.signingKey); err != nil {
			return nil, "", encodingFault("receipt")
		}
	}
	receiptBytes, err := evidence.Encode(receipt)
	if err != nil {
		return nil, "", encodingFault("receipt")
	}
	receiptSum := domain.SHA256Hex(receiptBytes)
	checksumBytes, err := evidence.Encode(evidence.Checksums{Receipt: receiptSum, Result: resultSum})
	if err != nil {
		return nil, "", encodingFault("checksums")
	}
	files := []ports.File{
		{Name: ports.ResultFile, Data: resultBytes},
		{Name: ports.ReceiptFile, Data: receiptBytes},
		{Name: ports.ChecksumsFile, Data: checksumBytes},
	}
	if s.signingKey != nil {
		attestation, err := evidence.Attest(s.signingKey, receiptBytes, receiptSum, resultSum)
		if err != nil {
			return nil, "", encodingFault("attestation")
		}
		files = append(files, ports.File{Name: ports.AttestationFile, Data: attestation})
	}
	return files, resultSum, nil
}

// newReceipt is the receipt of run runID, made now.
func newReceipt(runID string, snap snapshot, engine ports.EngineIdentity, resultSHA256 string, now time.Time) evidence.Receipt {
	return evidence.Receipt{
		ProtocolVersion: protocol.Version,
		RunID:           runID,
		DefinitionID:    domain.DefinitionID,
		Sources:         snap.hashes(),
		SourceDigest:    snap.digest(),
		EngineSHA256:    engine.SHA256,
		ResultSHA256:    resultSHA256,
		CreatedAt:       evidence.CreatedAt(now),
		Build:           evidence.BuildOf(engine),
	}
}

// commit writes the run under the writer lock: collision check, staged and
// synced files, sources and cancel marker re-checked, then the no-replace
// rename. Whatever fails, the writer's Close removes what it staged. where
// names each file of the committed run as the answer's artifacts do.
//
// With a ledger, the ledger's lock is taken once the run is staged, and
// the last checks, the ledger's last record, the rename and then the
// call's record are made under it (protocol §11.5): a lock not had within
// the wait, or a ledger found damaged there, commits nothing, so no wait
// ever leaves a committed run without its record.
func (s *Service) commit(ctx context.Context, out ports.Location, runID, digest string, files []ports.File, hold *LedgerHold) (where func(name string) string, err error) {
	dir, runPath := out.Rel, place.Join(out, runID)
	w, werr := s.p.Evidence.OpenWriter(dir)
	if werr != nil {
		return nil, writeFault(dir, werr)
	}
	defer func() {
		// After a commit the run stands whatever Close says; before one, a
		// failed cleanup may have left this call's pending directory.
		if cerr := w.Close(); cerr != nil && err != nil {
			err = protocol.ErrorOf(err).Amended("; cleaning up failed too, so a pending directory of this call may remain in %s", dir)
		}
	}()
	if runPath == s.ledger {
		// The ledger may lie in O itself, where its name may
		// be a run ID: that run would take the ledger's place.
		return nil, protocol.Errorf(protocol.OutputCollision, "%s is the call ledger's path, kept for it even before its first record: use a new run ID", runPath)
	}
	exists, werr := w.Exists(runID)
	if werr != nil {
		return nil, writeFault(runPath, werr)
	}
	if exists {
		return nil, writeFault(runPath, ports.ErrExists)
	}
	if werr := w.Stage(files); werr != nil {
		return nil, writeFault(dir, werr)
	}
	if s.ledger != "" {
		if err := s.holdLedger(ctx, hold); err != nil {
			return nil, err
		}
	}
	again, rerr := s.sources.read()
	if rerr != nil {
		return nil, sourceFault(fileOf(rerr), rerr)
	}
	if again.digest() != digest {
		return nil, protocol.Errorf(protocol.StaleContext, "the sources changed while the run was being written; nothing was committed: "+
			"call inspect_inputs again and pass the source_digest it returns")
	}
	if err := s.checkCancel(ctx, "before the commit"); err != nil {
		return nil, err
	}
	if s.ledger != "" {
		if err := s.recheckLedger(hold); err != nil {
			return nil, err
		}
	}
	if werr := w.Commit(runID); werr != nil {
		return nil, writeFault(runPath, werr)
	}
	return func(name string) string { return w.Where(runID, name) }, nil
}

// writeFault is a failure to write the run, subject being the output
// directory or the run's path in it.
func writeFault(subject string, err error) *protocol.Error {
	switch {
	case errors.Is(err, ports.ErrBusy):
		return protocol.Errorf(protocol.OutputBusy, "another analyze holds the writer lock of %s; retry when it is done", subject)
	case errors.Is(err, ports.ErrLockExposed):
		return protocol.Errorf(protocol.InvalidOutput, "the output directory's writer lock file (%s) is open to group or others, so another account could hold it, and this user may not change its mode; nothing was written: have the file's owner run chmod 600 on it", ports.LockFile)
	case errors.Is(err, ports.ErrLinked):
		return protocol.Errorf(protocol.InvalidOutput, "the output directory's writer lock file (%s) has more than one hard link, so another name of it may lie outside the workspace; nothing was written: remove the extra link (or, when no analyze is running, this lock file: the next analyze makes a new one)", ports.LockFile)
	case errors.Is(err, ports.ErrExists):
		return protocol.Errorf(protocol.OutputCollision, "%s already exists; existing evidence is never overwritten: use a new run ID", subject)
	case errors.Is(err, ports.ErrNotDir), errors.Is(err, ports.ErrNameTooLong):
		return place.OutputFault(err)
	case errors.Is(err, ports.ErrOutside):
		return protocol.Errorf(protocol.PathBoundary, "the output directory or its lock file leads out of the output directory (a symlink put there after the path was checked?); nothing was written: remove it, or choose another output directory")
	case errors.Is(err, ports.ErrInsideEvidence):
		return protocol.Errorf(protocol.PathBoundary, "the output directory %s became a run or lies inside one while this call was reading the sources; nothing was written: choose an output directory outside every run", subject)
	case errors.Is(err, ports.ErrNoBucket):
		return remedy.NoBucket("the output directory")
	case errors.Is(err, ports.ErrMaybeCommitted) && errors.Is(err, ports.ErrOutcomeUnknown):
		// A store's commit whose answer was lost, and a read could not
		// tell whether it took effect. (A staged file's lost answer
		// commits nothing: the default below.)
		return protocol.Errorf(protocol.IOOrNumericError, "the commit of run %s was sent to the store, and its answer was lost%s; the store could not be asked afterwards, so the run may be committed: verify it with verify_result before you rely on it or retry (a retry with the same run ID answers OUTPUT_COLLISION if it was)", subject, remedy.Because(err))
	case errors.Is(err, ports.ErrMaybeCommitted):
		return protocol.Errorf(protocol.IOOrNumericError, "the run %s was renamed into place, but making it durable failed%s and it could not be moved back out of sight: the run may be committed, and may not survive a crash of the machine: verify it with verify_result before you rely on it (a retry with the same run ID answers OUTPUT_COLLISION while it stands)", subject, remedy.Because(err))
	case errors.Is(err, ports.ErrNoReplaceUnsupported):
		return protocol.Errorf(protocol.IOOrNumericError, "the filesystem of %s cannot rename without replacing, so no commit is safe; nothing was committed", subject)
	}
	return remedy.RetryableIf(err, protocol.Errorf(protocol.IOOrNumericError, "writing the run in %s failed%s; nothing was committed", subject, remedy.Because(err)))
}
