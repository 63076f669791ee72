package memfs

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/ports"
)

var _ ports.LedgerStore = (*Workspace)(nil)

// LastLine implements ports.LedgerStore. The workspace's lock stands in
// for flock: it excludes every caller sharing this value.
func (w *Workspace) LastLine(_ context.Context, rel string) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	data, err := w.ledgerBytes(rel)
	if err != nil || len(data) == 0 {
		return nil, err
	}
	return lastLine(data), nil
}

// Lock implements ports.LedgerStore. Every holder is of this process, so
// ctx never cuts a wait short, as the port says of a turn held in the
// process. The wait looks at the ledger's count of appends at the end of
// each period, as the port says.
func (w *Workspace) Lock(_ context.Context, rel string, wait time.Duration) (ports.HeldLedger, error) {
	if err := w.openLedger(rel); err != nil {
		return nil, err
	}
	turn := w.ledgerTurn(rel)
	after := w.after
	if after == nil {
		after = time.After
	}
	seen := w.appendsTo(rel)
	for periods := 1; ; periods++ {
		select {
		case turn <- struct{}{}:
			return &heldLedger{w: w, rel: rel, turn: turn}, nil
		case <-after(wait):
		}
		now := w.appendsTo(rel)
		switch {
		case now == seen:
			return nil, ports.ErrBusy
		case periods >= ports.MaxLockWaitPeriods:
			return nil, ports.ErrWaitedTooLong
		}
		seen = now
	}
}

// appendsTo is how many appends the ledger at rel has seen.
func (w *Workspace) appendsTo(rel string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appended[rel]
}

// openLedger checks the ledger before it is locked: something other than
// a regular file is ErrNotRegular, and an existing file that grants
// anything to group or others is set to mode 0600. A missing ledger is
// created, 0600, by its first append: a reader never sees it empty in
// between.
func (w *Workspace) openLedger(rel string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	fi, err := w.fs.Stat(w.abs(rel))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return ports.ErrNotRegular
	}
	return w.private(rel)
}

// private sets the mode of the file at rel to 0600 when it grants
// anything to group or others.
func (w *Workspace) private(rel string) error {
	fi, err := w.fs.Stat(w.abs(rel))
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	return w.fs.Chmod(w.abs(rel), 0o600)
}

// ledgerTurn is the channel whose one slot the holder of the ledger at rel
// fills.
func (w *Workspace) ledgerTurn(rel string) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	turn := w.turns[rel]
	if turn == nil {
		turn = make(chan struct{}, 1)
		w.turns[rel] = turn
	}
	return turn
}

// heldLedger is the ledger while its turn is held.
type heldLedger struct {
	w        *Workspace
	rel      string
	turn     chan struct{}
	appended bool
	released bool
}

func (h *heldLedger) LastLine() ([]byte, error) {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	data, err := h.w.ledgerBytes(h.rel)
	if err != nil || len(data) == 0 {
		return nil, err
	}
	return lastLine(data), nil
}

func (h *heldLedger) Append(record func(last []byte) ([]byte, error)) error {
	if h.appended {
		return errors.New("the held ledger was appended to already")
	}
	h.appended = true
	w := h.w
	w.mu.Lock()
	defer w.mu.Unlock()
	data, err := w.ledgerBytes(h.rel)
	if err != nil {
		return err
	}
	var last []byte
	if len(data) > 0 {
		last = lastLine(data)
	}
	line, err := record(last)
	if err != nil {
		return err
	}
	w.appended[h.rel]++
	f, err := w.fs.OpenFile(w.abs(h.rel), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(line); err != nil {
		return errors.Join(err, f.Truncate(int64(len(data))), f.Close())
	}
	return f.Close()
}

func (h *heldLedger) Release() error {
	if !h.released {
		h.released = true
		<-h.turn
	}
	return nil
}

// ScanLedger implements ports.LedgerStore.
func (w *Workspace) ScanLedger(_ context.Context, rel string, line func([]byte) error) error {
	w.mu.Lock()
	data, err := w.ledgerBytes(rel)
	w.mu.Unlock()
	if err != nil {
		return err
	}
	if data == nil {
		return ports.ErrMissing
	}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return line(data)
		}
		if err := line(data[:i+1]); err != nil {
			return err
		}
		data = data[i+1:]
	}
	return nil
}

// ledgerBytes reads the whole ledger: nil when it does not exist.
func (w *Workspace) ledgerBytes(rel string) ([]byte, error) {
	fi, err := w.fs.Stat(w.abs(rel))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, ports.ErrNotRegular
	}
	data, err := afero.ReadFile(w.fs, w.abs(rel))
	if data == nil && err == nil {
		data = []byte{}
	}
	return data, err
}

// lastLine is the last line of nonempty data, its newline included.
func lastLine(data []byte) []byte {
	if i := bytes.LastIndexByte(data[:len(data)-1], '\n'); i >= 0 {
		return data[i+1:]
	}
	return data
}
