package s3store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/metricproof/metricproof/ports"
)

// The call ledger (protocol §11) on a store is a chain of objects under
// the ledger's key prefix, one per record, each named for its seq with 20
// digits so that key order is seq order: 00000000000000000001.json, …
// Each holds one record line, newline included, created by a conditional
// write: of two writers of the same seq exactly one succeeds, and the
// other reads the new head and links its record to it. Keys under the
// prefix of any other name are not the ledger's and are passed over, as
// other files in a ledger's directory are on disk.

// maxLineBytes bounds how much of one record object is read: a record is
// well under 1 KiB, so a longer one is damage, and this much of it is
// enough to say so (as osfs bounds a line).
const maxLineBytes = 64 << 10

// scanBatch and scanConcurrency shape a scan: records are read
// scanConcurrency at a time, scanBatch between two hand-overs.
const (
	scanBatch       = 256
	scanConcurrency = 16
)

// recordKey is the key of the record seq in the ledger whose key prefix
// is dir.
func recordKey(dir string, seq uint64) string {
	return fmt.Sprintf("%s%020d.json", dir, seq)
}

// parseSeq is the seq a record object's name stands for; ok is false for
// any other name.
func parseSeq(name string) (seq uint64, ok bool) {
	digits, ok := strings.CutSuffix(name, ".json")
	if !ok || len(digits) != 20 || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	seq, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || seq == 0 || seq > math.MaxInt64 {
		return 0, false
	}
	return seq, true
}

// next returns the lowest seq above k that the ledger dir holds, 0 when
// there is none: one listing from k's key on, as a rule (names of other
// keys between records only cost more pages).
func (s *Store) next(ctx context.Context, dir string, k uint64) (uint64, error) {
	var found uint64
	err := s.list(ctx, dir, recordKey(dir, k), 100, func(name string, _ int64) bool {
		if seq, ok := parseSeq(name); ok && seq > k {
			found = seq
			return false
		}
		return true
	})
	return found, err
}

// head returns the highest seq the ledger dir holds, 0 when it holds
// none; known is one the caller knows exists. It asks only about what
// lies above the highest seq this Store has seen: one listing when no
// record was added since, about 2·log2(n) when n were (a one-shot process
// starts from nothing). The question "does any seq above k exist" only
// ever turns from yes to no as k grows, gaps or not, so a gallop and a
// bisection over it find the last record without listing the chain.
func (s *Store) head(ctx context.Context, dir string, known uint64) (uint64, error) {
	s.mu.Lock()
	lo := max(s.heads[dir], known)
	s.mu.Unlock()
	n, err := s.next(ctx, dir, lo)
	if err != nil || n == 0 {
		return lo, err
	}
	// lo exists; hi, once found, has nothing above it.
	lo, hi := n, uint64(0)
	for step := lo; hi == 0; step = min(step*2, math.MaxInt64) {
		probe := min(lo+step, math.MaxInt64)
		n, err := s.next(ctx, dir, probe)
		switch {
		case err != nil:
			return 0, err
		case n == 0:
			hi = probe
		default:
			lo = n
		}
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		n, err := s.next(ctx, dir, mid)
		switch {
		case err != nil:
			return 0, err
		case n == 0:
			hi = mid
		default:
			lo = n
		}
	}
	s.sawHead(dir, lo)
	return lo, nil
}

// sawHead records that the ledger dir holds seq.
func (s *Store) sawHead(dir string, seq uint64) {
	s.mu.Lock()
	s.heads[dir] = max(s.heads[dir], seq)
	s.mu.Unlock()
}

// line reads the record seq, cut at maxLineBytes. A record that was seen
// and is gone (deleted by someone) is handed over as an empty line: no
// record, which the app's check calls damage.
func (s *Store) line(ctx context.Context, dir string, seq uint64) ([]byte, error) {
	data, err := s.get(ctx, recordKey(dir, seq), maxLineBytes, true)
	if errors.Is(err, ports.ErrMissing) {
		return []byte{}, nil
	}
	return data, err
}

// Ledger is one ledger of the store, its key prefix resolved once: the
// handle ports.LedgerStore's OpenLedger returns. It holds nothing open.
type Ledger struct {
	s   *Store
	dir string
}

// OpenLedger returns the ledger rel. It makes no request: a ledger with no
// record yet is one.
func (s *Store) OpenLedger(rel string) (ports.Ledger, error) {
	return s.openLedger(rel)
}

func (s *Store) openLedger(rel string) (*Ledger, error) {
	dir, err := s.dirKey(rel)
	if err != nil {
		return nil, err
	}
	return &Ledger{s: s, dir: dir}, nil
}

// Close implements the handle's Close: there is nothing to release.
func (l *Ledger) Close() error { return nil }

// LastLine opens the ledger rel and returns its last line (Ledger.LastLine),
// for a caller that keeps no handle.
func (s *Store) LastLine(ctx context.Context, rel string) ([]byte, error) {
	l, err := s.openLedger(rel)
	if err != nil {
		return nil, err
	}
	return l.LastLine(ctx)
}

// LastLine is the object of the highest seq, as it is; nil when the
// ledger has no record.
func (l *Ledger) LastLine(ctx context.Context) ([]byte, error) {
	seq, err := l.s.head(ctx, l.dir, 0)
	if err != nil || seq == 0 {
		return nil, err
	}
	return l.s.line(ctx, l.dir, seq)
}

