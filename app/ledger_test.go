package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/adapters/cli"
	"github.com/metricproof/metricproof/adapters/stdio"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/call"
	"github.com/metricproof/metricproof/app/ledger"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/ports"
)

// The ledger's rules that need a failing store or a transport other than
// stdio; the real-process tests in cmd/tool-runner cover the rest.

// faultyLedger is a ledger store that fails where it is told to.
type faultyLedger struct {
	ports.LedgerStore
	openErr   error  // OpenLedger fails with it
	lastErr   error  // LastLine fails with it
	lockErr   error  // Lock fails with it
	appendErr error  // the held ledger's Append fails with it, before building the record
	lastSeen  []byte // non-nil: the last line the held ledger shows, as if it changed meanwhile
	panics    bool   // the held ledger's Append panics
	appended  int
	// onAppend, when set, sees every record appended, before it is.
	onAppend func()
	held     bool // a lock is held
}

func (f *faultyLedger) OpenLedger(rel string) (ports.Ledger, error) {
	if f.openErr != nil {
		return nil, f.openErr
	}
	l, err := f.LedgerStore.OpenLedger(rel)
	if err != nil {
		return nil, err
	}
	return &faultyOpen{Ledger: l, f: f}, nil
}

// faultyOpen is the open ledger of a faultyLedger.
type faultyOpen struct {
	ports.Ledger
	f *faultyLedger
}

func (o *faultyOpen) LastLine(ctx context.Context) ([]byte, error) {
	if o.f.lastErr != nil {
		return nil, o.f.lastErr
	}
	return o.Ledger.LastLine(ctx)
}

func (o *faultyOpen) Lock(ctx context.Context, wait time.Duration) (ports.HeldLedger, error) {
	f := o.f
	if f.lockErr != nil {
		return nil, f.lockErr
	}
	h, err := o.Ledger.Lock(ctx, wait)
	if err != nil {
		return nil, err
	}
	f.held = true
	return &faultyHeld{HeldLedger: h, f: f}, nil
}

// faultyHeld is the held ledger of a faultyLedger.
type faultyHeld struct {
	ports.HeldLedger
	f *faultyLedger
}

func (h *faultyHeld) LastLine() ([]byte, error) {
	if h.f.lastSeen != nil {
		return h.f.lastSeen, nil
	}
	return h.HeldLedger.LastLine()
}

func (h *faultyHeld) Append(record func([]byte) ([]byte, error)) error {
	f := h.f
	if f.appendErr != nil {
		return f.appendErr
	}
	if f.panics {
		panic("boom")
	}
	if f.lastSeen != nil {
		_, err := record(f.lastSeen)
		if err == nil {
			return errors.New("the record was built on a damaged line")
		}
		return err
	}
	if f.onAppend != nil {
		f.onAppend()
	}
	f.appended++
	return h.HeldLedger.Append(record)
}

func (h *faultyHeld) Release() error {
	h.f.held = false
	return h.HeldLedger.Release()
}

// withLedger runs requests over m with its ledger store replaced by f.
func (m *memWorkspace) withLedger(f *faultyLedger) func(request string, args ...string) response {
	f.LedgerStore = m.ws
	wire := func(o app.Options) (app.Ports, io.Closer, error) {
		p, c, err := m.wire(o)
		p.Ledger = f
		return p, c, err
	}
	return func(request string, args ...string) response {
		m.t.Helper()
		var out bytes.Buffer
		exit := stdio.Run(context.Background(), args, strings.NewReader(request), &out, wire)
		return decode(m.t, out.Bytes(), exit)
	}
}

// memLedger returns the ledger's lines decoded; nil when there is none.
func (m *memWorkspace) memLedger(rel string) []map[string]any {
	m.t.Helper()
	if !m.exists(rel) {
		return nil
	}
	var recs []map[string]any
	for _, line := range strings.SplitAfter(string(m.read(rel)), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			m.t.Fatalf("ledger line is not JSON: %q", line)
		}
		recs = append(recs, r)
	}
	return recs
}

