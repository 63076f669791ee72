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
	// Its flock, still blocked: the wait's timer starts before the flock
	// is asked for, so on a busy machine the flock may reach the kernel
	// after the wait ran out.
	eventually(t, "its flock waits in the kernel", func() bool { return kernelWaits(t, path) == 1 })
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

// fakePeriods stands in for the clock of a workspace's waits: every period
// a wait starts is announced on armed, and ends when the test fires it. A
// wait arms its next period only once it has looked at the ledger, so a
// test that has taken a period knows the look before it is done.
type fakePeriods struct{ armed chan chan time.Time }

func newFakePeriods(ws *Workspace) fakePeriods {
	c := fakePeriods{armed: make(chan chan time.Time, 2*ports.MaxLockWaitPeriods)}
	ws.after = func(time.Duration) <-chan time.Time {
		period := make(chan time.Time, 1)
		c.armed <- period
		return period
	}
	return c
}

// take returns the period a wait armed last, failing the test if the
// wait ended instead (its error arrives on ended).
func (c fakePeriods) take(t *testing.T, ended <-chan error) chan time.Time {
	t.Helper()
	select {
	case period := <-c.armed:
		return period
	case err := <-ended:
		t.Fatalf("the wait ended early: %v", err)
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("the wait never armed its period")
	}
	return nil
}

// record appends one line to the ledger at path as another process's call
// would under its lock.
func record(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// A wait lasts while the line moves: another process holds the lock for
// many periods, recording calls as holders in turn do, and the wait goes
// on; once it lets go, the waiter gets the lock. A period with no record
// ends a wait (ErrBusy: the holder keeps the lock without recording), and
// so does the last period allowed, however busy the ledger (a line that
// never ends).
func TestAWaitLastsWhileTheLedgerKeepsChanging(t *testing.T) {
	tests := []struct {
		name    string
		records int  // periods that see a record
		stall   bool // then one period with none
		want    error
	}{
		{"records in every period, then the holder lets go", 5, false, nil},
		{"no record in the first period", 0, true, ports.ErrBusy},
		{"records, then a period with none", 3, true, ports.ErrBusy},
		{"records in every period allowed", ports.MaxLockWaitPeriods, false, ports.ErrWaitedTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ws, path := openLedgerWorkspace(t, []byte("0\n"))
			periods := newFakePeriods(ws)
			release := flockOther(t, path, unix.LOCK_EX)
			got := make(chan error, 1)
			go func() {
				got <- ws.appendOnce("ledger.jsonl", time.Hour, line("mine\n", nil))
			}()
			eventually(t, "the wait is in the kernel", func() bool { return kernelWaits(t, path) == 1 })
			want := "0\n"
			for i := range tt.records {
				period := periods.take(t, got)
				s := fmt.Sprintf("%d\n", i+1)
				record(t, path, s)
				want += s
				period <- time.Time{}
			}
			if tt.stall {
				periods.take(t, got) <- time.Time{}
			}
			if tt.want == nil {
				periods.take(t, got) // the wait looked at the ledger after the last record, and waits on
				release()
				is.NoErr(<-got)
				is.Equal(fileBytes(t, path), want+"mine\n")
				return
			}
			err := <-got
			is.True(errors.Is(err, tt.want)) // err
			is.Equal(fileBytes(t, path), want)
			release()
			eventually(t, "every lock let go", func() bool { return flocksOf(t, path, false) == 0 && kernelWaits(t, path) == 0 })
		})
	}
}

// A caller queued in the process behind another caller's kernel wait
// keeps its own patience: it too waits on while the ledger changes, and
// gets its turn once the holder lets go.
func TestACallerQueuedInTheProcessWaitsWhileTheLedgerChanges(t *testing.T) {
	is := is.New(t)
	ws, path := openLedgerWorkspace(t, []byte("0\n"))
	periods := newFakePeriods(ws)
	release := flockOther(t, path, unix.LOCK_EX)
	got := make(chan error, 2)
	for _, s := range []string{"a\n", "b\n"} {
		go func() { got <- ws.appendOnce("ledger.jsonl", time.Hour, line(s, nil)) }()
	}
	eventually(t, "one caller waits in the kernel", func() bool { return kernelWaits(t, path) == 1 })
	for i := range 4 {
		first, second := periods.take(t, got), periods.take(t, got) // both wait, having looked
		record(t, path, fmt.Sprintf("%d\n", i+1))
		first <- time.Time{}
		second <- time.Time{}
	}
	periods.take(t, got)
	periods.take(t, got)
	is.Equal(kernelWaits(t, path), 1) // still one blocked flock
	release()
	is.NoErr(<-got)
	is.NoErr(<-got)
	is.Equal(len(strings.Split(fileBytes(t, path), "\n")), 1+4+2+1) // 0, four records, a and b, and the end
}
