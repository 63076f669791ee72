//go:build unix

package osfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/ports"
)

// The ledger's waits on a real kernel (protocol §11): they sleep in flock(2),
// one per file per process, and end at once on cancellation while another
// process holds the lock. The kernel lists every flock request that waits
// in /proc/locks ("->"), which is how these tests see the waits.

// kernelWaits counts this process's flock requests on path that wait in
// the kernel.
func kernelWaits(t *testing.T, path string) int {
	t.Helper()
	return flocksOf(t, path, true)
}

// flocksOf counts this process's flock entries on path in /proc/locks:
// the waiting requests when waiting, else the locks held.
func flocksOf(t *testing.T, path string, waiting bool) int {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ino := ":" + strconv.FormatUint(fi.Sys().(*syscall.Stat_t).Ino, 10)
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Skip("no /proc/locks here")
	}
	pid := strconv.Itoa(os.Getpid())
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if waiting && len(f) > 6 && f[1] == "->" && f[2] == "FLOCK" && f[5] == pid && strings.HasSuffix(f[6], ino) {
			n++
		}
		if !waiting && len(f) > 5 && f[1] == "FLOCK" && f[4] == pid && strings.HasSuffix(f[5], ino) {
			n++
		}
	}
	return n
}

// eventually waits until cond holds: an event to wait for, not a time to
// assert; the bound only stops a hang.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("never: %s", what)
}

// Eight callers of one process wait for a ledger that another open file
// description holds: only one of them waits in the kernel, the others
// queue in the process. Once the holder lets go, every one gets its turn
// and appends, each on the line before.
func TestAProcessWaitsInTheKernelOncePerLedger(t *testing.T) {
	is := is.New(t)
	ws, path := openLedgerWorkspace(t, []byte("0\n"))
	release := flockOther(t, path, unix.LOCK_EX)
	const n = 8
	var started, wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		started.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			started.Done()
			errs <- ws.appendOnce("ledger.jsonl", time.Minute, func(last []byte) ([]byte, error) {
				var seq int
				if _, err := fmt.Sscanf(string(last), "%d\n", &seq); err != nil {
					return nil, err
				}
				return fmt.Appendf(nil, "%d\n", seq+1), nil
			})
		}()
	}
	started.Wait()
	eventually(t, "a caller waits in the kernel", func() bool { return kernelWaits(t, path) > 0 })
	time.Sleep(100 * time.Millisecond) // room for a wrong second kernel wait to show; not needed for the answer
	is.Equal(kernelWaits(t, path), 1)  // one blocked flock, however many callers
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		is.NoErr(err)
	}
	is.Equal(fileBytes(t, path), "0\n1\n2\n3\n4\n5\n6\n7\n8\n")
	is.Equal(flocksOf(t, path, false), 0) // every lock let go
}

// A wait in the kernel ends at once on cancellation. Its flock stays
// blocked, and keeps the process's turn, so no second kernel wait starts:
// a second cancelled caller ends at once too, while one that is not
// cancelled queues. When the holder lets go, the abandoned flock takes
// the lock, lets it go and closes its file, and the queued caller gets it.
func TestACancelledKernelWaitEndsAtOnceAndItsFlockLetsGoLater(t *testing.T) {
	is := is.New(t)
	ws, path := openLedgerWorkspace(t, []byte("one\n"))
	release := flockOther(t, path, unix.LOCK_EX)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := ws.lastLineAt(ctx, "ledger.jsonl")
		first <- err
	}()
	eventually(t, "the pre-check waits in the kernel", func() bool { return kernelWaits(t, path) == 1 })
	cancel()
	is.True(errors.Is(<-first, context.Canceled)) // at once: the holder still holds

	_, err := ws.lastLineAt(ctx, "ledger.jsonl")
	is.True(errors.Is(err, context.Canceled)) // queued behind a kernel wait: ends at once too
	_, err = ws.lockAt(ctx, "ledger.jsonl", time.Minute)
	is.True(errors.Is(err, context.Canceled))
	is.Equal(kernelWaits(t, path), 1) // still the one abandoned flock

	queued := make(chan error, 1)
	go func() {
		queued <- ws.appendOnce("ledger.jsonl", time.Minute, line("two\n", nil))
	}()
	time.Sleep(50 * time.Millisecond) // let it queue; not needed for the answer
	is.Equal(kernelWaits(t, path), 1)
	release()
	is.NoErr(<-queued) // its turn came once the abandoned flock let go
	is.Equal(fileBytes(t, path), "one\ntwo\n")
	eventually(t, "every lock let go", func() bool { return flocksOf(t, path, false) == 0 && kernelWaits(t, path) == 0 })
}

