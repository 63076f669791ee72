package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/cli"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/call"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/ports"
)

// callKey marks a call's context with its number, so that a port can tell
// the calls apart.
type callKey struct{}

// gateMarker is a cancel marker that holds each numbered call at its first
// cancel check ("before work", the first thing a call does once it has its
// turn) until the test lets it go: entered tells which call got there.
type gateMarker struct {
	mu      sync.Mutex
	gates   map[int]chan struct{}
	entered chan int
}

func newGateMarker() *gateMarker {
	return &gateMarker{gates: map[int]chan struct{}{}, entered: make(chan int, 64)}
}

// gate returns call n's gate.
func (m *gateMarker) gate(n int) (gate chan struct{}, first bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.gates[n]
	if !ok {
		g = make(chan struct{})
		m.gates[n] = g
	}
	return g, !ok
}

// let lets call n go on.
func (m *gateMarker) let(n int) {
	g, _ := m.gate(n)
	close(g)
}

func (m *gateMarker) Cancelled(ctx context.Context) (bool, error) {
	n, ok := ctx.Value(callKey{}).(int)
	if !ok {
		return false, nil
	}
	if g, first := m.gate(n); first {
		m.entered <- n
		select {
		case <-g:
		case <-ctx.Done():
		}
	}
	return false, nil
}

// countingSources counts the source reads.
type countingSources struct {
	ports.SourceReader
	reads atomic.Int64
}

func (c *countingSources) ReadSource(name string, limitBytes int64) ([]byte, error) {
	c.reads.Add(1)
	return c.SourceReader.ReadSource(name, limitBytes)
}

// loadService opens an MCP service over the fixture with the gate marker
// and counting sources, with GOMAXPROCS 4 while it opens, so that it has 4
// compute slots whatever the machine.
func loadService(t *testing.T, args ...string) (*call.Calls, *gateMarker, *countingSources) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	m := newMem(t, testutil.Fixture(t))
	marker := newGateMarker()
	m.cancel = marker
	sources := &countingSources{SourceReader: m.ws}
	wire := func(o app.Options) (app.Ports, io.Closer, error) {
		p := m.ports(o)
		p.Sources = sources
		return p, nil, nil
	}
	o, _, e := cli.Parse(cli.MCP, append([]string{"--workspace", wsRoot}, args...))
	if e != nil {
		t.Fatal(e)
	}
	svc, err := app.Open(o.Options, wire)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	if call.ComputeSlots() < 1 {
		t.Fatal("no compute slot")
	}
	return call.New(svc), marker, sources
}

// started is one call handed to the call layer, and its answer once it
// comes.
type started struct {
	answer chan call.Answer
	cancel context.CancelFunc
}

// start hands call n to calls, as the MCP transport does: it takes its
// place in the service's lines first, then runs on its own.
func start(calls *call.Calls, n int, tool, arguments string) started {
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), callKey{}, n))
	s := started{answer: make(chan call.Answer, 1), cancel: cancel}
	p := calls.ArriveCall(tool)
	go func() {
		a := calls.Tool(ctx, call.Transport{Name: "mcp", ListLimit: cli.DefaultListLimit}, p, tool, []byte(arguments))
		a.Done()
		s.answer <- a
	}()
	return s
}

func codeOf(t *testing.T, a call.Answer) (code, message string) {
	t.Helper()
	var r struct {
		Error *struct{ Code, Message string }
	}
	if err := json.Unmarshal(a.JSON, &r); err != nil {
		t.Fatal(err)
	}
	if r.Error == nil {
		return "", ""
	}
	return r.Error.Code, r.Error.Message
}

