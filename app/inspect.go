package app

import (
	"github.com/metricproof/metricproof/domain"
)

// snapshot is one reading of the four sources: the exact bytes, which feed
// both the hashes and the parser, so each file is read once.
type snapshot struct {
	files  map[string][]byte
	hashes domain.SourceHashes
	digest string
}

// readSources reads the four sources in their fixed order, each within the
// size limit and the workspace; the first fault is the answer.
func (s *service) readSources(st step) (snapshot, *Error) {
	files := make(map[string][]byte, 4)
	for _, name := range domain.SourceNames() {
		data, err := s.p.Sources.ReadSource(name, domain.MaxSourceBytes)
		if err != nil {
			return snapshot{}, classify(st, name, err)
		}
		files[name] = data
	}
	hashes := domain.HashSources(files)
	return snapshot{files: files, hashes: hashes, digest: hashes.Digest()}, nil
}

// compute validates a snapshot and runs the calculation.
func compute(snap snapshot) (domain.Inputs, domain.Result, *Error) {
	in, err := domain.ParseSources(snap.files)
	if err != nil {
		return domain.Inputs{}, domain.Result{}, classify(readingSource, "", err)
	}
	r, err := domain.Compute(in, snap.digest)
	if err != nil {
		return domain.Inputs{}, domain.Result{}, classify(readingSource, "", err)
	}
	return in, r, nil
}

// InspectResult is inspect_inputs' result.
type InspectResult struct {
	SourceDigest    string            `json:"source_digest"`
	Sources         map[string]string `json:"sources"`
	DefinitionID    string            `json:"definition_id"`
	RowCounts       RowCounts         `json:"row_counts"`
	ReleaseBlockers []domain.Blocker  `json:"release_blockers"`
}

// RowCounts counts the data rows of each CSV source.
type RowCounts struct {
	Customers    int `json:"customers"`
	Groups       int `json:"groups"`
	Transactions int `json:"transactions"`
}

// Inspect reads and validates the sources and reports their digest and the
// release blockers. It writes nothing.
func (s *service) Inspect() (InspectResult, *Error) {
	if e := s.checkCancel("before work"); e != nil {
		return InspectResult{}, e
	}
	if s.outputDir != "" {
		if _, e := s.outputLocation(false); e != nil {
			return InspectResult{}, e
		}
	}
	snap, e := s.readSources(readingSource)
	if e != nil {
		return InspectResult{}, e
	}
	in, r, e := compute(snap)
	if e != nil {
		return InspectResult{}, e
	}
	return InspectResult{
		SourceDigest: snap.digest,
		Sources:      snap.hashes,
		DefinitionID: r.DefinitionID,
		RowCounts: RowCounts{
			Customers:    len(in.Customers),
			Groups:       len(in.Groups),
			Transactions: len(in.Transactions),
		},
		ReleaseBlockers: r.Release.Blockers,
	}, nil
}