// A wait in the process for a holder of this process (working under the
// lock, so it lets go by itself) is not cut short by cancellation: a
// cancelled call still reads the ledger once the holder is done, rather
// than answering CANCELLED unrecorded. (Such a wait still runs out: the
// contract suite's "a held ledger excludes every other holder".)
func TestACancelledCallWaitsForAHolderOfThisProcess(t *testing.T) {
	is := is.New(t)
	ws, _ := openLedgerWorkspace(t, []byte("one\n"))
	held, err := ws.lockAt(context.Background(), "ledger.jsonl", time.Second)
	is.NoErr(err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := make(chan error, 1)
	go func() {
		last, err := ws.lastLineAt(ctx, "ledger.jsonl")
		if err == nil && string(last) != "two\n" {
			err = fmt.Errorf("read %q before the holder was done", last)
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond) // room for a wrong early answer; not needed for the answer
	is.NoErr(held.Append(line("two\n", nil)))
	is.NoErr(held.Release())
	is.NoErr(<-got)
}

// A wait that runs out while its flock is still blocked returns ErrBusy;
// the flock lets go once the holder does, and the next caller gets the
// lock.
func TestAWaitThatRunsOutLeavesNoLockBehind(t *testing.T) {
	is := is.New(t)
	ws, path := openLedgerWorkspace(t, []byte("one\n"))
	release := flockOther(t, path, unix.LOCK_SH)
	_, err := ws.lockAt(context.Background(), "ledger.jsonl", 20*time.Millisecond)
	is.True(errors.Is(err, ports.ErrBusy))
	is.Equal(kernelWaits(t, path), 1) // its flock, still blocked
	release()
	is.NoErr(ws.appendOnce("ledger.jsonl", time.Minute, line("two\n", nil)))
	eventually(t, "every lock let go", func() bool { return flocksOf(t, path, false) == 0 && kernelWaits(t, path) == 0 })
}

// A lock file open to group or others whose mode this process may not
// change (another account owns it; injected, since CI runs as root) is
// ErrLockExposed, and nothing is locked or waited for: the writer lock is
// not taken, and the ledger's wait does not begin, even with its lock
// held elsewhere.
func TestALockFileThatCannotBeMadePrivateIsExposed(t *testing.T) {
	is := is.New(t)
	ws, path := openLedgerWorkspace(t, []byte("one\n"))
	is.NoErr(os.MkdirAll(filepath.Join(ws.real, "runs"), 0o755))
	is.NoErr(os.WriteFile(filepath.Join(ws.real, "runs", ports.LockFile), nil, 0o644))
	ws.chmod = func(f *os.File, _ fs.FileMode) error {
		return &fs.PathError{Op: "fchmod", Path: f.Name(), Err: syscall.EPERM}
	}
	_, err := ws.OpenWriter("runs")
	is.True(errors.Is(err, ports.ErrLockExposed))
	is.True(tryFlock(t, filepath.Join(ws.real, "runs", ports.LockFile)) == nil) // not taken

	flockOther(t, path, unix.LOCK_EX)
	_, err = ws.lockAt(context.Background(), "ledger.jsonl", time.Hour)
	is.True(errors.Is(err, ports.ErrLockExposed)) // at once, not after the hour
	is.Equal(kernelWaits(t, path), 0)

	ws.chmod = (*os.File).Chmod
	w, err := ws.OpenWriter("runs")
	is.NoErr(err)
	is.NoErr(w.Close())
	fi, err := os.Stat(filepath.Join(ws.real, "runs", ports.LockFile))
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), fs.FileMode(0o600))
}

// tryFlock takes and drops LOCK_EX|LOCK_NB on path through a fresh open
// file description.
func tryFlock(t *testing.T, path string) error {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}