// An append that fails is the call's answer, IO_OR_NUMERIC_ERROR, and no
// record is left. A run analyze committed stays committed, and the message
// says so; otherwise it names the call's own outcome, and why the append
// failed when the store knows.
func TestAFailedAppendIsTheAnswerAndACommittedRunStays(t *testing.T) {
	tests := []struct {
		name      string
		request   func(digest string) string
		fault     faultyLedger
		message   []string // what the message must say
		committed bool
	}{
		{"after a commit", func(d string) string { return analyzeReq("r1", d) }, faultyLedger{appendErr: errors.New("input/output error")},
			[]string{"recording the call in the ledger failed", "run r1 was committed and stays committed"}, true},
		{"after a refusal", func(string) string { return analyzeReq("r1", strings.Repeat("0", 64)) }, faultyLedger{appendErr: errors.New("input/output error")},
			[]string{"recording the call in the ledger failed", "the call's own outcome was STALE_CONTEXT"}, false},
		{"after an inspection", func(string) string { return inspect("i2") }, faultyLedger{appendErr: fmt.Errorf("write: %w", ports.ErrNoSpace)},
			[]string{"(no space left on the device", "the call's own outcome was success"}, false},
		{"behind a holder that records nothing", func(string) string { return inspect("i2") }, faultyLedger{lockErr: ports.ErrBusy},
			[]string{"waited for the ledger's lock, to record itself, and for 10 s no call was recorded in it", "keeps it without recording anything", "fuser or lsof", "was not recorded", "the call's own outcome was success"}, false},
		{"behind a line of calls that did not end", func(string) string { return inspect("i2") }, faultyLedger{lockErr: ports.ErrWaitedTooLong},
			[]string{"waited 10 minutes for the ledger's lock, to record itself, while other calls kept being recorded", "was not recorded", "the call's own outcome was success"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			m := newMem(t, testutil.Fixture(t))
			run := m.withLedger(&tt.fault)
			r := run(tt.request(m.digest()), "--workspace", wsRoot, "--output-dir", "runs", "--ledger", "ledger.jsonl")
			is.Equal(r.code(), "IO_OR_NUMERIC_ERROR")
			is.Equal(r.Exit, 1)
			is.Equal(r.Body.Artifacts, map[string]string{}) // a failure names no artifacts
			for _, want := range tt.message {
				is.True(strings.Contains(r.Body.Error.Message, want)) // the message says it
			}
			is.Equal(m.exists("runs/r1/result.json"), tt.committed)
			is.Equal(m.memLedger("ledger.jsonl"), nil) // no record
		})
	}
}

// With a ledger, analyze takes the ledger's lock once its run is staged
// and makes its last checks (the sources read again, the cancel marker,
// the ledger's last record), its commit and its record under it (protocol
// §11): a lock it cannot have, or a ledger found damaged there, commits
// nothing, removes the pending directory, and is not recorded.
func TestAnAnalyzeThatCannotRecordUnderTheLedgersLockCommitsNothing(t *testing.T) {
	tests := []struct {
		name    string
		fault   faultyLedger
		code    string
		message []string
	}{
		{"a holder that records nothing", faultyLedger{lockErr: ports.ErrBusy}, "IO_OR_NUMERIC_ERROR",
			[]string{"waited for the ledger's lock before its commit, and for 10 s no call was recorded in it", "keeps it without recording anything", "nothing was committed", "not recorded", "retry once it has let go"}},
		{"a line of calls that did not end", faultyLedger{lockErr: ports.ErrWaitedTooLong}, "IO_OR_NUMERIC_ERROR",
			[]string{"waited 10 minutes for the ledger's lock before its commit, while other calls kept being recorded", "nothing was committed", "not recorded", "retry when the burst is over"}},
		{"a cancellation while another process holds the lock", faultyLedger{lockErr: context.Canceled}, "CANCELLED",
			[]string{"cancelled while it waited for another process's lock", "nothing was committed", "not recorded"}},
		{"a ledger open to others whose mode cannot be changed", faultyLedger{lockErr: ports.ErrLockExposed}, "INVALID_OUTPUT",
			[]string{"chmod 600", "nothing was committed", "not recorded"}},
		{"a ledger that is no longer a file", faultyLedger{lockErr: ports.ErrNotRegular}, "INVALID_OUTPUT",
			[]string{"no longer a regular file", "nothing was committed", "not recorded"}},
		{"a ledger that cannot be locked", faultyLedger{lockErr: fmt.Errorf("open: %w", ports.ErrNoSpace)}, "IO_OR_NUMERIC_ERROR",
			[]string{"(no space left on the device", "nothing was committed", "not recorded"}},
		{"a last record damaged since the pre-check", faultyLedger{lastSeen: []byte("garbage\n")}, "LEDGER_TAMPERED",
			[]string{"damaged while this call ran", "tool-runner ledger", "nothing was committed", "not recorded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			m := newMem(t, testutil.Fixture(t))
			digest := m.digest()
			m.run(inspect("i1"), "--workspace", wsRoot, "--ledger", "ledger.jsonl")
			before := string(m.read("ledger.jsonl"))
			r := m.withLedger(&tt.fault)(analyzeReq("r1", digest), "--workspace", wsRoot, "--output-dir", "runs", "--ledger", "ledger.jsonl")
			is.Equal(r.code(), tt.code)
			is.Equal(*r.Body.RequestID, "r1") // decided after the request was read
			for _, want := range tt.message {
				is.True(strings.Contains(r.Body.Error.Message, want)) // the message says it
			}
			is.True(!m.exists("runs/r1"))                    // nothing committed
			is.Equal(m.pending("runs"), []string(nil))       // the pending directory removed
			is.Equal(string(m.read("ledger.jsonl")), before) // not recorded
			is.Equal(tt.fault.appended, 0)
		})
	}
}

