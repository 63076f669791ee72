// Package call is the call layer every transport shares: it turns the
// bytes a call arrived as into one answer of the protocol, around the use
// cases of package app.
//
// A call goes, in order: its place in the service's lines (admission); the
// ledger's pre-check; the request checks of package protocol (a whole
// one-shot request, protocol §2, or a tool's raw arguments, §9.4); its
// turn (the compute slots and, for an analyze, the output directory's
// commit turn, protocol §9.8); the use case; the envelope of protocol §3,
// encoded once (its lists cut for a tool call, §9.5); and the ledger's
// record (§11), appended before the answer is returned. A panic anywhere
// below is recovered into INTERNAL_ERROR: every call ends in exactly one
// [Answer].
//
// A transport only frames bytes. It hands each call over with a plain
// description of itself ([Transport]), through [Calls.OneShot] (the
// one-shot request on standard input) or [Calls.Tool] (a tool's name and
// raw arguments, as MCP sends them), writes [Answer.JSON], and calls
// [Answer.Done] once it is written.
package call

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/app/ledger"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// Transport describes how calls arrive: what differs between transports,
// as data. The call layer never asks which transport it is.
type Transport struct {
	// Name is the transport's name in the ledger's records: one of
	// ledger.Transports.
	Name string
	// ListLimit is K: the answer to a tool call has each list that grows
	// with the data cut to its first K items, and says so under
	// "truncated". A one-shot answer is never cut.
	ListLimit int
	// Caller is who makes the call, for its record: the zero value for a
	// transport that knows no callers; for remote MCP over HTTP the
	// verified token's issuer and subject, or ledger.Anonymous() without
	// authorization. It differs from call to call; the use cases never
	// see it.
	Caller ledger.Caller
}

// Calls answers calls over one service. It is safe for concurrent calls:
// at most [ComputeSlots] of them compute at once and the rest wait in
// arrival order; the analyze calls of one service take turns at the
// output directory (the writer lock excludes other processes, and would
// refuse a second call of this one as OUTPUT_BUSY).
type Calls struct {
	svc *app.Service
	// slots admits at most ComputeSlots calls and reads at a time, in
	// arrival order.
	slots *turns
	// commits is the output directory's commit turn: one analyze at a
	// time, taken before it reads anything and before its compute slot,
	// so that an analyze waiting for it holds no slot.
	commits *turns
}

// New is the call layer over svc.
func New(svc *app.Service) *Calls {
	return &Calls{svc: svc, slots: newTurns(ComputeSlots()), commits: newTurns(1)}
}

// Short says why a one-shot transport could not hand over its whole
// input.
type Short int

// Why an input is short.
const (
	// Whole: the input is all of it.
	Whole Short = iota
	// OverLimit: the input passed protocol.RequestLimitChars and the rest
	// was not read (REQUEST_LIMIT).
	OverLimit
	// ReadFailed: reading the input failed (IO_OR_NUMERIC_ERROR).
	ReadFailed
	// Interrupted: the call was cancelled while its input was being read
	// (CANCELLED).
	Interrupted
)

// ArriveCall takes the places of a call of tool in the service's lines,
// without waiting: a transport that reads its next message only once the
// call it read has arrived keeps its calls in the order of its input
// (calls wait in arrival order). A call handed to Tool
// without a place takes it there.
func (c *Calls) ArriveCall(tool string) *Place {
	p := c.place()
	if tool == protocol.ToolAnalyze {
		p.commit = c.commits.arrive()
	} else {
		p.compute = c.slots.arrive()
	}
	return p
}

// ArriveRead takes the place of a resource read in the service's lines,
// without waiting, as ArriveCall does for a call.
func (c *Calls) ArriveRead() *Place {
	p := c.place()
	p.compute = c.slots.arrive()
	return p
}

// place is a place in no line yet: a one-shot call's, which takes its
// places once its request names its tool.
func (c *Calls) place() *Place { return &Place{commits: c.commits, slots: c.slots} }

// OneShot answers a one-shot call: data is the whole
// request as read from standard input, or as much as short says.
func (c *Calls) OneShot(ctx context.Context, t Transport, data []byte, short Short) Answer {
	return c.serve(ctx, t, nil, request{data: data, short: short, cut: whole})
}

// Tool answers a call of tool, one of the three, with the raw bytes of its
// arguments (nil when absent), as MCP's tools/call sends them (protocol
// §9.4). p is the call's place from ArriveCall, or nil.
func (c *Calls) Tool(ctx context.Context, t Transport, p *Place, tool string, args []byte) Answer {
	return c.serve(ctx, t, p, request{tool: tool, data: args, cut: t.ListLimit})
}