// protocol §9, Load: at most ComputeSlots calls compute at once, and the rest
// start in the order they arrived, one as each computing call finishes.
func TestCallsComputeAtMostSlotsAtOnceAndStartInArrivalOrder(t *testing.T) {
	is := is.New(t)
	svc, marker, _ := loadService(t)
	const waiting = 6
	slots := 4
	var calls []started
	for n := range slots + waiting {
		calls = append(calls, start(svc, n, protocol.ToolInspect, `{}`))
	}
	computing := map[int]bool{}
	for range slots {
		computing[<-marker.entered] = true
	}
	for n := range slots {
		is.True(computing[n]) // the first to arrive compute first
	}
	for n := slots; n < slots+waiting; n++ {
		marker.let(n - slots)         // one computing call goes on and finishes
		is.Equal(<-marker.entered, n) // the oldest waiting call starts, alone
	}
	for n := waiting; n < slots+waiting; n++ {
		marker.let(n)
	}
	for _, c := range calls {
		code, _ := codeOf(t, <-c.answer)
		is.Equal(code, "") // every call answered, and succeeded
	}
}

// A waiting call whose context is cancelled (notifications/cancelled)
// answers CANCELLED at once, without computing, while the slots stay busy.
func TestAWaitingCallCancelledAnswersAtOnceWithoutComputing(t *testing.T) {
	is := is.New(t)
	svc, marker, sources := loadService(t, "--output-dir", "runs")
	var busy []started
	for n := range 4 {
		busy = append(busy, start(svc, n, protocol.ToolInspect, `{}`))
		<-marker.entered
	}
	for _, tool := range []string{protocol.ToolInspect, protocol.ToolVerify, protocol.ToolAnalyze} {
		args := map[string]string{protocol.ToolInspect: `{}`, protocol.ToolVerify: `{"run_id":"r1"}`,
			protocol.ToolAnalyze: `{"expected_source_digest":"` + strings.Repeat("0", 64) + `"}`}[tool]
		c := start(svc, 100, tool, args)
		c.cancel()
		code, message := codeOf(t, <-c.answer)
		is.Equal(code, "CANCELLED")                                      // tool
		is.True(strings.Contains(message, "(checked while waiting for")) // it never started: an analyze may be cancelled at its commit turn
	}
	is.Equal(sources.reads.Load(), int64(0)) // nothing was read: the busy calls are held before work, the others never started
	marker.mu.Lock()
	_, reached := marker.gates[100]
	marker.mu.Unlock()
	is.True(!reached) // no cancelled call reached its first cancel check
	for n, c := range busy {
		marker.let(n)
		code, _ := codeOf(t, <-c.answer)
		is.Equal(code, "")
	}
}

// An analyze takes the output directory's commit turn before it reads
// anything, and holds no compute slot while it waits for that turn.
func TestAnAnalyzeWaitingForItsCommitTurnReadsNothingAndHoldsNoSlot(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	digest := m.digest()
	svc, marker, sources := loadService(t, "--output-dir", "runs")
	analyzeArgs := func(run string) string {
		return fmt.Sprintf(`{"expected_source_digest":%q,"run_id":%q}`, digest, run)
	}
	first := start(svc, 0, protocol.ToolAnalyze, analyzeArgs("first"))
	is.Equal(<-marker.entered, 0) // the first analyze has its turn and a slot
	second := start(svc, 1, protocol.ToolAnalyze, analyzeArgs("second"))
	var inspects []started
	for n := 2; n < 5; n++ { // the three slots the first analyze leaves
		inspects = append(inspects, start(svc, n, protocol.ToolInspect, `{}`))
		is.True(<-marker.entered >= 2) // an inspect, never the waiting analyze
	}
	is.Equal(sources.reads.Load(), int64(0)) // the waiting analyze read nothing
	for n := 2; n < 5; n++ {
		marker.let(n)
	}
	for _, c := range inspects {
		code, _ := codeOf(t, <-c.answer)
		is.Equal(code, "")
	}
	marker.let(0) // the first analyze commits
	code, _ := codeOf(t, <-first.answer)
	is.Equal(code, "")
	is.Equal(<-marker.entered, 1) // then the second has its turn
	marker.let(1)
	code, _ = codeOf(t, <-second.answer)
	is.Equal(code, "")
}
