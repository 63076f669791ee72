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

	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/ports"
)

var _ ports.LedgerStore = (*Workspace)(nil)

// maxLedgerLineBytes bounds how much of one ledger line is ever read: a
// record is well under 1 KiB, so a longer line is damage, and this much of
// it is enough to say so.
const maxLedgerLineBytes = 64 << 10

// readLockWait is how long a read of the ledger waits for its shared
// flock: as long as an append waits for its exclusive one (SPEC §11's
// 10 s), so that ErrBusy means the same wait to the app either way.
const readLockWait = 10 * time.Second

// lockPollInterval is how often a waiting lock is tried again.
const lockPollInterval = 5 * time.Millisecond

// LastLine implements ports.LedgerStore. It reads backwards from the end,
// at most maxLedgerLineBytes, under a shared flock.
func (w *Workspace) LastLine(ctx context.Context, rel string) (_ []byte, err error) {
	defer func() { err = withCause(err) }()
	f, err := w.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, classify(err)
	}
	defer f.Close()
	if err := regular(f); err != nil {
		return nil, err
	}
	if err := lockWithin(ctx, f, unix.LOCK_SH, readLockWait); err != nil {
		return nil, err
	}
	return lastLine(f)
}

// Append implements ports.LedgerStore. The ledger is opened for this one
// append, so its flock excludes every other append, in this process too.
func (w *Workspace) Append(rel string, wait time.Duration, record func(last []byte) ([]byte, error)) (err error) {
	defer func() { err = withCause(err) }()
	created := false
	f, err := w.root.OpenFile(rel, os.O_RDWR|os.O_APPEND|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = w.root.OpenFile(rel, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
		created = err == nil
		if errors.Is(err, fs.ErrExist) { // another call created it meanwhile
			f, err = w.root.OpenFile(rel, os.O_RDWR|os.O_APPEND|syscall.O_NONBLOCK, 0)
		}
	}
	switch {
	case errors.Is(err, syscall.EISDIR):
		return ports.ErrNotRegular
	case err != nil:
		return classify(err)
	}
	defer f.Close() // closing releases the flock
	if err := regular(f); err != nil {
		return err
	}
	// The record is the call's outcome, already decided: it waits its whole
	// time, whatever cancels the call meanwhile.
	if err := lockWithin(context.Background(), f, unix.LOCK_EX, wait); err != nil {
		return err
	}
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
	if n, err := w.write(f, line); err != nil || n != len(line) {
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
	if err := w.sync(f); err != nil {
		return cutBack(f, fi.Size(), err)
	}
	if created {
		d, err := w.root.Open(path.Dir(rel))
		if err == nil {
			err = w.sync(d)
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
func (w *Workspace) ScanLedger(rel string, line func([]byte) error) (err error) {
	defer func() { err = withCause(err) }()
	f, err := w.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return classify(err)
	}
	defer f.Close()
	if err := regular(f); err != nil {
		return err
	}
	if err := lockWithin(context.Background(), f, unix.LOCK_SH, readLockWait); err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
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

// lockWithin takes the flock how on f, trying again until wait has passed
// (then ports.ErrBusy) or ctx is done (then its error).
func lockWithin(ctx context.Context, f *os.File, how int, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, unix.EWOULDBLOCK):
			return err
		case time.Now().After(deadline):
			return ports.ErrBusy
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(lockPollInterval):
		}
	}
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