// ToolOverLimit answers a call of tool whose arguments were longer than
// protocol.RequestLimitChars and were not kept, of which sum is the SHA256
// of their raw bytes: REQUEST_LIMIT, recorded as Tool records it. A
// transport that would otherwise hold megabytes of arguments no check can
// accept uses it (a line may cost at most a few times its
// size).
func (c *Calls) ToolOverLimit(ctx context.Context, t Transport, p *Place, tool, sum string) Answer {
	return c.serve(ctx, t, p, request{tool: tool, short: OverLimit, sum: sum, cut: t.ListLimit})
}

// ReadRunFile reads a file of a committed run for a resource read
// (app.Service.ReadRunFile), once it has a compute slot,
// waiting in arrival order with the calls (p is its place from
// ArriveRead, or nil). done gives the slot back: the transport calls it
// once the answer is written, as Answer.Done.
func (c *Calls) ReadRunFile(ctx context.Context, p *Place, runID, name string) (data []byte, done func(), err error) {
	if p == nil {
		p = c.ArriveRead()
	}
	if !p.compute.wait(ctx) {
		return nil, func() {}, protocol.Errorf(protocol.Cancelled, "the read was cancelled")
	}
	data, err = c.svc.ReadRunFile(ctx, runID, name)
	return data, p.release, err
}

// request is a call as its transport handed it over.
type request struct {
	// tool is the tool's name of a tool call; empty for a one-shot call,
	// whose request names it.
	tool  string
	data  []byte
	short Short
	// sum is the SHA256 of a tool call's arguments not kept (OverLimit).
	sum string
	cut int
}

// heard is the call as known before any check, which every answer
// echoes, refusals included: for a tool call its tool and call ID.
func (r request) heard(c *Calls) protocol.Call {
	if r.tool == "" {
		return protocol.Call{}
	}
	return protocol.MCPCall(r.tool, r.data, c.newCallID)
}

// decode runs the request checks in their order; the first failure is
// the answer.
func (r request) decode(heard protocol.Call) (protocol.Call, error) {
	if r.tool != "" {
		if r.short == OverLimit {
			return heard, protocol.ArgumentsTooLong()
		}
		c, e := protocol.DecodeMCP(heard, r.data)
		if e != nil {
			return c, e
		}
		return c, nil
	}
	switch r.short {
	case OverLimit:
		return heard, protocol.Errorf(protocol.RequestLimit, "the request is longer than %d characters", protocol.RequestLimitChars)
	case ReadFailed:
		return heard, protocol.Errorf(protocol.IOOrNumericError, "standard input could not be read")
	case Interrupted:
		return heard, protocol.Errorf(protocol.Cancelled, "the call was cancelled while its request was being read; nothing was run")
	}
	c, e := protocol.DecodeRequest(r.data)
	if e != nil {
		return c, e
	}
	return c, nil
}

// serve answers one call and records it. Every path, a recovered panic
// included, ends in exactly one Answer, which holds the call's place until
// its Done.
func (c *Calls) serve(ctx context.Context, t Transport, p *Place, r request) (a Answer) {
	if p == nil {
		p = c.place() // a one-shot call takes its places once its tool is known
		if r.tool != "" {
			p = c.ArriveCall(r.tool)
		}
	}
	defer func() { a.done = p.release }()
	var o outcome // the call as heard, for an answer to a panic below
	defer func() {
		if recover() != nil {
			e := protocol.Errorf(protocol.InternalError, "the engine failed unexpectedly; nothing was committed by this failure")
			if o.committed != "" {
				e = protocol.Errorf(protocol.InternalError, "the engine failed unexpectedly after run %s was committed; it stays committed: check it with verify_result", o.committed)
			}
			a = refused(o.call, r.cut, e).answer()
		}
	}()
	var hold app.LedgerHold
	defer hold.Release()
	o, recordable := c.decide(ctx, p, r, &hold)
	a = o.answer()
	if !recordable {
		return a
	}
	if err := c.svc.Record(&hold, func() ledger.Record { return record(t, r, o, a) }); err != nil {
		a = unrecorded(o, err).answer()
	}
	return a
}

