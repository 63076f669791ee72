package app

import (
	"bytes"
	"sync"

	"github.com/metricproof/metricproof/domain"
)

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
// one reading, a few megabytes at protocol §8's maximum, and is never
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
func (s *Service) recall(files map[string][]byte) *memo {
	m := s.memo.Load()
	if m == nil || !sameFiles(m.files, files) {
		return nil
	}
	return m
}

// remember keeps the computation of a snapshot as the service's memo.
func (s *Service) remember(snap snapshot, rows RowCounts, result domain.Result) {
	s.memo.Store(&memo{files: snap.files, sums: snap.sums, rows: rows, result: result})
}

// rememberBlockers keeps an inspect's findings as the service's memo, so
// that the next inspect of the same bytes takes them; the first analyze or
// verify of those bytes replaces it with the whole computation.
func (s *Service) rememberBlockers(snap snapshot, rows RowCounts, blockers []domain.Blocker) {
	s.memo.Store(&memo{files: snap.files, sums: snap.sums, rows: rows, blockersOnly: true,
		result: domain.Result{Release: domain.Release{Blockers: blockers}}})
}

// savedResult returns result.json of a computed result and its SHA256,
// encoded once per memo.
func (s *Service) savedResult(snap snapshot, result *domain.Result, sizeHint int) ([]byte, string) {
	encode := func() ([]byte, string) {
		data := encodeResult(result, sizeHint)
		return data, domain.SHA256Hex(data)
	}
	m := snap.memo
	if m == nil {
		m = s.memo.Load()
		if m == nil || !sameFiles(m.files, snap.files) {
			return encode()
		}
	}
	m.saveOnce.Do(func() {
		m.saved, m.savedSHA256 = encode()
	})
	return m.saved, m.savedSHA256
}
