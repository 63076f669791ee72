package app

import (
	"bytes"
	"context"
	"errors"

	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// VerifyResult is verify_result's result.
type VerifyResult struct {
	RunID           string   `json:"run_id"`
	Integrity       string   `json:"integrity"`
	SourceDigest    string   `json:"source_digest"`
	ReleaseEligible bool     `json:"release_eligible"`
	HumanApproval   string   `json:"human_approval"`
	Checks          []string `json:"checks"`
}

// check is one step of verification: a name for the success record, the
// step whose row of [classify] gives its fault a code, and a function that
// either passes or says what it found. A check with applies runs only when
// applies says so, and is listed only when it ran.
type check struct {
	name    string
	step    step
	run     func(*audit) error
	applies func(*audit) bool
}

// Checks returns the names of verify_result's checks in the order they run
// (protocol §6, §10); the first that fails is the answer. signature_valid runs
// only for a signed run or under --trusted-key.
func Checks() []string {
	var names []string
	for _, c := range checks() {
		names = append(names, c.name)
	}
	return names
}

// checks is the declared order of verification, walked by verify.
func checks() []check {
	return []check{
		{name: "run_present", step: checkingPresence, run: (*audit).present},
		{name: "saved_files_valid", step: checkingShapes, run: (*audit).shapes},
		{name: "receipt_bound", step: bindingReceipt, run: (*audit).receiptBound},
		{name: "result_bound", step: bindingResult, run: (*audit).resultBound},
		{name: "signature_valid", step: checkingSignature, run: (*audit).signatureValid, applies: (*audit).signed},
		{name: "sources_unchanged", step: checkingSources, run: (*audit).sourcesUnchanged},
		{name: "engine_unchanged", step: checkingEngine, run: (*audit).engineUnchanged},
		{name: "result_recomputed", step: recomputing, run: (*audit).recomputed},
	}
}

// audit carries what the checks learn, each building on the ones before.
type audit struct {
	s     *Service
	runID string
	run   ports.SavedRun
	// Filled by shapes. attestation is nil when the run has none.
	result, receipt, checksums, attestation []byte
	parsedReceipt                           Receipt
	parsedResult                            domain.Result
	parsedChecksums                         Checksums
	// Filled by recompute, at the first check that needs it: the current
	// sources read once (or why they could not be), their result, and its
	// bytes in the saved layout (or the domain's refusal).
	recomputedOnce bool
	snap           snapshot
	readErr        error
	fresh          domain.Result
	freshBytes     []byte
	computeErr     error
	// freshSum is the SHA256 of freshBytes; resultIsFresh reports that
	// result.json is byte for byte freshBytes, so freshSum is its SHA256
	// too. Filled by shapes.
	freshSum      string
	resultIsFresh bool
}

// recompute reads the current sources and computes their result, once.
// It is a check's preparation, not a check: what it finds is reported by
// the checks in their declared order (the sources' faults at
// sources_unchanged, the domain's at result_recomputed). shapes uses it
// first: result.json that is byte for byte the fresh result is that
// result, and needs no slower shape check.
func (a *audit) recompute() {
	if a.recomputedOnce {
		return
	}
	a.recomputedOnce = true
	if a.snap, a.readErr = a.s.readSources(); a.readErr != nil {
		return
	}
	if _, a.fresh, a.computeErr = a.s.compute(a.snap); a.computeErr != nil {
		return
	}
	a.freshBytes, a.freshSum = a.s.savedResult(a.snap, &a.fresh, len(a.result))
}

// verify re-reads the run O/runID, checks every byte and binding against
// the current sources and engine, recomputes the result, and names the
// first fault. It writes nothing. resultSize is the length of the run's
// result.json.
func (s *Service) verify(ctx context.Context, runID string) (_ VerifyResult, resultSize int, _ *Error) {
	a, done, _, e := s.audit(ctx, runID)
	if e != nil {
		return VerifyResult{}, 0, e
	}
	return VerifyResult{
		RunID:           runID,
		Integrity:       "verified",
		SourceDigest:    a.parsedReceipt.SourceDigest,
		ReleaseEligible: a.parsedResult.Release.Eligible,
		HumanApproval:   domain.HumanApprovalNone,
		Checks:          done,
	}, len(a.result), nil
}

// audit runs verify's checks on O/runID in their declared order and
// stops at the first that fails. done lists the checks passed; failed
// names the check that failed ("" when the fault came before any check:
// a cancellation, the output directory's place). a is nil when no check
// ran. verify_result and the reviewer's page both run it.
func (s *Service) audit(ctx context.Context, runID string) (a *audit, done []string, failed string, _ *Error) {
	if e := s.checkCancel(ctx, "before work"); e != nil {
		return nil, nil, "", e
	}
	out, e := s.outputLocation(false)
	if e != nil {
		return nil, nil, "", e
	}
	a = &audit{s: s, runID: runID}
	if out.Exists {
		var err error
		a.run, err = s.p.Evidence.ReadRun(out.Rel, runID, savedFiles(), MaxSavedBytes)
		if err != nil {
			return a, nil, checks()[0].name, classify(readingRun, runID, err)
		}
	}
	for _, c := range checks() {
		if c.applies != nil && !c.applies(a) {
			continue
		}
		if err := c.run(a); err != nil {
			return a, done, c.name, classify(c.step, runID, err)
		}
		done = append(done, c.name)
	}
	return a, done, "", nil
}

// present: the run exists and none of its three files is missing.
func (a *audit) present() error {
	if !a.run.Exists {
		return found("there is no run %s in the output directory", a.runID)
	}
	for _, f := range a.run.Files {
		if f.Name != AttestationFile && errors.Is(f.Err, ports.ErrMissing) {
			return about(f.Name, f.Err)
		}
	}
	return nil
}

// shapes: the run is a directory of exactly its files, each a regular
// file within the limit holding strict JSON of its shape. The
// attestation's own shape is the signature check's to judge.
func (a *audit) shapes() error {
	if !a.run.Dir {
		return found("run %s is not a directory", a.runID)
	}
	data := map[string][]byte{}
	for _, f := range a.run.Files {
		switch {
		case f.Err == nil:
			data[f.Name] = f.Data
		case f.Name == AttestationFile && errors.Is(f.Err, ports.ErrMissing):
		default:
			return about(f.Name, f.Err)
		}
	}
	if a.run.Extra {
		// Worded as before signing existed for a run without an
		// attestation, so unsigned runs answer byte for byte as they did.
		if data[AttestationFile] == nil {
			return found("run %s holds an entry analyze never writes; a run is exactly %s, %s and %s", a.runID, ResultFile, ReceiptFile, ChecksumsFile)
		}
		return found("run %s holds an entry analyze never writes; a signed run is exactly %s, %s, %s and %s", a.runID, ResultFile, ReceiptFile, ChecksumsFile, AttestationFile)
	}
	a.result, a.receipt, a.checksums, a.attestation = data[ResultFile], data[ReceiptFile], data[ChecksumsFile], data[AttestationFile]
	a.recompute()
	a.resultIsFresh = a.freshBytes != nil && bytes.Equal(a.freshBytes, a.result)
	switch {
	case a.resultIsFresh:
		a.parsedResult = a.fresh // this engine's own encoding: strict JSON of the shape
	case !decodeShape(a.result, &a.parsedResult):
		return found("%s of run %s is not strict JSON of a result's shape", ResultFile, a.runID)
	}
	switch {
	case !decodeShape(a.receipt, &a.parsedReceipt) || !validReceipt(a.parsedReceipt):
		return found("%s of run %s is not strict JSON of a receipt's shape", ReceiptFile, a.runID)
	case !decodeShape(a.checksums, &a.parsedChecksums) || !protocol.IsDigest(a.parsedChecksums.Receipt) || !protocol.IsDigest(a.parsedChecksums.Result):
		return found("%s of run %s is not strict JSON of a checksum map's shape", ChecksumsFile, a.runID)
	}
	return nil
}

// receiptBound: the receipt's bytes match the checksum map, and its fields
// agree with the run and with themselves.
func (a *audit) receiptBound() error {
	r := a.parsedReceipt
	switch {
	case domain.SHA256Hex(a.receipt) != a.parsedChecksums.Receipt:
		return found("the bytes of %s differ from %s", ReceiptFile, ChecksumsFile)
	case r.RunID != a.runID:
		return found("%s names another run ID", ReceiptFile)
	case r.ProtocolVersion != ProtocolVersion:
		return found("%s names another protocol version", ReceiptFile)
	case r.DefinitionID != domain.DefinitionID:
		return found("%s names another definition", ReceiptFile)
	case domain.SourceHashes(r.Sources).Digest() != r.SourceDigest:
		return found("the source digest in %s does not match its own source hashes", ReceiptFile)
	}
	return nil
}

// resultBound: the result's bytes match the checksum map and the receipt,
// and it names the receipt's sources and definition.
func (a *audit) resultBound() error {
	sum := a.freshSum // the same bytes, already hashed
	if !a.resultIsFresh {
		sum = domain.SHA256Hex(a.result)
	}
	switch {
	case sum != a.parsedChecksums.Result:
		return found("the bytes of %s differ from %s", ResultFile, ChecksumsFile)
	case sum != a.parsedReceipt.ResultSHA256:
		return found("the bytes of %s differ from the receipt's result_sha256", ResultFile)
	case a.parsedResult.SourceDigest != a.parsedReceipt.SourceDigest:
		return found("%s names other sources than its receipt", ResultFile)
	case a.parsedResult.DefinitionID != a.parsedReceipt.DefinitionID:
		return found("%s names another definition than its receipt", ResultFile)
	}
	return nil
}

// signed reports whether signature_valid applies (protocol §10): the receipt
// names a signer, the run holds an attestation, or a trusted key is given.
func (a *audit) signed() bool {
	return a.parsedReceipt.Signer != nil || a.attestation != nil || a.s.trustedKey != nil
}

// sourcesUnchanged: the current source bytes are the ones the receipt holds.
func (a *audit) sourcesUnchanged() error {
	a.recompute()
	if a.readErr != nil {
		return a.readErr
	}
	for _, name := range domain.SourceNames() {
		if a.snap.hashes()[name] != a.parsedReceipt.Sources[name] {
			return found("%s changed since run %s", name, a.runID)
		}
	}
	return nil
}

// engineUnchanged: the running engine is the one that made the run.
func (a *audit) engineUnchanged() error {
	id, err := a.s.p.Engine.Identity()
	if err != nil {
		return err
	}
	if id.SHA256 != a.parsedReceipt.EngineSHA256 {
		return found("the running engine is not the one that made run %s", a.runID)
	}
	return nil
}

// recomputed: a fresh computation over the same bytes gives result.json
// byte for byte. result.json is canonical by construction (one encoder,
// one layout), so bytes are compared: any difference, even of layout,
// means this engine did not write it from these sources.
func (a *audit) recomputed() error {
	a.recompute()
	if a.computeErr != nil {
		return a.computeErr
	}
	if !a.resultIsFresh && !bytes.Equal(a.freshBytes, a.result) {
		return found("a fresh computation over the same sources differs from %s", ResultFile)
	}
	return nil
}