// Lock opens the ledger rel and holds it (Ledger.Lock), for a caller that
// keeps no handle.
func (s *Store) Lock(ctx context.Context, rel string, wait time.Duration) (ports.HeldLedger, error) {
	l, err := s.openLedger(rel)
	if err != nil {
		return nil, err
	}
	return l.Lock(ctx, wait)
}

// Lock takes no lock and makes no request: the hold's Append links its
// record to the head and retries on losing the head to another writer.
// Each loss is another call recorded, the line moving, so the retries last
// as a wait for the lock on disk does while the ledger changes: at most
// ports.MaxLockWaitPeriods periods of wait.
func (l *Ledger) Lock(ctx context.Context, wait time.Duration) (ports.HeldLedger, error) {
	return &held{l: l, ctx: ctx, wait: wait}, nil
}

// held is a ledger whose next record this caller will append.
type held struct {
	l        *Ledger
	ctx      context.Context
	wait     time.Duration
	appended bool
}

func (h *held) LastLine() ([]byte, error) { return h.l.LastLine(h.ctx) }

// Append implements ports.HeldLedger: record is built from the head's
// line and created as the next seq; when another writer created that seq
// first, record is built again from the new head, until it lands or the
// wait's last period ends (ports.ErrWaitedTooLong). The record is the call's outcome, already
// decided, so a cancelled call still appends it.
func (h *held) Append(record func(last []byte) ([]byte, error)) error {
	if h.appended {
		return errors.New("the held ledger was appended to already")
	}
	h.appended = true
	ctx := context.WithoutCancel(h.ctx)
	deadline := time.Now().Add(ports.MaxLockWaitPeriods * h.wait)
	seq, err := h.l.s.head(ctx, h.l.dir, 0)
	for {
		if err != nil {
			return err
		}
		var last []byte
		if seq > 0 {
			if last, err = h.l.s.line(ctx, h.l.dir, seq); err != nil {
				return err
			}
			// Before any record is created: on a store that overwrites,
			// two appenders of one seq would both be told theirs landed.
			// The head, whole, is what the store holds at its key (an
			// empty or cut one is not, and is not asked with).
			if len(last) > 0 && len(last) < maxLineBytes {
				if err := h.l.s.keepsCondition(ctx, recordKey(h.l.dir, seq), last); err != nil {
					return err
				}
			}
		}
		data, rerr := record(last)
		if rerr != nil {
			return rerr
		}
		switch err := h.l.s.create(ctx, recordKey(h.l.dir, seq+1), data); {
		case err == nil:
			h.l.s.sawHead(h.l.dir, seq+1)
			return nil
		case errors.Is(err, ports.ErrNotDir):
			return ports.ErrNotRegular // an object where the ledger's prefix should be
		case errors.Is(err, ports.ErrOutcomeUnknown):
			// The record may be in the ledger: the answer must be the one it holds.
			return fmt.Errorf("%w: %w", ports.ErrRecordRemains, err)
		case !errors.Is(err, ports.ErrExists):
			return err
		case time.Now().After(deadline):
			return ports.ErrWaitedTooLong
		}
		seq, err = h.l.s.head(ctx, h.l.dir, seq+1)
	}
}

// Release implements ports.HeldLedger: there is nothing to release.
func (h *held) Release() error { return nil }

// ScanLedger opens the ledger rel and scans it (Ledger.Scan), for a caller
// that keeps no handle.
func (s *Store) ScanLedger(ctx context.Context, rel string, visit func([]byte) error) error {
	l, err := s.openLedger(rel)
	if err != nil {
		return err
	}
	return l.Scan(ctx, visit)
}

// Scan hands over every record object up to the head found as the scan
// begins, in seq order (appends made meanwhile do not show, and wait for
// nothing). A seq missing below the head is handed over as one empty
// line, which is no record. A ledger with no record is ErrMissing.
func (l *Ledger) Scan(ctx context.Context, visit func([]byte) error) error {
	s, dir := l.s, l.dir
	end, err := s.head(ctx, dir, 0)
	if err != nil {
		return err
	}
	if end == 0 {
		return ports.ErrMissing
	}
	want := uint64(1)
	var batch []uint64
	// flush reads the batch's records and hands them over in order.
	flush := func() error {
		lines := make([][]byte, len(batch))
		errs := make([]error, len(batch))
		turns := make(chan struct{}, scanConcurrency)
		var wg sync.WaitGroup
		for i, seq := range batch {
			wg.Go(func() {
				turns <- struct{}{}
				defer func() { <-turns }()
				lines[i], errs[i] = s.line(ctx, dir, seq)
			})
		}
		wg.Wait()
		for i, seq := range batch {
			if errs[i] != nil {
				return errs[i]
			}
			if seq != want {
				if err := visit([]byte{}); err != nil {
					return err
				}
			}
			if err := visit(lines[i]); err != nil {
				return err
			}
			want = seq + 1
		}
		batch = batch[:0]
		return nil
	}
	var stop error
	err = s.list(ctx, dir, recordKey(dir, 0), 1000, func(name string, _ int64) bool {
		seq, ok := parseSeq(name)
		switch {
		case !ok:
			return true
		case seq > end:
			return false
		}
		if batch = append(batch, seq); len(batch) == scanBatch {
			stop = flush()
		}
		return stop == nil
	})
	switch {
	case stop != nil:
		return stop
	case err != nil:
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if want <= end {
		return visit([]byte{}) // the head seen at the start is gone
	}
	return nil
}