// decide runs a call to its outcome. recordable is false for the answers
// the ledger cannot hold: a ledger that failed its pre-check.
func (c *Calls) decide(ctx context.Context, p *Place, r request, hold *app.LedgerHold) (o outcome, recordable bool) {
	var call protocol.Call // as far as its checks got, for an answer to a panic
	defer func() {
		if recover() != nil {
			o, recordable = refused(call, r.cut, protocol.Errorf(protocol.InternalError, "the engine failed unexpectedly; nothing was committed by this failure")), true
		}
	}()
	call = r.heard(c)
	if err := c.svc.CheckLedger(ctx); err != nil {
		return refused(call, r.cut, err), false
	}
	var err error
	if call, err = r.decode(call); err != nil {
		return refused(call, r.cut, err), true
	}
	o = c.run(ctx, p, call, r.cut, hold)
	if r.tool != "" {
		o = forModel(o, c.newCallID)
	}
	return o, true
}

// run runs a call that passed every request check, once it has its turn.
func (c *Calls) run(ctx context.Context, p *Place, call protocol.Call, cut int, hold *app.LedgerHold) outcome {
	if call.Tool == protocol.ToolAnalyze {
		defer p.leaveCommits()
	}
	if err := p.take(ctx, call.Tool); err != nil {
		return refused(call, cut, err)
	}
	o := outcome{call: call, cut: cut}
	var err error
	switch call.Tool {
	case protocol.ToolInspect:
		o.result, err = c.svc.Inspect(ctx)
	case protocol.ToolAnalyze:
		// The response's copy of the whole result is encoded while the
		// commit waits on its fsyncs; a cut answer encodes only its cut.
		var beside func(*domain.Result)
		if cut == whole {
			beside = func(r *domain.Result) { o.resultJSON = encodeResult(r) }
		}
		var run app.Run
		run, err = c.svc.Analyze(ctx, call.ID, call.Digest, hold, beside)
		o.result, o.artifacts, o.committed, o.resultSHA256, o.files = run.Result, run.Artifacts, run.ID, run.ResultSHA256, run.Files
	case protocol.ToolVerify:
		var v app.VerifyResult
		var f evidence.RunFile
		v, f, err = c.svc.Verify(ctx, call.RunID)
		o.result, o.files = v, []evidence.RunFile{f}
	}
	if err != nil {
		return refused(call, cut, err)
	}
	return o
}

// record is the call's ledger record, as far as the call knows it
// (protocol §11.3); app.Service.Record adds the engine, the time and the
// chain.
func record(t Transport, r request, o outcome, a Answer) ledger.Record {
	rec := ledger.Record{
		Transport:      t.Name,
		Principal:      t.Caller,
		RequestID:      o.call.HeardID(),
		Tool:           o.call.HeardTool(),
		Status:         "success",
		ResponseSHA256: domain.SHA256Hex(a.JSON),
	}
	switch {
	case r.short == Whole: // only a whole input has a hash to record
		sum := domain.SHA256Hex(r.data)
		rec.InputSHA256 = &sum
	case r.sum != "": // or one taken before it was let go
		rec.InputSHA256 = &r.sum
	}
	if a.Code != "" {
		code := string(a.Code)
		rec.Status, rec.Code = a.Code.Status(), &code
	}
	if o.committed != "" {
		rec.RunID, rec.ResultSHA256 = &o.committed, &o.resultSHA256
	}
	return rec
}

// unrecorded is the outcome of a call whose record could not be appended:
// the failure, and what the call itself did.
func unrecorded(o outcome, err error) outcome {
	e := protocol.ErrorOf(err)
	if o.committed != "" {
		e = e.Amended("; run %s was committed and stays committed", o.committed)
		e.Retryable = false // the same analyze again would meet its own run
	} else {
		e = e.Amended("; the call's own outcome was %s", outcomeName(o))
	}
	return refused(o.call, o.cut, e)
}

func outcomeName(o outcome) string {
	if o.err == nil {
		return "success"
	}
	return string(o.err.Code)
}

// newCallID assigns a call ID (protocol §9.4): the UTC time to the second
// and 8 random lowercase hex digits, 20261201T073000Z-3f9a1c2e, so IDs
// sort by time and do not collide.
func (c *Calls) newCallID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported systems
	return c.svc.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Runs lists the committed runs of the output directory, for a transport
// that shows them (app.Service.Runs): no tool call, no compute slot.
func (c *Calls) Runs(ctx context.Context, after string, n int) ([]ports.ListedRun, bool, error) {
	return c.svc.Runs(ctx, after, n)
}
