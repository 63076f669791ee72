package app

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/app/remedy"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
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

// sources reads the workspace's sources for the use cases, and remembers
// what the last reading gave (memo).
type sources struct {
	port ports.SourceReader
	// last is the last computation from sources read.
	last atomic.Pointer[memo]
}

// read reads the four sources in their fixed order, each within the size
// limit and the workspace; the first fault is the answer. The error is the
// port's, and names the file it is about (fileOf).
func (s *sources) read() (snapshot, error) {
	files := make(map[string][]byte, 4)
	for _, name := range domain.SourceNames() {
		data, err := s.port.ReadSource(name, domain.MaxSourceBytes)
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
func (s *sources) compute(snap snapshot) (RowCounts, domain.Result, error) {
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
func (s *sources) blockers(snap snapshot) (RowCounts, []domain.Blocker, error) {
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

// RowCounts counts the data rows of each CSV source.
type RowCounts struct {
	Customers    int `json:"customers"`
	Groups       int `json:"groups"`
	Transactions int `json:"transactions"`
}

// memo is the last computation a service made from sources it read: their
// exact bytes, and what this engine derives from those bytes alone (their
// hashes and digest, the row counts, the result, result.json and its
// SHA256). The domain is pure, so the same bytes always give the same
// values: a call that reads sources byte for byte equal to the memo's takes
// these rather than hashing, parsing, computing and encoding them again.
// The bytes are compared whole, never by their hash.
//
// Every call still reads its sources, as often and where protocol §6 says;
// only what follows from identical bytes is reused. A one-shot process
// makes one call and never reuses anything; the MCP server, which serves
// many calls over the same sources, answers most from the memo. It holds
// one reading, a few megabytes at the maximum inputs, and is never
// changed once made.
type memo struct {
	files  map[string][]byte
	sums   *sums // done
	rows   RowCounts
	result domain.Result
	// blockersOnly: the memo of an inspect, whose result holds only the
	// release blockers; analyze and verify compute the rest (and
	// remember it) rather than take it.
	blockersOnly bool

	saveOnce sync.Once
	// saved is result.json, in the saved layout, and savedSHA256 its
	// SHA256; encoded when first needed.
	saved       []byte
	savedSHA256 string
}

// sameFiles reports whether two readings of the sources hold the same
// bytes.
func sameFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for name, data := range a {
		other, ok := b[name]
		if !ok || !bytes.Equal(data, other) {
			return false
		}
	}
	return true
}

// recall returns the memo of the sources just read, when they are the
// memo's bytes.
func (s *sources) recall(files map[string][]byte) *memo {
	m := s.last.Load()
	if m == nil || !sameFiles(m.files, files) {
		return nil
	}
	return m
}

// remember keeps the computation of a snapshot as the service's memo.
func (s *sources) remember(snap snapshot, rows RowCounts, result domain.Result) {
	s.last.Store(&memo{files: snap.files, sums: snap.sums, rows: rows, result: result})
}

// rememberBlockers keeps an inspect's findings as the service's memo, so
// that the next inspect of the same bytes takes them; the first analyze or
// verify of those bytes replaces it with the whole computation.
func (s *sources) rememberBlockers(snap snapshot, rows RowCounts, blockers []domain.Blocker) {
	s.last.Store(&memo{files: snap.files, sums: snap.sums, rows: rows, blockersOnly: true,
		result: domain.Result{Release: domain.Release{Blockers: blockers}}})
}

// savedResult returns result.json of a computed result and its SHA256,
// encoded once per memo.
func (s *sources) savedResult(snap snapshot, result *domain.Result, sizeHint int) ([]byte, string) {
	encode := func() ([]byte, string) {
		data := evidence.EncodeResult(result, sizeHint)
		return data, domain.SHA256Hex(data)
	}
	m := snap.memo
	if m == nil {
		m = s.last.Load()
		if m == nil || !sameFiles(m.files, snap.files) {
			return encode()
		}
	}
	m.saveOnce.Do(func() {
		m.saved, m.savedSHA256 = encode()
	})
	return m.saved, m.savedSHA256
}

// domainFault is the code of a refusal of the domain, or nil when err is
// none.
func domainFault(err error) *protocol.Error {
	var (
		de  *domain.DataError
		le  *domain.LimitError
		dfe *domain.DefinitionsError
		ne  *domain.NumericError
	)
	switch {
	case errors.As(err, &de):
		return protocol.Errorf(protocol.InvalidData, "%s", de.Error())
	case errors.As(err, &le):
		return protocol.Errorf(protocol.InputLimit, "%s", le.Error())
	case errors.As(err, &dfe):
		return protocol.Errorf(protocol.InvalidDefinitions, "%s", dfe.Error())
	case errors.As(err, &ne):
		return protocol.Errorf(protocol.IOOrNumericError, "%s", ne.Error())
	}
	return nil
}

// sourceFault is a source that could not be read, or whose bytes the
// domain refused; name is the file, workspace-relative.
func sourceFault(name string, err error) *protocol.Error {
	if e := domainFault(err); e != nil {
		return e
	}
	switch {
	case errors.Is(err, ports.ErrMissing):
		return protocol.Errorf(protocol.MissingInput, "%s does not exist", name)
	case errors.Is(err, ports.ErrNotRegular):
		return protocol.Errorf(protocol.MissingInput, "%s is not a regular file", name)
	case errors.Is(err, ports.ErrTooLarge):
		return protocol.Errorf(protocol.InputLimit, "%s is larger than %d bytes", name, domain.MaxSourceBytes)
	case errors.Is(err, ports.ErrOutside):
		return protocol.Errorf(protocol.PathBoundary, "%s resolves outside the workspace", name)
	}
	return protocol.Errorf(protocol.IOOrNumericError, "%s could not be read%s", name, remedy.Because(err))
}

// inFile ties a port error to the name of the file it is about, so the
// message can name it.
type inFile struct {
	name string
	err  error
}

func (e *inFile) Error() string { return e.name + ": " + e.err.Error() }
func (e *inFile) Unwrap() error { return e.err }

func about(name string, err error) error { return &inFile{name: name, err: err} }

func fileOf(err error) string {
	var f *inFile
	if errors.As(err, &f) {
		return f.name
	}
	return ""
}
