package osfs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"
	"time"

	"github.com/metricproof/metricproof/ports"
)

var _ ports.LedgerStore = (*Workspace)(nil)

// maxLedgerLineBytes bounds how much of one ledger line is ever read: a
// record is well under 1 KiB, so a longer line is damage, and this much of
// it is enough to say so.
const maxLedgerLineBytes = 64 << 10

// readLockWait is the period of a read's wait for the ledger's shared
// flock (flock.go): an append's (protocol §11's 10 s), so that ErrBusy
// means the same wait to the app either way.
const readLockWait = 10 * time.Second

// LastLine implements ports.LedgerStore. It reads backwards from the end,
// at most maxLedgerLineBytes, under a shared flock, and changes nothing:
// a damaged ledger is refused as it was found, its mode included.
func (w *Workspace) LastLine(ctx context.Context, rel string) (_ []byte, err error) {
	defer func() { err = withCause(err) }()
	if err := canLock(); err != nil {
		return nil, err
	}
	f, err := w.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, classify(err)
	}
	if err := regular(f); err != nil {
		f.Close()
		return nil, err
	}
	l, err := lockWithin(ctx, w.gateFor(rel), f, lockShared, readLockWait)
	if err != nil {
		return nil, err
	}
	defer l.release()
	return lastLine(f)
}

// Lock implements ports.LedgerStore. The ledger is opened for this one
// hold, so its flock excludes every other holder, in this process too
// (the gate queues those before the kernel does).
func (w *Workspace) Lock(ctx context.Context, rel string, wait time.Duration) (_ ports.HeldLedger, err error) {
	defer func() { err = withCause(err) }()
	if err := canLock(); err != nil {
		return nil, err
	}
	created := false
	f, err := w.root.OpenFile(rel, os.O_RDWR|os.O_APPEND|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = w.root.OpenFile(rel, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, lockFileMode)
		created = err == nil
		if errors.Is(err, fs.ErrExist) { // another call created it meanwhile
			f, err = w.root.OpenFile(rel, os.O_RDWR|os.O_APPEND|syscall.O_NONBLOCK, 0)
		}
	}
	switch {
	case errors.Is(err, syscall.EISDIR):
		return nil, ports.ErrNotRegular
	case err != nil:
		return nil, classify(err)
	}
	if err := regular(f); err != nil {
		f.Close()
		return nil, err
	}
	// Before the wait, so that a ledger an earlier version made 0644 is
	// closed to other accounts' next opens even while one of them holds
	// its lock (no descriptor already open is revoked).
	if err := w.private(f); err != nil {
		f.Close()
		return nil, err
	}
	l, err := lockWithin(ctx, w.gateFor(rel), f, lockExclusive, wait)
	if err != nil {
		return nil, err
	}
	return &heldLedger{w: w, rel: rel, l: l, created: created}, nil
}

// heldLedger is the ledger under this process's exclusive flock.
type heldLedger struct {
	w        *Workspace
	rel      string
	l        *flocked
	created  bool // Lock created the file: its directory is fsynced after the first record
	appended bool
}

func (h *heldLedger) LastLine() (_ []byte, err error) {
	defer func() { err = withCause(err) }()
	return lastLine(h.l.f)
}

func (h *heldLedger) Release() error { return h.l.release() }

func (h *heldLedger) Append(record func(last []byte) ([]byte, error)) (err error) {
	defer func() { err = withCause(err) }()
	if h.appended {
		return errors.New("the held ledger was appended to already")
	}
	h.appended = true
	f := h.l.f
	last, err := lastLine(f)
	if err != nil {
		return err
	}
	line, err := record(last)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if n, err := h.w.write(f, line); err != nil || n != len(line) {
		if err == nil {
			err = io.ErrShortWrite
		}
		// A short write leaves a torn line: cut it off, still under the
		// lock, so the next call can build on the ledger.
		return cutBack(f, fi.Size(), err)
	}
	// A record whose fsync failed may or may not be on the disk, and the
	// call will not answer what it holds: cut it off as well, so that the
	// ledger never records a response that was not sent.
	if err := h.w.sync(f); err != nil {
		return cutBack(f, fi.Size(), err)
	}
	if h.created {
		d, err := h.w.root.Open(path.Dir(h.rel))
		if err == nil {
			err = h.w.sync(d)
			d.Close()
		}
		if err != nil {
			return cutBack(f, fi.Size(), err)
		}
	}
	return nil
}

// cutBack truncates the ledger back to size after a failed append, and
// returns the append's error, joined with the truncation's if that failed
// too.
func cutBack(f *os.File, size int64, err error) error {
	if terr := f.Truncate(size); terr != nil {
		return errors.Join(err, terr, errors.New("the torn record could not be cut off"))
	}
	return err
}

// ScanLedger implements ports.LedgerStore. It holds the shared flock only
// to learn the ledger's length, then reads that much: bytes before it are
// never rewritten (appends add after it, and a failed append cuts back
// only its own bytes), and a long scan never holds an append up. A line
// longer than maxLedgerLineBytes is handed over cut at that length.
func (w *Workspace) ScanLedger(ctx context.Context, rel string, line func([]byte) error) (err error) {
	defer func() { err = withCause(err) }()
	if err := canLock(); err != nil {
		return err
	}
	f, err := w.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return classify(err)
	}
	if err := regular(f); err != nil {
		f.Close()
		return err
	}
	l, err := lockWithin(ctx, w.gateFor(rel), f, lockShared, readLockWait)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if uerr := l.unlock(); err == nil {
		err = uerr
	}
	if err != nil {
		return err
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, fi.Size()), 64<<10)
	for {
		data, err := readLine(r)
		if len(data) > 0 {
			if lerr := line(data); lerr != nil {
				return lerr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readLine reads one line with its newline, keeping at most
// maxLedgerLineBytes of it and skipping the rest.
func readLine(r *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(out) < maxLedgerLineBytes {
			out = append(out, chunk[:min(len(chunk), maxLedgerLineBytes-len(out))]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return out, err
	}
}

// regular refuses anything but a regular file.
func regular(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return ports.ErrNotRegular
	}
	return nil
}

// lastLine reads the last line of f, with its newline, from the end
// backwards: at most maxLedgerLineBytes. nil for an empty file.
func lastLine(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if size == 0 {
		return nil, nil
	}
	n := min(size, maxLedgerLineBytes+1)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-n); err != nil && err != io.EOF {
		return nil, err
	}
	// The line ends at the file's end; it starts after the newline before
	// its own last byte.
	if i := bytes.LastIndexByte(buf[:n-1], '\n'); i >= 0 {
		return buf[i+1:], nil
	}
	if n > maxLedgerLineBytes {
		return buf[1:], nil // no line start within reach: damage, cut
	}
	return buf, nil
}
