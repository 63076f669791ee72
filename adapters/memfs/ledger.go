package memfs

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"time"

	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/ports"
)

var (
	_ ports.LedgerStore = (*Workspace)(nil)
	_ ports.Ledger      = (*ledger)(nil)
)

// OpenLedger implements ports.LedgerStore. The ledger's directory is opened
// once, and each access finds the ledger by that open directory's name at
// the time: afero's MemMapFs renames an open directory's data with it, so a
// directory renamed away and replaced keeps the ledger, as a directory
// handle does on a disk. There are no symlinks to follow.
func (w *Workspace) OpenLedger(rel string) (ports.Ledger, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	dir := w.abs(path.Dir(rel))
	fi, err := w.fs.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, ports.ErrMissing
	case err != nil:
		return nil, err
	case !fi.IsDir():
		return nil, ports.ErrNotDir
	}
	d, err := w.fs.Open(dir)
	if err != nil {
		return nil, err
	}
	return &ledger{w: w, rel: rel, dir: d, name: path.Base(rel), turn: w.ledgerTurn(rel)}, nil
}

// ledger is the call ledger, its directory opened once.
type ledger struct {
	w    *Workspace
	rel  string     // as opened: the key of its turn and its count of appends
	dir  afero.File // the ledger's directory; its Name follows a rename
	name string
	turn chan struct{} // the ledger's lock: a slot its holder fills
}

// path is where the ledger is now: in the directory that was opened.
func (l *ledger) path() string { return path.Join(l.dir.Name(), l.name) }

// Close implements ports.Ledger.
func (l *ledger) Close() error { return l.dir.Close() }

// LastLine implements ports.Ledger. The workspace's lock stands in for
// flock: it excludes every caller sharing this value.
func (l *ledger) LastLine(context.Context) ([]byte, error) {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	data, err := l.w.ledgerBytes(l.path())
	if err != nil || len(data) == 0 {
		return nil, err
	}
	return lastLine(data), nil
}

// Lock implements ports.Ledger. Every holder is of this process, so ctx
// never cuts a wait short, as the port says of a turn held in the process.
// The wait looks at the ledger's count of appends at the end of each
// period, as the port says.
func (l *ledger) Lock(_ context.Context, wait time.Duration) (ports.HeldLedger, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	after := l.w.after
	if after == nil {
		after = time.After
	}
	seen := l.appends()
	for periods := 1; ; periods++ {
		select {
		case l.turn <- struct{}{}:
			return &heldLedger{l: l}, nil
		case <-after(wait):
		}
		now := l.appends()
		switch {
		case now == seen:
			return nil, ports.ErrBusy
		case periods >= ports.MaxLockWaitPeriods:
			return nil, ports.ErrWaitedTooLong
		}
		seen = now
	}
}

// appends is how many appends the ledger has seen, failed ones too.
func (l *ledger) appends() int {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return l.w.appended[l.rel]
}

// check looks at the ledger before it is locked: something other than a
// regular file is ErrNotRegular, and an existing file that grants
// anything to group or others is set to mode 0600. A missing ledger is
// created, 0600, by its first append: a reader never sees it empty in
// between.
func (l *ledger) check() error {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	p := l.path()
	fi, err := l.w.fs.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return ports.ErrNotRegular
	}
	return l.w.private(p)
}

// private sets the mode of the file at the absolute path p to 0600 when it
// grants anything to group or others.
func (w *Workspace) private(p string) error {
	fi, err := w.fs.Stat(p)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	return w.fs.Chmod(p, 0o600)
}

// ledgerTurn is the channel whose one slot the holder of the ledger at rel
// fills.
func (w *Workspace) ledgerTurn(rel string) chan struct{} {
	turn := w.turns[rel]
	if turn == nil {
		turn = make(chan struct{}, 1)
		w.turns[rel] = turn
	}
	return turn
}

// heldLedger is the ledger while its turn is held.
type heldLedger struct {
	l        *ledger
	appended bool
	released bool
}

func (h *heldLedger) LastLine() ([]byte, error) { return h.l.LastLine(context.Background()) }

func (h *heldLedger) Append(record func(last []byte) ([]byte, error)) error {
	if h.appended {
		return errors.New("the held ledger was appended to already")
	}
	h.appended = true
	w := h.l.w
	w.mu.Lock()
	defer w.mu.Unlock()
	p := h.l.path()
	data, err := w.ledgerBytes(p)
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
	w.appended[h.l.rel]++
	f, err := w.fs.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
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
		<-h.l.turn
	}
	return nil
}

// Scan implements ports.Ledger.
func (l *ledger) Scan(_ context.Context, line func([]byte) error) error {
	l.w.mu.Lock()
	data, err := l.w.ledgerBytes(l.path())
	l.w.mu.Unlock()
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

// ledgerBytes reads the whole ledger at the absolute path p: nil when it
// does not exist.
func (w *Workspace) ledgerBytes(p string) ([]byte, error) {
	fi, err := w.fs.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, ports.ErrNotRegular
	}
	data, err := afero.ReadFile(w.fs, p)
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