// The steps of an analyze with a ledger, in order: the sources are read
// again, the cancel marker is checked just before the commit and the run
// is committed while the ledger's lock is held, and its record is
// appended under the same hold, the run already visible.
func TestAnAnalyzeMakesItsLastChecksAndItsRecordUnderOneHold(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	digest := m.digest()
	f := &faultyLedger{}
	marker := &heldAt{f: f}
	m.cancel = marker
	var sawRun, heldThen bool
	f.onAppend = func() { sawRun, heldThen = m.exists("runs/r1/result.json"), f.held }
	r := m.withLedger(f)(analyzeReq("r1", digest), "--workspace", wsRoot, "--output-dir", "runs", "--ledger", "ledger.jsonl")
	is.Equal(r.code(), "")
	is.Equal(marker.held, []bool{false, false, true}) // before work, before writes, before the commit: only the last under the lock
	is.True(sawRun)                                   // the record comes after the commit
	is.True(heldThen)                                 // under the hold the commit was made in
	is.Equal(f.appended, 1)
	is.True(!f.held) // released once recorded
	is.Equal(len(m.memLedger("ledger.jsonl")), 1)
}

// heldAt is a cancel marker that never appears and remembers, at each
// check, whether the ledger's lock was held.
type heldAt struct {
	f    *faultyLedger
	held []bool
}

func (h *heldAt) Cancelled(context.Context) (bool, error) {
	h.held = append(h.held, h.f.held)
	return false, nil
}

// A last line damaged between the call's pre-check and its append is not
// built on: the append fails, so the call answers IO_OR_NUMERIC_ERROR
// (protocol §11; LEDGER_TAMPERED is decided before the request is read), with
// its request_id, and appends nothing.
func TestALedgerDamagedWhileTheCallRanIsNotBuiltOn(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	f := &faultyLedger{lastSeen: []byte("garbage\n")}
	r := m.withLedger(f)(inspect("i2"), "--workspace", wsRoot, "--ledger", "ledger.jsonl")
	is.Equal(r.code(), "IO_OR_NUMERIC_ERROR")
	is.Equal(*r.Body.RequestID, "i2")
	is.True(strings.Contains(r.Body.Error.Message, "damaged while this call ran"))
	is.True(strings.Contains(r.Body.Error.Message, "not recorded"))
	is.Equal(m.memLedger("ledger.jsonl"), nil)
}

// A pre-check that cannot read the ledger runs nothing: the answer is not
// recorded (there is no ledger to record it in), carries a null
// request_id, and no run is made.
func TestAPreCheckThatCannotReadTheLedgerRunsNothing(t *testing.T) {
	tests := []struct {
		err  error
		code string
		says string
	}{
		{ports.ErrBusy, "IO_OR_NUMERIC_ERROR", "for 10 s no call was recorded in it"},
		{ports.ErrWaitedTooLong, "IO_OR_NUMERIC_ERROR", "waited 10 minutes for a shared lock on the ledger, to read its last record, while other calls kept being recorded"},
		{errors.New("input/output error"), "IO_OR_NUMERIC_ERROR", "could not be read"},
		{ports.ErrNotRegular, "INVALID_OUTPUT", "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			is := is.New(t)
			m := newMem(t, testutil.Fixture(t))
			f := &faultyLedger{lastErr: tt.err}
			r := m.withLedger(f)(analyzeReq("r1", m.digest()), "--workspace", wsRoot, "--output-dir", "runs", "--ledger", "ledger.jsonl")
			is.Equal(r.code(), tt.code)
			is.Equal(r.Body.RequestID, nil)
			is.True(strings.Contains(r.Body.Error.Message, tt.says))
			is.True(!m.exists("runs")) // nothing ran
			is.Equal(f.appended, 0)    // nothing recorded
		})
	}
}

