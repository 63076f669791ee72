package app

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/app/remedy"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// Run files as resources (protocol §9.6): the MCP server lets a client read the
// files of committed runs, whole and byte for byte, and list the runs. A
// read is not a tool call: it is not recorded in the ledger, and it writes
// nothing.

// ReadRunFile returns the exact bytes of the file name of the committed
// run runID, after the checks verify_result makes to read a run: runID in
// the ID grammar, name one of ports.RunFileNames, the run a directory
// inside the output directory (not a symlink), the file a regular file
// there (not a symlink) of at most evidence.MaxSavedBytes. It writes
// nothing, and is no tool call: it is not recorded.
//
// MISSING_RESULT means there is no such file to read: the run ID or the
// name is not one, there is no output directory or run or file, or the
// file fails a check. Any other code is a failure to read: the output
// directory's place (PATH_BOUNDARY, INVALID_OUTPUT) or an I/O failure.
func (s *Service) ReadRunFile(ctx context.Context, runID, name string) ([]byte, error) {
	missing := func(format string, args ...any) ([]byte, error) {
		return nil, protocol.Errorf(protocol.MissingResult, format, args...)
	}
	switch {
	case ctx.Err() != nil:
		return nil, protocol.Errorf(protocol.Cancelled, "the read was cancelled")
	case !domain.ValidID(runID):
		return missing("a run ID is %s", protocol.IDRule)
	case !slices.Contains(ports.RunFileNames(), name):
		return missing("a run holds only %s", strings.Join(ports.RunFileNames(), ", "))
	case s.opts.OutputDir == "":
		return missing("the server has no --output-dir, so it holds no runs")
	}
	out, err := s.places.ResolveOutput(false)
	if err != nil {
		return nil, err
	}
	if !out.Exists {
		return missing("there is no run %s in the output directory", runID)
	}
	run, err := s.p.Evidence.ReadRun(out.Rel, runID, []string{name}, evidence.MaxSavedBytes)
	switch {
	case errors.Is(err, ports.ErrOutside):
		return missing("run %s resolves outside the output directory", runID)
	case err != nil:
		return nil, runFault(runID, "", err)
	case !run.Exists:
		return missing("there is no run %s in the output directory", runID)
	case !run.Dir:
		return missing("run %s is not a directory", runID)
	}
	f := run.Files[0]
	switch {
	case f.Err == nil:
		return f.Data, nil
	case errors.Is(f.Err, ports.ErrMissing):
		return missing("run %s has no %s", runID, name)
	case errors.Is(f.Err, ports.ErrNotRegular):
		return missing("%s of run %s is not a regular file", name, runID)
	case errors.Is(f.Err, ports.ErrTooLarge):
		return missing("%s of run %s is larger than %d bytes", name, runID, evidence.MaxSavedBytes)
	case errors.Is(f.Err, ports.ErrOutside):
		return missing("%s of run %s resolves outside the run", name, runID)
	}
	return nil, runFault(runID, name, f.Err)
}

// Runs returns the committed runs of the output directory whose IDs sort
// after after (from the first when it is empty), sorted by ID (byte order),
// at most n of them, and whether more follow. A run is a directory whose
// name is in the ID grammar and that holds a regular result.json: pending
// directories, the writer lock and every other entry are left out. Without
// --output-dir, or when the directory does not exist yet, there are none.
func (s *Service) Runs(ctx context.Context, after string, n int) ([]ports.ListedRun, bool, error) {
	if ctx.Err() != nil {
		return nil, false, protocol.Errorf(protocol.Cancelled, "the listing was cancelled")
	}
	if s.opts.OutputDir == "" {
		return nil, false, nil
	}
	out, err := s.places.ResolveOutput(false)
	if err != nil {
		return nil, false, err
	}
	if !out.Exists {
		return nil, false, nil
	}
	listed, err := s.p.Evidence.ListRuns(out.Rel)
	switch {
	case errors.Is(err, ports.ErrNoBucket):
		return nil, false, remedy.NoBucket("the output directory")
	case err != nil:
		return nil, false, remedy.RetryableIf(err, protocol.Errorf(protocol.IOOrNumericError, "the output directory could not be listed%s", remedy.Because(err)))
	}
	var runs []ports.ListedRun
	for _, r := range listed {
		if domain.ValidID(r.Name) && r.Name > after {
			runs = append(runs, r)
		}
	}
	slices.SortFunc(runs, func(a, b ports.ListedRun) int { return strings.Compare(a.Name, b.Name) })
	if len(runs) > n {
		return runs[:n], true, nil
	}
	return runs, false, nil
}
