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
//
// How long a wait lasts is its patience: a wait is bounded by the line
// ceasing to move, not by its length. At the end of each period it looks
// at the ledger through its own descriptor (fstat: size and modification
// time, one look a period, never a lock attempt) and waits on if the
// ledger changed, since every holder records a call before it lets go: a
// burst of hundreds of calls on a loaded machine is waited out, however
// long its line, while a holder that keeps the lock without recording (a
// stopped process, another account's) is given up on after one period
// with no change. A fixed 10 s bound lost a fifth of a 400-process burst
// on a loaded 2-core machine (issue 23). MaxLockWaitPeriods keeps even a
// line that never ends from holding a caller for ever.

// gate admits one caller of this process at a time to a file's flock.
type gate struct {
	turn  chan struct{}                        // holds a token while a caller has the turn
	after func(time.Duration) <-chan time.Time // the clock of its waits' periods

	mu sync.Mutex
	// inKernel reports that the turn's holder is blocked in flock,
	// waiting for another process; changed is closed and replaced
	// whenever it changes.
	inKernel bool
	changed  chan struct{}
}

// newGate makes a gate whose waits time their periods with after
// (time.After when nil).
func newGate(after func(time.Duration) <-chan time.Time) *gate {
	if after == nil {
		after = time.After
	}
	return &gate{turn: make(chan struct{}, 1), after: after, changed: make(chan struct{})}
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
		g = newGate(w.after)
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

// enter takes the turn. It waits until p runs out, or until ctx is done
// while the turn's holder waits in the kernel for another process. A
// holder of this process that has the lock is working under it and lets
// go by itself, so a cancelled caller waits for it.
func (g *gate) enter(ctx context.Context, p *patience) error {
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
		case <-p.timer:
			if err := p.tick(); err != nil {
				return err
			}
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

// patience is one wait's bound: a timer of one period, and what the file
// looked like when it was last armed.
type patience struct {
	f       *os.File
	g       *gate
	period  time.Duration
	periods int // periods ended so far
	seen    fileState
	timer   <-chan time.Time
}

// fileState is what a look at the file compares: any append, and any cut
// back, changes it.
type fileState struct {
	size, mtimeNanos int64
}

// newPatience starts a wait on f, whose gate is g, with the given period.
func newPatience(g *gate, f *os.File, period time.Duration) (*patience, error) {
	p := &patience{f: f, g: g, period: period}
	var err error
	if p.seen, err = p.look(); err != nil {
		return nil, err
	}
	p.timer = g.after(period)
	return p, nil
}

func (p *patience) look() (fileState, error) {
	fi, err := p.f.Stat()
	if err != nil {
		return fileState{}, err
	}
	return fileState{size: fi.Size(), mtimeNanos: fi.ModTime().UnixNano()}, nil
}

// tick ends a period, once its timer has fired: ports.ErrBusy if the file
// did not change in it, ports.ErrWaitedTooLong once the last period
// allowed has ended; else it arms the timer for the next.
func (p *patience) tick() error {
	now, err := p.look()
	switch {
	case err != nil:
		return err
	case now == p.seen:
		return ports.ErrBusy
	}
	p.periods++
	if p.periods >= ports.MaxLockWaitPeriods {
		return ports.ErrWaitedTooLong
	}
	p.seen = now
	p.timer = p.g.after(p.period)
	return nil
}

// lockWithin takes the flock how (lockShared or lockExclusive) on f, whose
// gate is g, waiting with the given period as patience says (then
// ports.ErrBusy or ports.ErrWaitedTooLong) and ending at once when ctx is
// done while the wait is another process's (then ctx's error). On success
// the lock and the turn are the caller's until release; on failure f is
// closed, at once or, when its flock is still blocked, once that returns.
func lockWithin(ctx context.Context, g *gate, f *os.File, how int, period time.Duration) (*flocked, error) {
	p, err := newPatience(g, f, period)
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := g.enter(ctx, p); err != nil {
		f.Close()
		return nil, err
	}
	fail := func(err error) (*flocked, error) {
		f.Close()
		g.leave()
		return nil, err
	}
	err = flock(f, how|lockNoBlock)
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
wait:
	for {
		select {
		case err := <-done:
			g.setInKernel(false)
			if err != nil {
				return fail(err)
			}
			return &flocked{f: f, g: g}, nil
		case <-p.timer:
			if err = p.tick(); err != nil {
				break wait
			}
		case <-ctx.Done():
			err = ctx.Err()
			break wait
		}
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
