package app

import (
	"context"

	"github.com/metricproof/metricproof/ports"
)

// Ready checks, for a long-lived server's readiness probe (protocol §14,
// /readyz), that what its calls need can be reached now: the workspace,
// the output directory's place (as CheckPaths checks it), and the ledger,
// whose last record must be well formed. It reads no source, lists no
// run and writes nothing, so a probe costs a few lookups and one read of
// the ledger's end. Its error is coded as a call meeting the same fault
// would be: MISSING_WORKSPACE, PATH_BOUNDARY, INVALID_OUTPUT,
// LEDGER_TAMPERED, IO_OR_NUMERIC_ERROR.
func (s *Service) Ready(ctx context.Context) error {
	ws, err := s.p.Paths.Resolve(".")
	if err != nil {
		return workspaceFault(err)
	}
	switch {
	case !ws.Exists:
		return workspaceFault(ports.ErrMissing)
	case !ws.Dir:
		return workspaceFault(ports.ErrNotDir)
	}
	if err := s.CheckPaths(); err != nil {
		return err
	}
	return s.CheckLedger(ctx)
}
