//go:build unix

package osfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/ports"
)

// What only a real disk shows of the ledger store: the contract suite
// (porttest.LedgerStore) covers the rest on both adapters.

// openLedgerWorkspace opens a fresh workspace on disk holding ledger.jsonl
// with content (none when content is nil).
func openLedgerWorkspace(t *testing.T, content []byte) (*Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	if content != nil {
		if err := os.WriteFile(filepath.Join(dir, "ledger.jsonl"), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, filepath.Join(dir, "ledger.jsonl")
}

// appendOnce appends one record as a call does: the lock, one append
// through the hold, the release.
func (w *Workspace) appendOnce(rel string, wait time.Duration, record func(last []byte) ([]byte, error)) error {
	held, err := w.lockAt(context.Background(), rel, wait)
	if err != nil {
		return err
	}
	defer held.Release()
	return held.Append(record)
}

// fileBytes reads a file, failing the test if it cannot.
func fileBytes(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// line returns a record function that appends s and remembers the last
// line it was shown.
func line(s string, seen *string) func([]byte) ([]byte, error) {
	return func(last []byte) ([]byte, error) {
		if seen != nil {
			*seen = string(last)
		}
		return []byte(s), nil
	}
}

// A ledger whose earlier part is a 1 TiB hole (a sparse file: no disk
// space, but a terabyte for anyone who reads it) gives its last line at
// once, to LastLine and to Append alike: neither reads more than the end.
// A store that scanned from the start would never finish this test.
func TestTheLastLineOfAHugeLedgerIsReadFromTheEnd(t *testing.T) {
	is := is.New(t)
	ws, path := openLedgerWorkspace(t, nil)
	f, err := os.Create(path)
	is.NoErr(err)
	const hole = 1 << 40
	is.NoErr(f.Truncate(hole))
	_, err = f.WriteAt([]byte("\nthe last record\n"), hole)
	is.NoErr(err)
	is.NoErr(f.Close())

	last, err := ws.lastLineAt(context.Background(), "ledger.jsonl")
	is.NoErr(err)
	is.Equal(string(last), "the last record\n")
	var seen string
	is.NoErr(ws.appendOnce("ledger.jsonl", time.Second, line("the next record\n", &seen)))
	is.Equal(seen, "the last record\n")
	fi, err := os.Stat(path)
	is.NoErr(err)
	is.Equal(fi.Size(), int64(hole+len("\nthe last record\nthe next record\n")))
	last, err = ws.lastLineAt(context.Background(), "ledger.jsonl")
	is.NoErr(err)
	is.Equal(string(last), "the next record\n")
}

// No read of a ledger line holds more than maxLedgerLineBytes of it: a
// 4 MiB line is handed over cut, by LastLine at its end and by Scan
// wherever it is, and the lines after it are still read whole.
func TestALedgerLineIsReadWithinItsBound(t *testing.T) {
	is := is.New(t)
	long := strings.Repeat("x", 4<<20)
	ws, _ := openLedgerWorkspace(t, []byte("first\n"+long+"\nafter\n"+long))
	last, err := ws.lastLineAt(context.Background(), "ledger.jsonl")
	is.NoErr(err)
	is.Equal(len(last), maxLedgerLineBytes) // the torn last line, cut
	var lens []int
	var texts []string
	is.NoErr(ws.scanAt(context.Background(), "ledger.jsonl", func(data []byte) error {
		lens = append(lens, len(data))
		texts = append(texts, string(data[:min(len(data), 6)]))
		return nil
	}))
	is.Equal(lens, []int{6, maxLedgerLineBytes, 6, maxLedgerLineBytes})
	is.Equal(texts, []string{"first\n", "xxxxxx", "after\n", "xxxxxx"})
}

// flockOther takes the flock how on path through an open file description
// of its own, as another process would; the lock is dropped at cleanup or
// by the returned release.
func flockOther(t *testing.T, path string, how int) (release func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { f.Close() }) }
	t.Cleanup(release)
	return release
}

// A ledger locked by someone else (exclusively, or shared as a pre-check
// holds it) makes an append wait, then give up with ErrBusy: the record is
// never built and the ledger is unchanged. Once the lock is gone the
// append goes through.
func TestALockedLedgerMakesTheAppendBusy(t *testing.T) {
	for _, how := range []int{unix.LOCK_EX, unix.LOCK_SH} {
		t.Run(map[int]string{unix.LOCK_EX: "exclusive", unix.LOCK_SH: "shared"}[how], func(t *testing.T) {
			is := is.New(t)
			ws, path := openLedgerWorkspace(t, []byte("one\n"))
			release := flockOther(t, path, how)
			built := false
			err := ws.appendOnce("ledger.jsonl", 50*time.Millisecond, func([]byte) ([]byte, error) {
				built = true
				return []byte("two\n"), nil
			})
			is.True(errors.Is(err, ports.ErrBusy))
			is.True(!built) // the record was not built under someone else's lock
			is.Equal(fileBytes(t, path), "one\n")

			release()
			// A wait of its own, not 50 ms: the first wait's abandoned flock
			// must get the lock and let go first, however busy the machine.
			is.NoErr(ws.appendOnce("ledger.jsonl", time.Minute, line("two\n", nil)))
			is.Equal(fileBytes(t, path), "one\ntwo\n")
		})
	}
}

// A pre-check reads the last line under a shared lock, so another shared
// holder does not stop it.
func TestTheLastLineIsReadBesideAnotherSharedHolder(t *testing.T) {
	is := is.New(t)
	ws, path := openLedgerWorkspace(t, []byte("one\n"))
	flockOther(t, path, unix.LOCK_SH)
	last, err := ws.lastLineAt(context.Background(), "ledger.jsonl")
	is.NoErr(err)
	is.Equal(string(last), "one\n")
}

// An append waits for a lock that is released within its wait, and builds
// its record only after the release.
func TestAnAppendWaitsForTheLock(t *testing.T) {
	is := is.New(t)
	ws, path := openLedgerWorkspace(t, []byte("one\n"))
	release := flockOther(t, path, unix.LOCK_EX)
	var mu sync.Mutex
	released := false
	done := make(chan error, 1)
	go func() {
		done <- ws.appendOnce("ledger.jsonl", time.Minute, func([]byte) ([]byte, error) {
			mu.Lock()
			defer mu.Unlock()
			if !released {
				return nil, errors.New("the record was built while another held the lock")
			}
			return []byte("two\n"), nil
		})
	}()
	eventually(t, "the append waits in the kernel", func() bool { return kernelWaits(t, path) == 1 })
	mu.Lock()
	released = true
	mu.Unlock()
	release()
	is.NoErr(<-done)
	is.Equal(fileBytes(t, path), "one\ntwo\n")
}

// Appends from many goroutines of one process, and from two workspace
// values as two processes would hold them, still chain: each record sees
// the line before it, none is lost or torn. flock locks an open file
// description, and each append opens its own.
func TestConcurrentAppendsChain(t *testing.T) {
	is := is.New(t)
	ws, path := openLedgerWorkspace(t, nil)
	other, err := Open(filepath.Dir(path))
	is.NoErr(err)
	defer other.Close()
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		w := ws
		if i%2 == 1 {
			w = other
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- w.appendOnce("ledger.jsonl", time.Minute, func(last []byte) ([]byte, error) {
				seq := 0
				if last != nil {
					if _, err := fmt.Sscanf(string(last), "%d\n", &seq); err != nil {
						return nil, err
					}
				}
				return fmt.Appendf(nil, "%d\n", seq+1), nil
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		is.NoErr(err)
	}
	var want strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	is.Equal(fileBytes(t, path), want.String()) // 1..n, each built on the one before
}

// A short write, with or without an error, is cut back to the ledger's
// length before it, still under the lock, and reported: the next append
// builds on the last whole record.
func TestAShortWriteIsCutBack(t *testing.T) {
	tests := []struct {
		name string
		err  error // what the write reports after writing half the line
		want error
	}{
		{"without an error", nil, io.ErrShortWrite},
		{"with a full disk", syscall.ENOSPC, ports.ErrNoSpace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ws, path := openLedgerWorkspace(t, []byte("one\n"))
			ws.write = func(f *os.File, b []byte) (int, error) {
				n, err := f.Write(b[:len(b)/2])
				if err != nil {
					return n, err
				}
				return n, tt.err
			}
			err := ws.appendOnce("ledger.jsonl", time.Second, line("a torn record\n", nil))
			is.True(errors.Is(err, tt.want)) // the failure is reported, with its cause
			is.Equal(fileBytes(t, path), "one\n")

			ws.write = (*os.File).Write
			var seen string
			is.NoErr(ws.appendOnce("ledger.jsonl", time.Second, line("two\n", &seen)))
			is.Equal(seen, "one\n")
			is.Equal(fileBytes(t, path), "one\ntwo\n")
		})
	}
}

// An append fsyncs the ledger, and its directory when it created the
// ledger. Whichever fsync fails, the record is cut back off, and the cut
// fsynced (the call will answer the failure, not the response the record
// holds), and the failure reported. A cut that cannot be flushed may not
// hold after a crash: ports.ErrRecordRemains.
func TestAppendSyncsAndCutsBackAFailedSync(t *testing.T) {
	is := is.New(t)
	ws, path := openLedgerWorkspace(t, nil)
	var synced []string
	ws.sync = func(f *os.File) error {
		rel, _ := filepath.Rel(filepath.Dir(path), f.Name())
		synced = append(synced, filepath.ToSlash(rel))
		return f.Sync()
	}
	is.NoErr(ws.appendOnce("ledger.jsonl", time.Second, line("one\n", nil)))
	is.Equal(synced, []string{"ledger.jsonl", "."}) // the new ledger, then its directory
	synced = nil
	is.NoErr(ws.appendOnce("ledger.jsonl", time.Second, line("two\n", nil)))
	is.Equal(synced, []string{"ledger.jsonl"}) // an existing ledger only

	for _, failAt := range []int{1, 2} {
		t.Run(fmt.Sprintf("fsync %d of a new ledger fails", failAt), func(t *testing.T) {
			is := is.New(t)
			ws, path := openLedgerWorkspace(t, nil)
			boom := errors.New("injected fsync failure")
			calls := 0
			ws.sync = func(f *os.File) error {
				calls++
				if calls == failAt {
					return boom
				}
				return f.Sync()
			}
			err := ws.appendOnce("ledger.jsonl", time.Second, line("one\n", nil))
			is.True(errors.Is(err, boom))
			is.True(!errors.Is(err, ports.ErrRecordRemains)) // cut back for good
			is.Equal(fileBytes(t, path), "")                 // created, but holding no record
		})
	}
	t.Run("the fsync of an existing ledger fails", func(t *testing.T) {
		is := is.New(t)
		ws, path := openLedgerWorkspace(t, []byte("one\n"))
		boom := errors.New("injected fsync failure")
		ws.sync = func(*os.File) error { return boom }
		err := ws.appendOnce("ledger.jsonl", time.Second, line("two\n", nil))
		is.True(errors.Is(err, boom))
		is.True(errors.Is(err, ports.ErrRecordRemains)) // the cut's own fsync failed as well
		is.Equal(fileBytes(t, path), "one\ntwo\n")      // the cut undone: written back, as the call answers
	})
}

// A FIFO at the ledger's path is not a ledger: every operation says so at
// once, and none blocks on it.
func TestAFIFOIsNotALedger(t *testing.T) {
	is := is.New(t)
	ws, path := openLedgerWorkspace(t, nil)
	is.NoErr(unix.Mkfifo(path, 0o644))
	_, err := ws.lastLineAt(context.Background(), "ledger.jsonl")
	is.True(errors.Is(err, ports.ErrNotRegular)) // LastLine
	err = ws.appendOnce("ledger.jsonl", time.Second, line("one\n", nil))
	is.True(errors.Is(err, ports.ErrNotRegular)) // Append
	err = ws.scanAt(context.Background(), "ledger.jsonl", func([]byte) error { return nil })
	is.True(errors.Is(err, ports.ErrNotRegular)) // Scan
}

// LastLine's wait for another process's lock ends when its context does:
// the call was cancelled, and says so, rather than ErrBusy 10 s later.
func TestLastLineStopsWaitingWhenCancelled(t *testing.T) {
	is := is.New(t)
	ws, path := openLedgerWorkspace(t, []byte("one\n"))
	holder, err := os.Open(path)
	is.NoErr(err)
	defer holder.Close()
	is.NoErr(unix.Flock(int(holder.Fd()), unix.LOCK_EX))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ws.lastLineAt(ctx, "ledger.jsonl")
	is.True(errors.Is(err, context.Canceled))
}

// A cut that cannot be flushed is undone by writing the record back; what
// that write leaves decides what the error says may remain: the whole
// record, none of it (a crash may still bring the cut record back), or a
// torn part.
func TestAWriteBackSaysWhatItLeft(t *testing.T) {
	tests := []struct {
		name   string
		back   int // bytes of "two\n" the write-back writes
		ledger string
		torn   bool
	}{
		{"written back whole", 4, "one\ntwo\n", false},
		{"not written back", 0, "one\n", false},
		{"written back in part", 2, "one\ntw", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ws, path := openLedgerWorkspace(t, []byte("one\n"))
			boom := errors.New("injected fsync failure")
			ws.sync = func(*os.File) error { return boom }
			writes := 0
			ws.write = func(f *os.File, b []byte) (int, error) {
				writes++
				if writes == 1 {
					return f.Write(b) // the record, whole
				}
				n, _ := f.Write(b[:tt.back])
				if n < len(b) {
					return n, errors.New("injected write failure")
				}
				return n, nil
			}
			err := ws.appendOnce("ledger.jsonl", time.Second, line("two\n", nil))
			is.True(errors.Is(err, boom))
			is.Equal(errors.Is(err, ports.ErrTornRemains), tt.torn)
			is.Equal(errors.Is(err, ports.ErrRecordRemains), !tt.torn)
			is.Equal(fileBytes(t, path), tt.ledger)
		})
	}
}
