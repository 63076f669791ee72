package app

import (
	"bytes"
	"errors"

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

// check is one step of verification: a name for the success record and a
// function that either passes or names the fault.
type check struct {
	name string
	run  func(*audit) *Error
}

// Checks returns the names of verify_result's checks in the order they run
// (SPEC §6); the first that fails is the answer.
func Checks() []string {
	var names []string
	for _, c := range checks() {
		names = append(names, c.name)
	}
	return names
}

// checks is the declared order of verification, walked by Verify.
func checks() []check {
	return []check{
		{"run_present", (*audit).present},
		{"saved_files_valid", (*audit).shapes},
		{"receipt_bound", (*audit).receiptBound},
		{"result_bound", (*audit).resultBound},
		{"sources_unchanged", (*audit).sourcesUnchanged},
		{"engine_unchanged", (*audit).engineUnchanged},
		{"result_recomputed", (*audit).recomputed},
	}
}

// audit carries what the checks learn, each building on the ones before.
type audit struct {
	s     *service
	runID string
	run   ports.SavedRun
	// Filled by shapes.
	result, receipt, checksums []byte
	parsedReceipt              Receipt
	parsedResult               domain.Result
	parsedChecksums            Checksums
	// Filled by sourcesUnchanged.
	snap snapshot
}

// Verify re-reads the run O/runID, checks every byte and binding against the
// current sources and engine, recomputes the result, and names the first
// fault. It writes nothing.
func (s *service) Verify(runID string) (VerifyResult, *Error) {
	if e := s.checkCancel("before work"); e != nil {
		return VerifyResult{}, e
	}
	out, e := s.outputLocation(false)
	if e != nil {
		return VerifyResult{}, e
	}
	a := &audit{s: s, runID: runID}
	if out.Exists {
		var err error
		a.run, err = s.p.Evidence.ReadRun(out.Rel, runID, runFiles(), MaxSavedBytes)
		if err != nil {
			return VerifyResult{}, classify(readingRun, runID, err)
		}
	}
	var done []string
	for _, c := range checks() {
		if e := c.run(a); e != nil {
			return VerifyResult{}, e
		}
		done = append(done, c.name)
	}
	return VerifyResult{
		RunID:           runID,
		Integrity:       "verified",
		SourceDigest:    a.parsedReceipt.SourceDigest,
		ReleaseEligible: a.parsedResult.Release.Eligible,
		HumanApproval:   domain.HumanApprovalNone,
		Checks:          done,
	}, nil
}

// present: the run exists and none of its three files is missing.
func (a *audit) present() *Error {
	if !a.run.Exists {
		return fail(MissingResult, "there is no run %s in the output directory", a.runID)
	}
	for _, f := range a.run.Files {
		if errors.Is(f.Err, ports.ErrMissing) {
			return fail(MissingResult, "run %s has no %s", a.runID, f.Name)
		}
	}
	return nil
}

// shapes: the run is a directory of exactly the three files, each a regular
// file within the limit holding strict JSON of its shape.
func (a *audit) shapes() *Error {
	if !a.run.Dir {
		return fail(InvalidSavedResult, "run %s is not a directory", a.runID)
	}
	data := map[string][]byte{}
	for _, f := range a.run.Files {
		switch {
		case f.Err == nil:
			data[f.Name] = f.Data
		case errors.Is(f.Err, ports.ErrNotRegular):
			return fail(InvalidSavedResult, "%s of run %s is not a regular file", f.Name, a.runID)
		case errors.Is(f.Err, ports.ErrTooLarge):
			return fail(InvalidSavedResult, "%s of run %s is larger than %d bytes", f.Name, a.runID, MaxSavedBytes)
		default:
			return classify(readingRun, a.runID, f.Err)
		}
	}
	if a.run.Extra {
		return fail(InvalidSavedResult, "run %s holds an entry analyze never writes; a run is exactly %s, %s and %s", a.runID, ResultFile, ReceiptFile, ChecksumsFile)
	}
	a.result, a.receipt, a.checksums = data[ResultFile], data[ReceiptFile], data[ChecksumsFile]
	switch {
	case !decodeShape(a.result, &a.parsedResult):
		return fail(InvalidSavedResult, "%s of run %s is not strict JSON of a result's shape", ResultFile, a.runID)
	case !decodeShape(a.receipt, &a.parsedReceipt) || !validReceipt(a.parsedReceipt):
		return fail(InvalidSavedResult, "%s of run %s is not strict JSON of a receipt's shape", ReceiptFile, a.runID)
	case !decodeShape(a.checksums, &a.parsedChecksums) || !isDigest(a.parsedChecksums.Receipt) || !isDigest(a.parsedChecksums.Result):
		return fail(InvalidSavedResult, "%s of run %s is not strict JSON of a checksum map's shape", ChecksumsFile, a.runID)
	}
	return nil
}

// receiptBound: the receipt's bytes match the checksum map, and its fields
// agree with the run and with themselves.
func (a *audit) receiptBound() *Error {
	r := a.parsedReceipt
	switch {
	case domain.SHA256Hex(a.receipt) != a.parsedChecksums.Receipt:
		return fail(ReceiptTampered, "the bytes of %s differ from %s", ReceiptFile, ChecksumsFile)
	case r.RunID != a.runID:
		return fail(ReceiptTampered, "%s names another run ID", ReceiptFile)
	case r.ProtocolVersion != ProtocolVersion:
		return fail(ReceiptTampered, "%s names another protocol version", ReceiptFile)
	case r.DefinitionID != domain.DefinitionID:
		return fail(ReceiptTampered, "%s names another definition", ReceiptFile)
	case domain.SourceHashes(r.Sources).Digest() != r.SourceDigest:
		return fail(ReceiptTampered, "the source digest in %s does not match its own source hashes", ReceiptFile)
	}
	return nil
}

// resultBound: the result's bytes match the checksum map and the receipt,
// and it names the receipt's sources and definition.
func (a *audit) resultBound() *Error {
	sum := domain.SHA256Hex(a.result)
	switch {
	case sum != a.parsedChecksums.Result:
		return fail(ResultTampered, "the bytes of %s differ from %s", ResultFile, ChecksumsFile)
	case sum != a.parsedReceipt.ResultSHA256:
		return fail(ResultTampered, "the bytes of %s differ from the receipt's result_sha256", ResultFile)
	case a.parsedResult.SourceDigest != a.parsedReceipt.SourceDigest:
		return fail(ResultTampered, "%s names other sources than its receipt", ResultFile)
	case a.parsedResult.DefinitionID != a.parsedReceipt.DefinitionID:
		return fail(ResultTampered, "%s names another definition than its receipt", ResultFile)
	}
	return nil
}

// sourcesUnchanged: the current source bytes are the ones the receipt holds.
func (a *audit) sourcesUnchanged() *Error {
	snap, e := a.s.readSources(rereadingSource)
	if e != nil {
		if e.Code == MissingInput || e.Code == InputLimit {
			return fail(StaleSources, "the sources changed since run %s: %s", a.runID, e.Message)
		}
		return e
	}
	for _, name := range domain.SourceNames() {
		if snap.hashes[name] != a.parsedReceipt.Sources[name] {
			return fail(StaleSources, "%s changed since run %s", name, a.runID)
		}
	}
	a.snap = snap
	return nil
}

// engineUnchanged: the running engine is the one that made the run.
func (a *audit) engineUnchanged() *Error {
	id, err := a.s.p.Engine.Identity()
	if err != nil {
		return classify(identifyingEngine, "", err)
	}
	if id.SHA256 != a.parsedReceipt.EngineSHA256 {
		return fail(EngineChanged, "the running engine is not the one that made run %s", a.runID)
	}
	return nil
}

// recomputed: a fresh computation over the same bytes gives result.json
// byte for byte. result.json is canonical by construction (one encoder,
// one layout), so bytes are compared: any difference, even of layout,
// means this engine did not write it from these sources.
func (a *audit) recomputed() *Error {
	_, fresh, e := compute(a.snap)
	if e != nil {
		// These are the receipt's own source bytes and the engine that made
		// the run, which would have refused them: the run is forged.
		return fail(ResultTampered, "run %s is bound to sources this engine refuses (%s)", a.runID, e.Message)
	}
	freshBytes, err := saved(fresh)
	if err != nil {
		return fail(InternalError, "the recomputed result could not be encoded")
	}
	if !bytes.Equal(freshBytes, a.result) {
		return fail(ResultTampered, "a fresh computation over the same sources differs from %s", ResultFile)
	}
	return nil
}