// Over stdio, an input that could not be read whole has no input hash:
// REQUEST_LIMIT, and a read that failed.
func TestAnInputNotReadWholeIsRecordedWithoutItsHash(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	var out bytes.Buffer
	failing := readerFunc(func([]byte) (int, error) { return 0, errors.New("read failed") })
	exit := stdio.Run(context.Background(), []string{"--workspace", wsRoot, "--ledger", "ledger.jsonl"}, failing, &out, m.wire)
	r := decode(t, out.Bytes(), exit)
	is.Equal(r.code(), "IO_OR_NUMERIC_ERROR")
	recs := m.memLedger("ledger.jsonl")
	is.Equal(len(recs), 1)
	is.Equal(recs[0]["input_sha256"], nil)
	is.Equal(recs[0]["code"], "IO_OR_NUMERIC_ERROR")
	is.Equal(recs[0]["response_sha256"], testutil.SHA256Hex(bytes.TrimSuffix(out.Bytes(), []byte("\n"))))
}

// Over MCP the record holds the call ID and the tool the answer carries,
// the SHA256 of the raw arguments (of no bytes when they are absent), and
// transport "mcp"; a call cancelled by its context is recorded as
// cancelled with the response it would have sent. The record is built by
// the call layer from the call as it arrived, whatever the transport.
func TestAnMCPCallIsRecordedWithItsRawArguments(t *testing.T) {
	m := newMem(t, testutil.Fixture(t))
	svc, err := app.Open(app.Options{Workspace: wsRoot, OutputDir: "runs", Ledger: "ledger.jsonl"}, m.wire)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	s := call.New(svc)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		tool string
		args []byte
		code string
	}{
		{"absent arguments", context.Background(), protocol.ToolInspect, nil, ""},
		{"raw arguments, spacing kept", context.Background(), protocol.ToolInspect, []byte(`{ }`), ""},
		{"arguments refused", context.Background(), protocol.ToolVerify, []byte(`{"run_id":1}`), "INVALID_ARGUMENTS"},
		{"a cancelled call", cancelled, protocol.ToolInspect, []byte(`{}`), "CANCELLED"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			a := s.Tool(tt.ctx, call.Transport{Name: "mcp", ListLimit: cli.DefaultListLimit}, nil, tt.tool, tt.args)
			a.Done()
			is.Equal(string(a.Code), tt.code)
			var resp struct {
				RequestID string `json:"request_id"`
				Tool      string `json:"tool"`
				Status    string `json:"status"`
			}
			is.NoErr(json.Unmarshal(a.JSON, &resp))
			recs := m.memLedger("ledger.jsonl")
			is.Equal(len(recs), i+1)
			r := recs[i]
			is.Equal(r["transport"], "mcp")
			is.Equal(r["request_id"], resp.RequestID) // the call ID
			is.Equal(r["tool"], tt.tool)
			is.Equal(r["status"], resp.Status)
			is.Equal(r["input_sha256"], testutil.SHA256Hex(tt.args)) // the raw bytes, or no bytes
			is.Equal(r["response_sha256"], testutil.SHA256Hex(a.JSON))
			is.Equal(r["engine_sha256"], strings.Repeat("e", 64))
			is.Equal(r["time"], "2026-11-29T12:00:00Z")
		})
	}
}

// A panic while the record is appended is INTERNAL_ERROR for the call as
// heard (its request_id kept), and a run the call committed is named as
// committed, not denied.
func TestAPanicWhileRecordingKeepsTheCallAndItsRun(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	digest := m.digest()
	r := m.withLedger(&faultyLedger{panics: true})(analyzeReq("r1", digest), "--workspace", wsRoot, "--output-dir", "runs", "--ledger", "ledger.jsonl")
	is.Equal(r.code(), "INTERNAL_ERROR")
	is.Equal(*r.Body.RequestID, "r1")
	is.True(strings.Contains(r.Body.Error.Message, "run r1 was committed"))
	is.True(!strings.Contains(r.Raw, "boom"))
	is.True(m.exists("runs/r1/result.json"))
}

