package app

import (
	"github.com/metricproof/metricproof/domain"
)

// snapshot is one reading of the four sources: the exact bytes, which feed
// both the hashes and the parser, so each file is read once. The hashes
// are taken on a goroutine of their own, beside the parsing; hashes and
// digest wait for them.
type snapshot struct {
	files map[string][]byte
	sums  *sums
	// memo, when not nil, holds what these very bytes were found to give.
	memo *memo
}

// sums are a snapshot's hashes, once done is closed. A panic while
// hashing is kept in panicked and raised again on the goroutine that waits,
// where the call's recover turns it into INTERNAL_ERROR; on the hashing
// goroutine it would end the process.
type sums struct {
	done     chan struct{}
	hashes   domain.SourceHashes
	digest   string
	panicked any
}

// wait waits for the hashes.
func (s *sums) wait() {
	<-s.done
	if s.panicked != nil {
		panic(s.panicked)
	}
}

func (s snapshot) hashes() domain.SourceHashes {
	s.sums.wait()
	return s.sums.hashes
}

func (s snapshot) digest() string {
	s.sums.wait()
	return s.sums.digest
}

// readSources reads the four sources in their fixed order, each within the
// size limit and the workspace; the first fault is the answer. The error
// is the port's, and names the file it is about (fileOf).
func (s *Service) readSources() (snapshot, error) {
	files := make(map[string][]byte, 4)
	for _, name := range domain.SourceNames() {
		data, err := s.p.Sources.ReadSource(name, domain.MaxSourceBytes)
		if err != nil {
			return snapshot{}, about(name, err)
		}
		files[name] = data
	}
	if m := s.recall(files); m != nil {
		return snapshot{files: m.files, sums: m.sums, memo: m}, nil
	}
	snap := snapshot{files: files, sums: &sums{done: make(chan struct{})}}
	go func() {
		defer close(snap.sums.done) // SHA256 of bytes cannot fail
		defer func() { snap.sums.panicked = recover() }()
		snap.sums.hashes = domain.HashSources(files)
		snap.sums.digest = snap.sums.hashes.Digest()
	}()
	return snap, nil
}

// compute validates a snapshot and runs the calculation, or takes both
// from the memo of the same bytes. Its only errors are the domain's.
func (s *Service) compute(snap snapshot) (RowCounts, domain.Result, error) {
	if snap.memo != nil && !snap.memo.blockersOnly {
		return snap.memo.rows, snap.memo.result, nil
	}
	in, err := parseSources(snap.files)
	if err != nil {
		return RowCounts{}, domain.Result{}, err
	}
	r, err := domain.Compute(in, snap.digest())
	if err != nil {
		return RowCounts{}, domain.Result{}, err
	}
	rows := RowCounts{Customers: len(in.Customers), Groups: len(in.Groups), Transactions: len(in.Transactions)}
	s.remember(snap, rows, r)
	return rows, r, nil
}

// blockers validates a snapshot and finds its release blockers, which is
// all inspect_inputs reports, or takes both from the memo of the same
// bytes. It computes no number: a third of an inspect's time at 10,000
// rows went into revenue and rate that its answer never shows. Its only
// errors are the domain's.
func (s *Service) blockers(snap snapshot) (RowCounts, []domain.Blocker, error) {
	if snap.memo != nil {
		return snap.memo.rows, snap.memo.result.Release.Blockers, nil
	}
	in, err := parseSources(snap.files)
	if err != nil {
		return RowCounts{}, nil, err
	}
	rows := RowCounts{Customers: len(in.Customers), Groups: len(in.Groups), Transactions: len(in.Transactions)}
	b := domain.Blockers(in)
	s.rememberBlockers(snap, rows, b)
	return rows, b, nil
}

// parseSources is domain.ParseSources and checkDefinitions, with the
// transactions, most of the bytes, parsed on a goroutine of their own
// beside the other three sources; the first fault is still the one in the order of
// domain.SourceNames. A panic there is carried back and raised on the
// caller's goroutine, where the call's recover turns it into
// INTERNAL_ERROR; on its own goroutine it would end the process.
func parseSources(files map[string][]byte) (domain.Inputs, error) {
	var in domain.Inputs
	names := domain.SourceNames()
	errs := make([]error, len(names))
	var panicked any
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { panicked = recover() }()
		errs[0] = parseSource(names[0], files[names[0]], &in)
	}()
	for i := 1; i < len(names); i++ {
		if errs[i] = parseSource(names[i], files[names[i]], &in); errs[i] != nil {
			break
		}
	}
	<-done
	if panicked != nil {
		panic(panicked)
	}
	for _, err := range errs {
		if err != nil {
			return domain.Inputs{}, err
		}
	}
	return in, nil
}
