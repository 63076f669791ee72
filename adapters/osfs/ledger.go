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
	"path/filepath"
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

// OpenLedger implements ports.LedgerStore. The ledger's directory is
// opened once, one component at a time without following a symlink
// (openDir), and every later access opens the ledger by its name in that
// directory, with O_NOFOLLOW (openAt): a directory on the path swapped
// for a symlink after this cannot lead a read or a record anywhere else.
func (w *Workspace) OpenLedger(rel string) (_ ports.Ledger, err error) {
	defer func() { err = withCause(err) }()
	dir, err := w.openDir(path.Dir(rel))
	if err != nil {
		return nil, err
	}
	return &ledger{w: w, dir: dir, name: path.Base(rel), label: filepath.Join(w.real, filepath.FromSlash(rel)), g: w.gateFor(rel)}, nil
}

// ledger is the call ledger, its directory opened once.
type ledger struct {
	w     *Workspace
	dir   *os.File // the ledger's directory
	name  string   // the ledger's name in dir
	label string   // the name its open files carry (never shown)
	g     *gate    // this process's queue for its flock
}

// open opens the ledger in its directory, never through a symlink (that
// is ErrNotRegular, as a directory or a FIFO is: O_NONBLOCK, so a FIFO
// never blocks).
func (l *ledger) open(flag int, perm fs.FileMode) (*os.File, error) {
	f, err := openAt(l.dir, l.name, flag|syscall.O_NONBLOCK, perm, l.label)
	switch {
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EISDIR):
		return nil, ports.ErrNotRegular
	case err != nil:
		return nil, classify(err)
	}
	if err := regular(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Close implements ports.Ledger.
func (l *ledger) Close() error { return l.dir.Close() }

// LastLine implements ports.Ledger. It reads backwards from the end, at
// most maxLedgerLineBytes, under a shared flock, and changes nothing: a
// damaged ledger is refused as it was found, its mode included.
func (l *ledger) LastLine(ctx context.Context) (_ []byte, err error) {
	defer func() { err = withCause(err) }()
	if err := canLock(); err != nil {
		return nil, err
	}
	f, err := l.open(os.O_RDONLY, 0)
	switch {
	case errors.Is(err, ports.ErrMissing):
		return nil, nil
	case err != nil:
		return nil, err
	}
	// The call that reads the last line goes on to append to the ledger:
	// one that is another name of a file elsewhere is refused before any
	// work.
	if err := oneName(f); err != nil {
		f.Close()
		return nil, err
	}
	fl, err := lockWithin(ctx, l.g, f, lockShared, readLockWait)
	if err != nil {
		return nil, err
	}
	defer fl.release()
	return lastLine(f)
}

// Lock implements ports.Ledger. The ledger is opened for this one hold,
// so its flock excludes every other holder, in this process too (the gate
// queues those before the kernel does).
func (l *ledger) Lock(ctx context.Context, wait time.Duration) (_ ports.HeldLedger, err error) {
	defer func() { err = withCause(err) }()
	if err := canLock(); err != nil {
		return nil, err
	}
	created := false
	f, err := l.open(os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, ports.ErrMissing) {
		f, err = l.open(os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, lockFileMode)
		created = err == nil
		if errors.Is(err, fs.ErrExist) { // another call created it meanwhile
			f, err = l.open(os.O_RDWR|os.O_APPEND, 0)
		}
	}
	if err != nil {
		return nil, err
	}
	if err := oneName(f); err != nil {
		f.Close()
		return nil, err
	}
	// Before the wait, so that a ledger an earlier version made 0644 is
	// closed to other accounts' next opens even while one of them holds
	// its lock (no descriptor already open is revoked).
	if err := l.w.private(f); err != nil {
		f.Close()
		return nil, err
	}
	h := &heldLedger{w: l.w}
	if created {
		// The directory is fsynced after the first record, through a
		// descriptor of the hold's own: the hold may outlive the ledger's
		// Close (a server stopping while a call records).
		if h.dir, err = openAt(l.dir, ".", os.O_RDONLY|oDirectory, 0, filepath.Dir(l.label)); err != nil {
			f.Close()
			return nil, err
		}
	}
	if h.l, err = lockWithin(ctx, l.g, f, lockExclusive, wait); err != nil {
		h.closeDir()
		return nil, err
	}
	return h, nil
}

// heldLedger is the ledger under this process's exclusive flock.
type heldLedger struct {
	w *Workspace
	// dir is the ledger's directory when Lock created the file, to be
	// fsynced after the first record; nil otherwise.
	dir      *os.File
	l        *flocked
	appended bool
}

// closeDir closes the hold's descriptor of the directory, if it has one.
func (h *heldLedger) closeDir() {
	if h.dir != nil {
		h.dir.Close()
		h.dir = nil
	}
}

func (h *heldLedger) LastLine() (_ []byte, err error) {
	defer func() { err = withCause(err) }()
	return lastLine(h.l.f)
}

func (h *heldLedger) Release() error {
	h.closeDir()
	return h.l.release()
}

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
	n, err := h.w.write(f, line)
	if err != nil || n != len(line) {
		if err == nil {
			err = io.ErrShortWrite
		}
		// A short write leaves a torn line: cut it off, still under the
		// lock, so the next call can build on the ledger.
		return h.cutBack(f, fi.Size(), nil, err)
	}
	// A record whose fsync failed may or may not be on the disk, and the
	// call will not answer what it holds: cut it off as well, so that the
	// ledger never records a response that was not sent.
	if err := h.w.sync(f); err != nil {
		return h.cutBack(f, fi.Size(), line, err)
	}
	if h.dir != nil {
		if err := h.w.sync(h.dir); err != nil {
			return h.cutBack(f, fi.Size(), line, err)
		}
	}
	return nil
}

