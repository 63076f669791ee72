package app

import (
	"context"
	"runtime"
	"sync"

	"github.com/metricproof/metricproof/app/protocol"
)

// ComputeSlots is how many tool calls and resource reads of one service
// compute at once (protocol §9, Load): min(GOMAXPROCS, 4).
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

// admission is one call's places in the service's lines: for an analyze
// the commit turn, then a compute slot; for the other tools a compute slot.
type admission struct {
	s       *Service
	commit  *place
	compute *place
}

// arrive takes the call's first place as it arrives, when its tool is
// known before its request is read (over MCP); otherwise (over stdio) the
// places are taken once the request is decoded, by take.
func (s *Service) arrive(in Input) *admission {
	a := &admission{s: s}
	switch {
	case in.Tool == "":
	case in.Tool == protocol.ToolAnalyze:
		a.commit = s.commits.arrive()
	default:
		a.compute = s.slots.arrive()
	}
	return a
}

// take waits for the call's turns: an analyze first for the commit turn,
// holding no compute slot meanwhile, then every call for a compute slot.
// A call cancelled while it waits answers CANCELLED and has computed
// nothing.
func (a *admission) take(ctx context.Context, tool string) *Error {
	if tool == protocol.ToolAnalyze {
		if a.commit == nil {
			a.commit = a.s.commits.arrive()
		}
		if !a.commit.wait(ctx) {
			return a.s.checkCancel(ctx, "while waiting for another analyze of this server")
		}
	}
	if a.compute == nil { // an analyze arrives at the compute slots once it has its turn
		a.compute = a.s.slots.arrive()
	}
	if !a.compute.wait(ctx) {
		return a.s.checkCancel(ctx, "while waiting for a compute slot")
	}
	return nil
}

// leaveCommits gives the commit turn back: an analyze holds it from before
// it reads anything until its commit is done.
func (a *admission) leaveCommits() {
	if a.commit != nil {
		a.commit.release()
	}
}

// release gives every place of the call back.
func (a *admission) release() {
	a.leaveCommits()
	if a.compute != nil {
		a.compute.release()
	}
}

// Compute waits, in arrival order with the tool calls, for one of the
// service's compute slots (protocol §9, Load: at most [ComputeSlots] tool calls
// and resource reads compute at once) and returns its release, which must
// be called once the work and the delivery of its answer are done. It
// returns ctx's error, holding nothing, when ctx is done first. Resource
// reads take it around their read; the tool calls take theirs inside
// [Service.Serve].
func (s *Service) Compute(ctx context.Context) (release func(), err error) {
	p := s.slots.arrive()
	if !p.wait(ctx) {
		return nil, ctx.Err()
	}
	return p.release, nil
}
