package app

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// Run files as resources (protocol §9): the MCP server lets a client read the
// files of committed runs, whole and byte for byte, and list the runs. A
// read is not a tool call: it is not recorded in the ledger, and it writes
// nothing.

// RunFileNames returns the names of the files a run may hold, in the
// order analyze writes them: the resource names of protocol §9.
func RunFileNames() []string { return savedFiles() }

// ListedRun is one committed run of the output directory, as
// resources/list shows it.
type ListedRun struct {
	RunID string
	// ResultBytes is the size of its result.json.
	ResultBytes int64
}

// ReadRunFile returns the exact bytes of the file name of the committed
// run runID, after the checks verify_result makes to read a run: runID in
// the ID grammar of protocol §2, name one of [RunFileNames], the run a
// directory inside the output directory (not a symlink), the file a
// regular file there (not a symlink) of at most MaxSavedBytes.
//
// MISSING_RESULT means there is no such file to read: the run ID or the
// name is not one, there is no output directory or run or file, or the
// file fails a check. Any other code is a failure to read: the output
// directory's place (PATH_BOUNDARY, INVALID_OUTPUT) or an I/O failure.
//
// protocol §9, Load: a resource read counts against the service's compute
// slots like a tool call. It takes one before any I/O, waiting in arrival
// order and giving up when ctx is done, and gives it back when it returns;
// or, when keep is not nil, hands keep the function that gives it back,
// for the transport to call once the answer is written (as
// [Input.Keep]), so that an answer waiting to be written holds its slot.
func (s *Service) ReadRunFile(ctx context.Context, runID, name string, keep func(release func())) ([]byte, *Error) {
	release, err := s.Compute(ctx)
	if err != nil {
		return nil, fail(Cancelled, "the read was cancelled")
	}
	if keep != nil {
		keep(release)
	} else {
		defer release()
	}
	switch {
	case !domain.ValidID(runID):
		return nil, fail(MissingResult, "a run ID is %s", protocol.IDRule)
	case !slices.Contains(RunFileNames(), name):
		return nil, fail(MissingResult, "a run holds only %s", strings.Join(RunFileNames(), ", "))
	case s.opts.OutputDir == "":
		return nil, fail(MissingResult, "the server has no --output-dir, so it holds no runs")
	}
	out, e := s.outputLocation(false)
	if e != nil {
		return nil, e
	}
	if !out.Exists {
		return nil, fail(MissingResult, "there is no run %s in the output directory", runID)
	}
	run, err := s.p.Evidence.ReadRun(out.Rel, runID, []string{name}, MaxSavedBytes)
	switch {
	case errors.Is(err, ports.ErrOutside):
		return nil, fail(MissingResult, "run %s resolves outside the output directory", runID)
	case err != nil:
		return nil, classify(readingRun, runID, err)
	case !run.Exists:
		return nil, fail(MissingResult, "there is no run %s in the output directory", runID)
	case !run.Dir:
		return nil, fail(MissingResult, "run %s is not a directory", runID)
	}
	f := run.Files[0]
	switch {
	case f.Err == nil:
		return f.Data, nil
	case errors.Is(f.Err, ports.ErrMissing):
		return nil, fail(MissingResult, "run %s has no %s", runID, name)
	case errors.Is(f.Err, ports.ErrNotRegular):
		return nil, fail(MissingResult, "%s of run %s is not a regular file", name, runID)
	case errors.Is(f.Err, ports.ErrTooLarge):
		return nil, fail(MissingResult, "%s of run %s is larger than %d bytes", name, runID, MaxSavedBytes)
	case errors.Is(f.Err, ports.ErrOutside):
		return nil, fail(MissingResult, "%s of run %s resolves outside the run", name, runID)
	}
	return nil, classify(readingRun, runID, about(name, f.Err))
}

// Runs returns the committed runs of the output directory whose IDs sort
// after after (from the first when it is empty), sorted by ID (byte order),
// at most n of them, and whether more follow. A run is a directory whose
// name is in the ID grammar and that holds a regular result.json: pending
// directories, the writer lock and every other entry are left out. Without
// --output-dir, or when the directory does not exist yet, there are none.
func (s *Service) Runs(ctx context.Context, after string, n int) ([]ListedRun, bool, *Error) {
	if ctx.Err() != nil {
		return nil, false, fail(Cancelled, "the listing was cancelled")
	}
	if s.opts.OutputDir == "" {
		return nil, false, nil
	}
	out, e := s.outputLocation(false)
	if e != nil || !out.Exists {
		return nil, false, e
	}
	listed, err := s.p.Evidence.ListRuns(out.Rel)
	if err != nil {
		return nil, false, fail(IOOrNumericError, "the output directory could not be listed%s", because(err))
	}
	var runs []ListedRun
	for _, r := range listed {
		if domain.ValidID(r.Name) && r.Name > after {
			runs = append(runs, ListedRun{RunID: r.Name, ResultBytes: r.ResultBytes})
		}
	}
	slices.SortFunc(runs, func(a, b ListedRun) int { return strings.Compare(a.RunID, b.RunID) })
	if len(runs) > n {
		return runs[:n], true, nil
	}
	return runs, false, nil
}
