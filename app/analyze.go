package app

import (
	"context"
	"path"

	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// committedRun is what a successful analyze made: the run's ID, its
// result (analyze's response result, the JSON value of result.json), the
// paths of its files, and the SHA256 of result.json for the ledger.
type committedRun struct {
	id     string
	result domain.Result
	// resultJSON is the result's compact JSON, for the response; nil when
	// it was not encoded ahead.
	resultJSON   []byte
	artifacts    Artifacts
	resultSHA256 string
	// files are the run's files, in the order written.
	files []RunFile
}

// analyze computes the result over sources whose digest must equal
// expectedDigest and commits it, with its receipt and checksums (and its
// attestation when a signing key is given), as the run directory
// O/runID: all files or nothing, never over existing evidence. With
// encodeCompact, the result's compact JSON is encoded for the response
// while the commit waits on its fsyncs. With a ledger, hold receives the
// ledger's lock, taken before the commit and kept for the call's record.
func (s *Service) analyze(ctx context.Context, runID, expectedDigest string, encodeCompact bool, hold *ledgerHold) (committedRun, *Error) {
	if e := s.checkCancel(ctx, "before work"); e != nil {
		return committedRun{}, e
	}
	out, e := s.outputLocation(true)
	if e != nil {
		return committedRun{}, e
	}
	snap, err := s.readSources()
	if err != nil {
		return committedRun{}, classify(readingSource, fileOf(err), err)
	}
	_, result, err := s.compute(snap)
	if err != nil {
		return committedRun{}, classify(readingSource, "", err)
	}
	if snap.digest() != expectedDigest {
		return committedRun{}, classify(comparingDigest, "", found("the sources' digest is not the expected one; run inspect_inputs again and pass the digest it returns"))
	}
	files, resultSum, e := s.encodeRun(runID, snap, result)
	if e != nil {
		return committedRun{}, e
	}
	if e := s.checkCancel(ctx, "before writes"); e != nil {
		return committedRun{}, e
	}
	// The response's copy of the result is encoded while the commit waits
	// on its fsyncs.
	compact := make(chan []byte, 1)
	if !encodeCompact {
		compact <- nil
	} else {
		go func() {
			defer func() {
				if recover() != nil {
					compact <- nil // the answer encodes it again, and meets the panic there
				}
			}()
			w := jsonOut{} // sized by the encoder
			w.result(&result)
			compact <- w.b
		}()
	}
	if e := s.commit(ctx, out.Rel, runID, snap.digest(), files, hold); e != nil {
		return committedRun{}, e
	}
	dir := path.Join(out.Rel, runID)
	run := committedRun{id: runID, result: result, resultJSON: <-compact, resultSHA256: resultSum, artifacts: Artifacts{
		Result:    path.Join(dir, ResultFile),
		Receipt:   path.Join(dir, ReceiptFile),
		Checksums: path.Join(dir, ChecksumsFile),
	}}
	if s.signingKey != nil {
		run.artifacts.Attestation = path.Join(dir, AttestationFile)
	}
	for _, f := range files {
		run.files = append(run.files, RunFile{RunID: runID, Name: f.Name, Size: len(f.Data)})
	}
	return run, nil
}

// encodeRun encodes the files of a run, in the order they are written:
// result.json, receipt.json, checksums.json, and attestation.json when a
// signing key is given; and the SHA256 of result.json, taken once.
func (s *Service) encodeRun(runID string, snap snapshot, result domain.Result) ([]ports.File, string, *Error) {
	// result.json first: it does not need the engine, whose hash may still
	// be running on another core.
	resultBytes, resultSum := s.savedResult(snap, &result, resultSizeHint(&result, true))
	engine, err := s.p.Engine.Identity()
	if err != nil {
		return nil, "", classify(identifyingEngine, "", err)
	}
	receipt := newReceipt(runID, snap, engine, resultSum, s.p.Clock.Now())
	if s.signingKey != nil {
		if receipt.Signer, err = signerOf(s.signingKey); err != nil {
			return nil, "", classify(encodingRun, "receipt", err)
		}
	}
	receiptBytes, err := encodeSaved(receipt)
	if err != nil {
		return nil, "", classify(encodingRun, "receipt", err)
	}
	receiptSum := domain.SHA256Hex(receiptBytes)
	checksumBytes, err := encodeSaved(Checksums{Receipt: receiptSum, Result: resultSum})
	if err != nil {
		return nil, "", classify(encodingRun, "checksums", err)
	}
	files := []ports.File{
		{Name: ResultFile, Data: resultBytes},
		{Name: ReceiptFile, Data: receiptBytes},
		{Name: ChecksumsFile, Data: checksumBytes},
	}
	if s.signingKey != nil {
		attestation, err := attestRun(s.signingKey, receiptBytes, receiptSum, resultSum)
		if err != nil {
			return nil, "", classify(encodingRun, "attestation", err)
		}
		files = append(files, ports.File{Name: AttestationFile, Data: attestation})
	}
	return files, resultSum, nil
}

// commit writes the run under the writer lock: collision check, staged and
// synced files, sources and cancel marker re-checked, then the no-replace
// rename. Whatever fails, the writer's Close removes what it staged. One
// commit of this service runs at a time: the caller holds the commit turn
// (taken in run, before analyze reads anything), since the writer lock
// excludes other processes, and would refuse another call of this one as
// OUTPUT_BUSY.
//
// With a ledger, the ledger's lock is taken once the run is staged, and
// the last checks, the ledger's last record, the rename and then the
// call's record are made under it (protocol §11): a lock not had within the
// wait, or a ledger found damaged there, commits nothing, so no wait ever
// leaves a committed run without its record.
func (s *Service) commit(ctx context.Context, dir, runID, digest string, files []ports.File, hold *ledgerHold) (e *Error) {
	runPath := path.Join(dir, runID)
	w, err := s.p.Evidence.OpenWriter(dir)
	if err != nil {
		return classify(writingRun, dir, err)
	}
	defer func() {
		// After a commit the run stands whatever Close says; before one, a
		// failed cleanup may have left this call's pending directory.
		if err := w.Close(); err != nil && e != nil {
			e = fail(e.Code, "%s; cleaning up failed too, so a pending directory of this call may remain in %s", e.Message, dir)
		}
	}()
	if runPath == s.ledger {
		// protocol §11 lets the ledger lie in O itself, where its name may be a
		// run ID: that run would take the ledger's place.
		return classify(writingRun, runPath, found("%s is the call ledger's path, kept for it even before its first record: use a new run ID", runPath))
	}
	exists, err := w.Exists(runID)
	if err != nil {
		return classify(writingRun, runPath, err)
	}
	if exists {
		return classify(writingRun, runPath, ports.ErrExists)
	}
	if err := w.Stage(files); err != nil {
		return classify(writingRun, dir, err)
	}
	if s.ledger != "" {
		if e := s.holdLedger(ctx, hold); e != nil {
			return e
		}
	}
	again, err := s.readSources()
	if err != nil {
		return classify(rereadingSource, fileOf(err), err)
	}
	if again.digest() != digest {
		return classify(rereadingSource, "", found("the sources changed while the run was being written; nothing was committed: inspect again"))
	}
	if e := s.checkCancel(ctx, "before the commit"); e != nil {
		return e
	}
	if s.ledger != "" {
		if e := s.recheckLedger(hold); e != nil {
			return e
		}
	}
	if err := w.Commit(runID); err != nil {
		return classify(writingRun, runPath, err)
	}
	return nil
}