// cutBack truncates the ledger back to size after a failed append, and
// returns the append's error. A whole record (line, nil for a torn one)
// may have reached the disk before its fsync failed, so the cut is fsynced
// as well: else a crash could bring back a record of a response that was
// not sent. When the cut fails, or cannot be flushed, the error says what
// may remain: ports.ErrRecordRemains for a whole record (the call must
// then answer what it holds), ports.ErrTornRemains for a part of one. A
// cut made but not flushed is undone (the record written back): the call
// answers as recorded, so the ledger holds that record now, and a crash
// can at worst lose it.
func (h *heldLedger) cutBack(f *os.File, size int64, line []byte, err error) error {
	terr := h.w.truncate(f, size)
	if terr != nil {
		if line == nil {
			return errors.Join(ports.ErrTornRemains, err, terr)
		}
		return errors.Join(ports.ErrRecordRemains, err, terr)
	}
	if line == nil {
		return err
	}
	if serr := h.w.sync(f); serr != nil {
		if n, werr := h.w.write(f, line); n > 0 && (werr != nil || n != len(line)) {
			// Written back in part: a torn part of the record stays.
			return errors.Join(ports.ErrTornRemains, err, serr)
		}
		// Written back whole, or not at all (then the ledger lacks the
		// record now, and a crash may bring back the unflushed cut's
		// record): either way it may remain.
		return errors.Join(ports.ErrRecordRemains, err, serr)
	}
	return err
}

// Scan implements ports.Ledger. It holds the shared flock only to learn
// the ledger's length, then reads that much: bytes before it are never
// rewritten (appends add after it, and a failed append cuts back only its
// own bytes), and a long scan never holds an append up. A line longer
// than maxLedgerLineBytes is handed over cut at that length.
func (l *ledger) Scan(ctx context.Context, line func([]byte) error) (err error) {
	defer func() { err = withCause(err) }()
	if err := canLock(); err != nil {
		return err
	}
	f, err := l.open(os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	fl, err := lockWithin(ctx, l.g, f, lockShared, readLockWait)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if uerr := fl.unlock(); err == nil {
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
