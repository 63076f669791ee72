package app

import (
	"bytes"
	"context"
	"errors"

	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/app/remedy"
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

// check is one step of verification: a name for the success record and
// a function that either passes or returns the fault it found, with its
// code. A check with applies runs only when applies says so, and is
// listed only when it ran.
type check struct {
	name    string
	run     func(*audit) error
	applies func(*audit) bool
}

// Checks returns the names of verify_result's checks in the order they run
// (protocol §6.3, §10.4); the first that fails is the answer. signature_valid
// runs only for a signed run or under --trusted-key.
func Checks() []string {
	var names []string
	for _, c := range checks() {
		names = append(names, c.name)
	}
	return names
}

// checks is the declared order of verification, walked by audit.
func checks() []check {
	return []check{
		{name: "run_present", run: (*audit).present},
		{name: "saved_files_valid", run: (*audit).shapes},
		{name: "receipt_bound", run: (*audit).receiptBound},
		{name: "result_bound", run: (*audit).resultBound},
		{name: "signature_valid", run: (*audit).signatureValid, applies: (*audit).signed},
		{name: "sources_unchanged", run: (*audit).sourcesUnchanged},
		{name: "engine_unchanged", run: (*audit).engineUnchanged},
		{name: "result_recomputed", run: (*audit).recomputed},
	}
}

// audit carries what the checks learn, each building on the ones before.
type audit struct {
	s     *Service
	runID string
	run   ports.SavedRun
	// Filled by shapes. attestation is nil when the run has none.
	result, receipt, checksums, attestation []byte
	parsedReceipt                           evidence.Receipt
	parsedResult                            domain.Result
	parsedChecksums                         evidence.Checksums
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
	if a.snap, a.readErr = a.s.sources.read(); a.readErr != nil {
		return
	}
	if _, a.fresh, a.computeErr = a.s.sources.compute(a.snap); a.computeErr != nil {
		return
	}
	a.freshBytes, a.freshSum = a.s.sources.savedResult(a.snap, &a.fresh, len(a.result))
}

// Verify is verify_result: it re-reads the run O/runID,
// checks every byte and binding against the current sources and engine,
// recomputes the result, and names the first fault. It writes nothing.
// The run file is the run's result.json, which the answer is about.
func (s *Service) Verify(ctx context.Context, runID string) (VerifyResult, evidence.RunFile, error) {
	if err := s.needsOutputDir(protocol.ToolVerify); err != nil {
		return VerifyResult{}, evidence.RunFile{}, err
	}
	s.warmEngine()
	a, done, _, err := s.audit(ctx, runID)
	if err != nil {
		return VerifyResult{}, evidence.RunFile{}, err
	}
	return VerifyResult{
		RunID:           runID,
		Integrity:       "verified",
		SourceDigest:    a.parsedReceipt.SourceDigest,
		ReleaseEligible: a.parsedResult.Release.Eligible,
		HumanApproval:   domain.HumanApprovalNone,
		Checks:          done,
	}, evidence.RunFile{RunID: runID, Name: ports.ResultFile, Size: len(a.result)}, nil
}

// audit runs verify's checks on O/runID in their declared order and
// stops at the first that fails. done lists the checks passed; failed
// names the check that failed ("" when the fault came before any check:
// a cancellation, the output directory's place). a is nil when no check
// ran. verify_result and the reviewer's page both run it.
func (s *Service) audit(ctx context.Context, runID string) (a *audit, done []string, failed string, _ error) {
	if err := s.checkCancel(ctx, "before work"); err != nil {
		return nil, nil, "", err
	}
	out, err := s.places.ResolveOutput(false)
	if err != nil {
		return nil, nil, "", err
	}
	a = &audit{s: s, runID: runID}
	if out.Exists {
		var rerr error
		a.run, rerr = s.p.Evidence.ReadRun(out.Rel, runID, ports.RunFileNames(), evidence.MaxSavedBytes)
		if rerr != nil {
			return a, nil, checks()[0].name, runFault(runID, "", rerr)
		}
	}
	for _, c := range checks() {
		if c.applies != nil && !c.applies(a) {
			continue
		}
		if err := c.run(a); err != nil {
			return a, done, c.name, err
		}
		done = append(done, c.name)
	}
	return a, done, "", nil
}

// present: the run exists and none of its three files is missing.
func (a *audit) present() error {
	if !a.run.Exists {
		return protocol.Errorf(protocol.MissingResult, "there is no run %s in the output directory: check the run ID "+
			"(the request_id of the analyze that committed the run; each run is a directory of the output directory named by it)", a.runID)
	}
	for _, f := range a.run.Files {
		if f.Name != ports.AttestationFile && errors.Is(f.Err, ports.ErrMissing) {
			return protocol.Errorf(protocol.MissingResult, "run %s has no %s", a.runID, f.Name)
		}
	}
	return nil
}

// shapes: the run is a directory of exactly its files, each a regular
// file within the limit holding strict JSON of its shape. The
// attestation's own shape is the signature check's to judge.
func (a *audit) shapes() error {
	invalid := func(format string, args ...any) error {
		return protocol.Errorf(protocol.InvalidSavedResult, format, args...)
	}
	if !a.run.Dir {
		return invalid("run %s is not a directory", a.runID)
	}
	data := map[string][]byte{}
	for _, f := range a.run.Files {
		switch {
		case f.Err == nil:
			data[f.Name] = f.Data
		case f.Name == ports.AttestationFile && errors.Is(f.Err, ports.ErrMissing):
		case errors.Is(f.Err, ports.ErrNotRegular):
			return invalid("%s of run %s is not a regular file", f.Name, a.runID)
		case errors.Is(f.Err, ports.ErrTooLarge):
			return invalid("%s of run %s is larger than %d bytes", f.Name, a.runID, evidence.MaxSavedBytes)
		default:
			return runFault(a.runID, f.Name, f.Err)
		}
	}
	if a.run.Extra {
		// Worded as before signing existed for a run without an
		// attestation, so unsigned runs answer byte for byte as they did.
		if data[ports.AttestationFile] == nil {
			return invalid("run %s holds an entry analyze never writes; a run is exactly %s, %s and %s", a.runID, ports.ResultFile, ports.ReceiptFile, ports.ChecksumsFile)
		}
		return invalid("run %s holds an entry analyze never writes; a signed run is exactly %s, %s, %s and %s", a.runID, ports.ResultFile, ports.ReceiptFile, ports.ChecksumsFile, ports.AttestationFile)
	}
	a.result, a.receipt, a.checksums, a.attestation = data[ports.ResultFile], data[ports.ReceiptFile], data[ports.ChecksumsFile], data[ports.AttestationFile]
	a.recompute()
	a.resultIsFresh = a.freshBytes != nil && bytes.Equal(a.freshBytes, a.result)
	switch {
	case a.resultIsFresh:
		a.parsedResult = a.fresh // this engine's own encoding: strict JSON of the shape
	case !evidence.DecodeShape(a.result, &a.parsedResult):
		return invalid("%s of run %s is not strict JSON of a result's shape", ports.ResultFile, a.runID)
	}
	switch {
	case !evidence.DecodeShape(a.receipt, &a.parsedReceipt) || !evidence.ValidReceipt(a.parsedReceipt):
		return invalid("%s of run %s is not strict JSON of a receipt's shape", ports.ReceiptFile, a.runID)
	case !evidence.DecodeShape(a.checksums, &a.parsedChecksums) || !protocol.IsDigest(a.parsedChecksums.Receipt) || !protocol.IsDigest(a.parsedChecksums.Result):
		return invalid("%s of run %s is not strict JSON of a checksum map's shape", ports.ChecksumsFile, a.runID)
	}
	return nil
}

// receiptBound: the receipt's bytes match the checksum map, and its fields
// agree with the run and with themselves.
func (a *audit) receiptBound() error {
	tampered := func(format string, args ...any) error {
		return protocol.Errorf(protocol.ReceiptTampered, format, args...)
	}
	r := a.parsedReceipt
	switch {
	case domain.SHA256Hex(a.receipt) != a.parsedChecksums.Receipt:
		return tampered("the bytes of %s differ from %s", ports.ReceiptFile, ports.ChecksumsFile)
	case r.RunID != a.runID:
		return tampered("%s names another run ID", ports.ReceiptFile)
	case r.ProtocolVersion != protocol.Version:
		return tampered("%s names another protocol version", ports.ReceiptFile)
	case r.DefinitionID != domain.DefinitionID:
		return tampered("%s names another definition", ports.ReceiptFile)
	case domain.SourceHashes(r.Sources).Digest() != r.SourceDigest:
		return tampered("the source digest in %s does not match its own source hashes", ports.ReceiptFile)
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
	tampered := func(format string, args ...any) error {
		return protocol.Errorf(protocol.ResultTampered, format, args...)
	}
	switch {
	case sum != a.parsedChecksums.Result:
		return tampered("the bytes of %s differ from %s", ports.ResultFile, ports.ChecksumsFile)
	case sum != a.parsedReceipt.ResultSHA256:
		return tampered("the bytes of %s differ from the receipt's result_sha256", ports.ResultFile)
	case a.parsedResult.SourceDigest != a.parsedReceipt.SourceDigest:
		return tampered("%s names other sources than its receipt", ports.ResultFile)
	case a.parsedResult.DefinitionID != a.parsedReceipt.DefinitionID:
		return tampered("%s names another definition than its receipt", ports.ResultFile)
	}
	return nil
}

// signatureValid: the run is signed by the receipt's signer, or by the
// trusted key (evidence.CheckSignature).
func (a *audit) signatureValid() error {
	return evidence.CheckSignature(a.runID, a.parsedReceipt.Signer, a.receipt, a.result, a.attestation, a.s.trustedKey)
}

// signed reports whether signature_valid applies: the receipt
// names a signer, the run holds an attestation, or a trusted key is given.
func (a *audit) signed() bool {
	return a.parsedReceipt.Signer != nil || a.attestation != nil || a.s.trustedKey != nil
}

// sourcesUnchanged: the current source bytes are the ones the receipt holds.
func (a *audit) sourcesUnchanged() error {
	a.recompute()
	if err := a.readErr; err != nil {
		e := sourceFault(fileOf(err), err)
		if errors.Is(err, ports.ErrMissing) || errors.Is(err, ports.ErrNotRegular) || errors.Is(err, ports.ErrTooLarge) {
			return protocol.Errorf(protocol.StaleSources, "the sources changed since run %s: %s", a.runID, e.Message)
		}
		return e
	}
	for _, name := range domain.SourceNames() {
		if a.snap.hashes()[name] != a.parsedReceipt.Sources[name] {
			return protocol.Errorf(protocol.StaleSources, "%s changed since run %s", name, a.runID)
		}
	}
	return nil
}

// engineUnchanged: the running engine is the one that made the run.
func (a *audit) engineUnchanged() error {
	id, err := a.s.p.Engine.Identity()
	if err != nil {
		return engineFault()
	}
	if id.SHA256 != a.parsedReceipt.EngineSHA256 {
		return protocol.Errorf(protocol.EngineChanged, "the running engine is not the one that made run %s, so it cannot vouch for it: "+
			"verify the run with the engine that made it (the executable whose SHA256 is the receipt's engine_sha256), "+
			"or rebuild that engine from the receipt with docs/rebuild.sh, which verifies the run with it (docs/engine.md)", a.runID)
	}
	return nil
}

// recomputed: a fresh computation over the same bytes gives result.json
// byte for byte. result.json is canonical by construction (one encoder,
// one layout), so bytes are compared: any difference, even of layout,
// means this engine did not write it from these sources.
func (a *audit) recomputed() error {
	a.recompute()
	if err := a.computeErr; err != nil {
		if domainFault(err) == nil {
			return protocol.Errorf(protocol.InternalError, "the recomputed result could not be encoded")
		}
		// The receipt's own source bytes, refused by the engine that made
		// the run, which would have refused them too: the run is forged.
		return protocol.Errorf(protocol.ResultTampered, "run %s is bound to sources this engine refuses (%s)", a.runID, sourceFault(fileOf(err), err).Message)
	}
	if !a.resultIsFresh && !bytes.Equal(a.freshBytes, a.result) {
		return protocol.Errorf(protocol.ResultTampered, "a fresh computation over the same sources differs from %s", ports.ResultFile)
	}
	return nil
}

// runFault is a run, or its file name (when not empty), that could not be
// read.
func runFault(runID, name string, err error) *protocol.Error {
	switch {
	case errors.Is(err, ports.ErrOutside):
		return protocol.Errorf(protocol.PathBoundary, "the run resolves outside the workspace")
	case errors.Is(err, ports.ErrNoBucket):
		return remedy.NoBucket("the output directory")
	case name != "":
		return remedy.RetryableIf(err, protocol.Errorf(protocol.IOOrNumericError, "%s of run %s could not be read%s", name, runID, remedy.Because(err)))
	}
	return remedy.RetryableIf(err, protocol.Errorf(protocol.IOOrNumericError, "the run %s could not be read%s", runID, remedy.Because(err)))
}
