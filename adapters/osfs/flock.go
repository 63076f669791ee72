package osfs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/metricproof/metricproof/ports"
)

// Waiting for a flock (protocol §11) sleeps in the kernel: a blocking flock(2)
// on a goroutine of its own, raced against the wait's timer and the
// caller's context. A polling loop of LOCK_NB tries would burn the CPU
// that the lock's holder needs: under a burst of 400 processes on 2 cores
// the pollers starved the holders until their 10 s ran out.
//
// A process makes at most one blocking flock per file. Its other callers
// queue on the file's gate, a channel, where a wait can end; only the
// caller with the turn goes to the kernel. A caller that gives up while
// its flock is still blocked returns at once and leaves the turn to a
// goroutine that, when flock finally returns, unlocks, closes the file
// and only then passes the turn on.

// gate admits one caller of this process at a time to a file's flock.
type gate struct {
	turn chan struct{} // holds a token while a caller has the turn

	mu sync.Mutex
	// inKernel reports that the turn's holder is blocked in flock,
	// waiting for another process; changed is closed and replaced
	// whenever it changes.
	inKernel bool
	changed  chan struct{}
}

func newGate() *gate {
	return &gate{turn: make(chan struct{}, 1), changed: make(chan struct{})}
}

// gateFor returns the gate of the workspace-relative file rel.
func (w *Workspace) gateFor(rel string) *gate {
	w.gatesMu.Lock()
	defer w.gatesMu.Unlock()
	if w.gates == nil {
		w.gates = map[string]*gate{}
	}
	g := w.gates[rel]
	if g == nil {
		g = newGate()
		w.gates[rel] = g
	}
	return g
}

func (g *gate) setInKernel(v bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inKernel = v
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *gate) state() (inKernel bool, changed <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inKernel, g.changed
}

// enter takes the turn. It waits until expired fires (ports.ErrBusy), or
// until ctx is done while the turn's holder waits in the kernel for
// another process. A holder of this process that has the lock is working
// under it and lets go by itself, so a cancelled caller waits for it.
func (g *gate) enter(ctx context.Context, expired <-chan time.Time) error {
	for {
		inKernel, changed := g.state()
		var cancelled <-chan struct{}
		if inKernel {
			if err := ctx.Err(); err != nil {
				return err
			}
			cancelled = ctx.Done()
		}
		select {
		case g.turn <- struct{}{}:
			return nil
		case <-expired:
			return ports.ErrBusy
		case <-cancelled:
			return ctx.Err()
		case <-changed:
		}
	}
}

// leave gives the turn back.
func (g *gate) leave() { <-g.turn }

// flocked is a file whose flock this process holds, with the turn at its
// gate.
type flocked struct {
	f    *os.File
	g    *gate
	once sync.Once
}

// lockWithin takes the flock how (lockShared or lockExclusive) on f, whose gate is
// g, waiting at most wait (then ports.ErrBusy) and ending at once when ctx
// is done while the wait is another process's (then ctx's error). On
// success the lock and the turn are the caller's until release; on
// failure f is closed, at once or, when its flock is still blocked, once
// that returns.
func lockWithin(ctx context.Context, g *gate, f *os.File, how int, wait time.Duration) (*flocked, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	if err := g.enter(ctx, timer.C); err != nil {
		f.Close()
		return nil, err
	}
	fail := func(err error) (*flocked, error) {
		f.Close()
		g.leave()
		return nil, err
	}
	err := flock(f, how|lockNoBlock)
	switch {
	case err == nil:
		return &flocked{f: f, g: g}, nil
	case !errors.Is(err, errWouldBlock):
		return fail(err)
	case ctx.Err() != nil:
		return fail(ctx.Err()) // never start a kernel wait for a call already cancelled
	}
	g.setInKernel(true)
	done := make(chan error, 1)
	go func() { done <- flock(f, how) }()
	select {
	case err := <-done:
		g.setInKernel(false)
		if err != nil {
			return fail(err)
		}
		return &flocked{f: f, g: g}, nil
	case <-timer.C:
		err = ports.ErrBusy
	case <-ctx.Done():
		err = ctx.Err()
	}
	// The flock is still blocked: the turn stays with it, so no second one
	// starts, until it returns and lets go.
	go func() {
		if <-done == nil {
			_ = flock(f, lockRelease)
		}
		f.Close()
		g.setInKernel(false)
		g.leave()
	}()
	return nil, err
}

// release drops the lock (closing the file releases the flock) and passes
// the turn on. Calling it again does nothing.
func (l *flocked) release() error {
	var err error
	l.once.Do(func() {
		err = l.f.Close()
		l.g.leave()
	})
	return err
}

// unlock drops the lock and passes the turn on, and leaves the file open
// for the caller, who closes it.
func (l *flocked) unlock() error {
	var err error
	l.once.Do(func() {
		err = flock(l.f, lockRelease)
		l.g.leave()
	})
	return err
}

// oneName refuses the open lock file f when it has more than one hard
// link (ports.ErrLinked): another name of it may lie outside the
// workspace, so neither a mode change nor a write may go through it. It
// looks at the open descriptor (fstat), so the file checked is the file
// that would be changed.
func oneName(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if links(fi) > 1 {
		return ports.ErrLinked
	}
	return nil
}

// private makes the open lock file f grant nothing to group or others: it
// sets the mode to 0600 through the descriptor itself (so the file checked
// is the file changed) when any such bit is set. flock needs only a
// descriptor open for reading, so a lock file another account can open is
// one it can hold. ports.ErrLockExposed when this process may not change
// the mode (another account owns the file). Descriptors others opened
// before keep their access: a mode change revokes nothing.
func (w *Workspace) private(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := w.chmod(f, 0o600); err != nil {
		if errors.Is(err, syscall.EPERM) {
			return ports.ErrLockExposed
		}
		return err
	}
	return nil
}

// lockFileMode is the mode both lock files are created with.
const lockFileMode fs.FileMode = 0o600
