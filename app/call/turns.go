package call

import (
	"context"
	"runtime"
	"sync"

	"github.com/metricproof/metricproof/app/protocol"
)

// ComputeSlots is how many tool calls and resource reads of one service
// compute at once (protocol §9.8): min(GOMAXPROCS, 4).
func ComputeSlots() int { return min(runtime.GOMAXPROCS(0), 4) }

// turns admits at most n holders at a time, in the order their places were
// taken. A place is taken when a call arrives (turns.arrive, which never
// waits) and waited on once the call has passed its checks (place.wait),
// so that calls keep their order of arrival even though each checks its
// request at its own pace in between. A turn that falls to a place whose
// call is still checking is kept for it: the call then starts at once, or
// hands the turn on when it leaves without waiting.
type turns struct {
	mu    sync.Mutex
	free  int
	queue []*place // places waiting for a turn, oldest first
}

func newTurns(n int) *turns { return &turns{free: n} }

// place is one call's place in a line of turns.
type place struct {
	t       *turns
	granted chan struct{} // closed when the turn is this place's
	done    bool          // left or released
}

// arrive takes a place at the end of the line.
func (t *turns) arrive() *place {
	p := &place{t: t, granted: make(chan struct{})}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.queue = append(t.queue, p)
	t.grantLocked()
	return p
}

// grantLocked hands the free turns to the oldest places.
func (t *turns) grantLocked() {
	for t.free > 0 && len(t.queue) > 0 {
		p := t.queue[0]
		t.queue[0] = nil
		t.queue = t.queue[1:]
		t.free--
		close(p.granted)
	}
}

// wait blocks until the turn is the place's, and reports false, having
// left the line, when ctx is done first. A turn granted to a call already
// cancelled is handed on, so a cancelled call never starts.
func (p *place) wait(ctx context.Context) bool {
	select {
	case <-p.granted:
	case <-ctx.Done():
	}
	if ctx.Err() != nil {
		p.release()
		return false
	}
	return true
}

// release gives the place's turn back, or leaves the line if the turn
// had not come yet. It may be called more than once.
func (p *place) release() {
	t := p.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if p.done {
		return
	}
	p.done = true
	select {
	case <-p.granted:
		t.free++
	default:
		for i, q := range t.queue {
			if q == p {
				t.queue = append(t.queue[:i], t.queue[i+1:]...)
				break
			}
		}
	}
	t.grantLocked()
}

// Place is one call's or read's places in the service's lines: for an
// analyze the commit turn, then a compute slot; for the other tools and a
// resource read a compute slot. A call takes its first place as it
// arrives ([Calls.ArriveCall], [Calls.ArriveRead]), and waits for it once
// it has passed its checks.
type Place struct {
	commits, slots  *turns
	commit, compute *place
}

// take waits for the call's turns: an analyze first for the commit turn,
// holding no compute slot meanwhile, then every call for a compute slot.
// A call cancelled while it waits answers CANCELLED and has computed
// nothing.
func (p *Place) take(ctx context.Context, tool string) error {
	if tool == protocol.ToolAnalyze {
		if p.commit == nil {
			p.commit = p.commits.arrive()
		}
		if !p.commit.wait(ctx) {
			return cancelledWhile("while waiting for another analyze of this server")
		}
	}
	if p.compute == nil { // an analyze arrives at the compute slots once it has its turn
		p.compute = p.slots.arrive()
	}
	if !p.compute.wait(ctx) {
		return cancelledWhile("while waiting for a compute slot")
	}
	return nil
}

// cancelledWhile is a call cancelled while it waited for its turn.
func cancelledWhile(point string) error {
	return protocol.Errorf(protocol.Cancelled, "the call was cancelled (checked %s); it stopped and nothing was committed", point)
}

// leaveCommits gives the commit turn back: an analyze holds it from before
// it reads anything until its commit is done.
func (p *Place) leaveCommits() {
	if p.commit != nil {
		p.commit.release()
	}
}

// release gives every place of the call back. It may be called more than
// once.
func (p *Place) release() {
	p.leaveCommits()
	if p.compute != nil {
		p.compute.release()
	}
}