// A ledger directly in the output directory is named like a run ID would
// be (protocol §11 allows it there): a run of that ID is refused as a
// collision, before anything is written, whether or not the ledger exists
// yet, so that no run is ever committed at the ledger's path.
func TestARunNamedLikeTheLedgerCollides(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	is.NoErr(m.fs.MkdirAll(path.Join(wsRoot, "runs"), 0o755)) // the ledger's directory exists
	digest := m.digest()
	r := m.run(analyzeReq("calls", digest), "--workspace", wsRoot, "--output-dir", "runs", "--ledger", "runs/calls")
	is.Equal(r.code(), "OUTPUT_COLLISION")
	is.True(strings.Contains(r.Body.Error.Message, "call ledger's path"))
	is.True(!m.exists("runs/calls/result.json")) // no run there
	is.Equal(len(m.memLedger("runs/calls")), 1)  // the refusal is recorded, in the ledger
	r = m.run(analyzeReq("calls", digest), "--workspace", wsRoot, "--output-dir", "runs", "--ledger", "runs/calls")
	is.Equal(r.code(), "OUTPUT_COLLISION") // and again, once the ledger exists
	is.Equal(len(m.memLedger("runs/calls")), 2)
}

// pending lists the pending directories in the workspace-relative dir.
func (m *memWorkspace) pending(dir string) []string {
	m.t.Helper()
	entries, err := afero.ReadDir(m.fs, path.Join(wsRoot, dir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		m.t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ports.PendingPrefix) {
			names = append(names, e.Name())
		}
	}
	return names
}

// A record is only ever appended when the chain check accepts it: a
// transport whose name a record may not take, a caller named where the
// transport knows none (or none where it does), or a principal past its
// bounds (a transport's bug) gets INTERNAL_ERROR for its call, which says
// the call was not recorded, and the ledger gains nothing; so the next
// call is not refused as LEDGER_TAMPERED.
func TestACallARecordCannotHoldIsNotRecorded(t *testing.T) {
	alice := ledger.Principal{Issuer: "https://id.example.com", Subject: "alice"}
	tests := []struct {
		name string
		t    call.Transport
	}{
		{"an unknown transport", call.Transport{Name: "pigeon"}},
		{"http naming no caller", call.Transport{Name: "http"}},
		{"mcp naming a caller", call.Transport{Name: "mcp", Caller: ledger.Named(alice)}},
		{"stdio naming an anonymous caller", call.Transport{Name: "stdio", Caller: ledger.Anonymous()}},
		{"a subject past its bound", call.Transport{Name: "http", Caller: ledger.Named(ledger.Principal{Issuer: alice.Issuer, Subject: strings.Repeat("s", ledger.MaxSubjectBytes+1)})}},
		{"a principal without an issuer", call.Transport{Name: "http", Caller: ledger.Named(ledger.Principal{Subject: "alice"})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			m := newMem(t, testutil.Fixture(t))
			svc, err := app.Open(app.Options{Workspace: wsRoot, Ledger: "ledger.jsonl"}, m.wire)
			is.NoErr(err)
			defer svc.Close()
			calls := call.New(svc)
			a := calls.Tool(context.Background(), tt.t, nil, protocol.ToolInspect, nil)
			a.Done()
			is.Equal(a.Code, protocol.InternalError)
			is.True(strings.Contains(string(a.JSON), "the call was not recorded; the call's own outcome was success"))
			is.True(!m.exists("ledger.jsonl"))
			a = calls.Tool(context.Background(), call.Transport{Name: "http", Caller: ledger.Named(alice)}, nil, protocol.ToolInspect, nil)
			a.Done()
			is.Equal(a.Code, protocol.Code("")) // the next call runs, and is recorded
			is.Equal(len(m.memLedger("ledger.jsonl")), 1)
		})
	}
}

// A directory on the ledger's path swapped for a symlink between the
// resolution of the path and the opening of the directory (the store's
// ErrMoved) is refused as PATH_BOUNDARY before standard input is read:
// nothing is run, written or recorded, and the message says what to do.
func TestALedgerDirectorySwappedWhileItIsOpenedIsRefused(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	digest := m.digest()
	before := m.tree()
	r := m.withLedger(&faultyLedger{openErr: ports.ErrMoved})(analyzeReq("r1", digest), "--workspace", wsRoot, "--output-dir", "runs", "--ledger", "ledger.jsonl")
	is.Equal(r.code(), "PATH_BOUNDARY")
	is.Equal(r.Exit, 1)
	is.Equal(r.Body.RequestID, nil) // decided before the request is read
	is.True(strings.Contains(r.Body.Error.Message, "replaced by a symlink"))
	is.True(strings.Contains(r.Body.Error.Message, "nothing was run"))
	is.Equal(m.tree(), before) // nothing written
}
