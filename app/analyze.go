package app

import (
	"path"
	"strings"

	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// protectedFolders are the workspace folders the output directory may not
// equal, contain or sit inside: the sources, the repository and the
// engine's own code.
func protectedFolders() []string {
	return []string{"data", "contracts", ".git", "domain", "ports", "adapters", "app", "cmd", "src"}
}

// within reports whether the clean relative path p is base or inside it,
// comparing whole components.
func within(p, base string) bool {
	return base == "." || p == base || len(p) > len(base) && p[:len(base)] == base && p[len(base)] == '/'
}

// outputLocation resolves the operator's output directory, which must lie
// inside the workspace (SPEC §1) whichever tool runs. For analyze, write
// applies the write boundary of SPEC §6 too: not the workspace itself,
// clear of the protected folders (wherever their own symlinks lead), and
// not inside existing evidence. Last, what exists there must be a
// directory.
func (s *service) outputLocation(write bool) (ports.Location, *Error) {
	out, err := s.p.Paths.Resolve(s.outputDir)
	if err != nil {
		return ports.Location{}, classify(resolvingOutput, "", err)
	}
	if write {
		if out.Rel == "." {
			return ports.Location{}, fail(PathBoundary, "the output directory may not be the workspace itself")
		}
		for _, name := range protectedFolders() {
			folder, err := s.p.Paths.Resolve(name)
			if err != nil {
				continue // a protected folder that leads outside cannot hold out
			}
			if within(out.Rel, folder.Rel) || within(folder.Rel, out.Rel) {
				return ports.Location{}, fail(PathBoundary, "the output directory may not equal, contain or sit inside %s", name)
			}
		}
		if e := s.clearOfEvidence(out.Rel); e != nil {
			return ports.Location{}, e
		}
	}
	if out.Exists && !out.Dir {
		return ports.Location{}, fail(InvalidOutput, "the output directory exists and is not a directory")
	}
	return out, nil
}

// clearOfEvidence refuses an output directory that is, or sits inside, a
// run directory or a pending directory: writing there would add entries to
// evidence, which would then never verify again.
func (s *service) clearOfEvidence(rel string) *Error {
	parts := strings.Split(rel, "/")
	for i := range parts {
		if strings.HasPrefix(parts[i], ports.PendingPrefix) {
			return fail(PathBoundary, "the output directory may not be or sit inside a pending directory")
		}
		dir := path.Join(parts[:i+1]...)
		for _, name := range ports.RunFileNames() {
			if loc, err := s.p.Paths.Resolve(path.Join(dir, name)); err == nil && loc.Exists {
				return fail(PathBoundary, "the output directory may not be or sit inside a run directory")
			}
		}
	}
	return nil
}

// AnalyzeResult is a committed run: the result (analyze's response result,
// the JSON value of result.json) and the paths of its three files.
type AnalyzeResult struct {
	Result    domain.Result
	Artifacts Artifacts
}

// Analyze computes the result over sources whose digest must equal
// expectedDigest and commits it, with its receipt and checksums, as the run
// directory O/runID: all three files or nothing, never over existing
// evidence.
func (s *service) Analyze(runID, expectedDigest string) (AnalyzeResult, *Error) {
	if e := s.checkCancel("before work"); e != nil {
		return AnalyzeResult{}, e
	}
	out, e := s.outputLocation(true)
	if e != nil {
		return AnalyzeResult{}, e
	}
	snap, e := s.readSources(readingSource)
	if e != nil {
		return AnalyzeResult{}, e
	}
	_, result, e := compute(snap)
	if e != nil {
		return AnalyzeResult{}, e
	}
	if snap.digest != expectedDigest {
		return AnalyzeResult{}, fail(StaleContext, "the sources' digest is not the expected one; run inspect_inputs again and pass the digest it returns")
	}
	files, e := s.runFiles(runID, snap, result)
	if e != nil {
		return AnalyzeResult{}, e
	}
	if e := s.checkCancel("before writes"); e != nil {
		return AnalyzeResult{}, e
	}
	if e := s.commit(out.Rel, runID, snap.digest, files); e != nil {
		return AnalyzeResult{}, e
	}
	dir := path.Join(out.Rel, runID)
	return AnalyzeResult{Result: result, Artifacts: Artifacts{
		Result:    path.Join(dir, ResultFile),
		Receipt:   path.Join(dir, ReceiptFile),
		Checksums: path.Join(dir, ChecksumsFile),
	}}, nil
}

// runFiles encodes result.json, receipt.json and checksums.json.
func (s *service) runFiles(runID string, snap snapshot, result domain.Result) ([]ports.File, *Error) {
	engine, err := s.p.Engine.Identity()
	if err != nil {
		return nil, classify(identifyingEngine, "", err)
	}
	resultBytes, err := saved(result)
	if err != nil {
		return nil, fail(InternalError, "the result could not be encoded")
	}
	receiptBytes, err := saved(newReceipt(runID, snap, engine, resultBytes, s.p.Clock.Now()))
	if err != nil {
		return nil, fail(InternalError, "the receipt could not be encoded")
	}
	checksumBytes, err := saved(Checksums{Receipt: domain.SHA256Hex(receiptBytes), Result: domain.SHA256Hex(resultBytes)})
	if err != nil {
		return nil, fail(InternalError, "the checksums could not be encoded")
	}
	return []ports.File{
		{Name: ResultFile, Data: resultBytes},
		{Name: ReceiptFile, Data: receiptBytes},
		{Name: ChecksumsFile, Data: checksumBytes},
	}, nil
}

// commit writes the run under the writer lock: collision check, staged and
// synced files, sources and cancel marker re-checked, then the no-replace
// rename. Whatever fails, the writer's Close removes what it staged.
func (s *service) commit(dir, runID, digest string, files []ports.File) (e *Error) {
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
	again, e := s.readSources(rereadingSource)
	if e != nil {
		return e
	}
	if again.digest != digest {
		return fail(StaleContext, "the sources changed while the run was being written; nothing was committed: inspect again")
	}
	if e := s.checkCancel("before the commit"); e != nil {
		return e
	}
	if err := w.Commit(runID); err != nil {
		return classify(writingRun, runPath, err)
	}
	return nil
}
