package app

import (
	"context"

	"github.com/metricproof/metricproof/domain"
)

// InspectResult is inspect_inputs' result.
type InspectResult struct {
	SourceDigest    string            `json:"source_digest"`
	Sources         map[string]string `json:"sources"`
	DefinitionID    string            `json:"definition_id"`
	RowCounts       RowCounts         `json:"row_counts"`
	ReleaseBlockers []domain.Blocker  `json:"release_blockers"`
}

// Inspect is inspect_inputs (protocol §6.1): it reads and validates the
// sources and reports their digest and the release blockers. It writes
// nothing.
func (s *Service) Inspect(ctx context.Context) (InspectResult, error) {
	if s.ledger != "" {
		s.warmEngine() // for the call's record
	}
	if err := s.checkCancel(ctx, "before work"); err != nil {
		return InspectResult{}, err
	}
	if s.opts.OutputDir != "" {
		if _, err := s.places.ResolveOutput(false); err != nil {
			return InspectResult{}, err
		}
	}
	snap, err := s.sources.read()
	if err != nil {
		return InspectResult{}, sourceFault(fileOf(err), err)
	}
	rows, blockers, err := s.sources.blockers(snap)
	if err != nil {
		return InspectResult{}, sourceFault("", err)
	}
	return InspectResult{
		SourceDigest:    snap.digest(),
		Sources:         snap.hashes(),
		DefinitionID:    domain.DefinitionID,
		RowCounts:       rows,
		ReleaseBlockers: blockers,
	}, nil
}
