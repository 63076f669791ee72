package app_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/stdio"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/ports"
)

// The app's side of object storage (protocol §15): its answers to what a
// store reports, over a store faked on the in-memory workspace. The real
// store against a real S3 server is adapters/s3store's and cmd/tool-runner's.

// storeURL is the fake store's one place: its runs lie in the in-memory
// workspace under storeDir.
const (
	storeURL = "s3://evidence/runs"
	storeDir = "bucket/runs"
)

// Errors as the store reports them (adapters/s3store wraps them so).
var (
	errDown     = fmt.Errorf("%w (no connection)", ports.ErrUnavailable)
	errDenied   = fmt.Errorf("%w: %w (the store answered AccessDenied)", ports.ErrStoreDenied, ports.ErrPermission)
	errLost     = fmt.Errorf("%w: %w", ports.ErrOutcomeUnknown, errDown)
	errMaybeRun = fmt.Errorf("%w: %w", ports.ErrMaybeCommitted, errLost)
)

// fakeStore is an evidence store in "object storage": its place storeURL
// resolves as a store's does (Store set, always a directory), it keeps
// its runs in the workspace at storeDir, and each of its steps fails with
// the error fail names for it: "reach", "exists", "stage", "commit" (the
// commit is made, then fails: an answer lost), "read", "file" (each file
// read), "list".
type fakeStore struct {
	m    *memWorkspace
	fail map[string]error
}

func (f *fakeStore) Resolve(p string) (ports.Location, error) {
	if p == storeURL {
		return ports.Location{Rel: p, Exists: true, Dir: true, Store: true}, nil
	}
	return f.m.ws.Resolve(p)
}

func (f *fakeStore) dir(url string) string {
	if url != storeURL {
		panic("a place the fake store never resolved: " + url)
	}
	return storeDir
}

func (f *fakeStore) OpenWriter(dir string) (ports.EvidenceWriter, error) {
	w, err := f.m.ws.OpenWriter(f.dir(dir))
	if err != nil {
		return nil, err
	}
	return &fakeWriter{EvidenceWriter: w, f: f}, nil
}

func (f *fakeStore) ReadRun(dir, runID string, names []string, limitBytes int64) (ports.SavedRun, error) {
	if err := f.fail["read"]; err != nil {
		return ports.SavedRun{}, err
	}
	run, err := f.m.ws.ReadRun(f.dir(dir), runID, names, limitBytes)
	if err := f.fail["file"]; err != nil {
		for i := range run.Files {
			run.Files[i].Data, run.Files[i].Err = nil, err
		}
	}
	return run, err
}

func (f *fakeStore) ListRuns(dir string) ([]ports.ListedRun, error) {
	if err := f.fail["list"]; err != nil {
		return nil, err
	}
	return f.m.ws.ListRuns(f.dir(dir))
}

func (f *fakeStore) reach(_ context.Context, rel string) error {
	f.dir(rel)
	return f.fail["reach"]
}

type fakeWriter struct {
	ports.EvidenceWriter
	f *fakeStore
}

func (w *fakeWriter) Exists(runID string) (bool, error) {
	if err := w.f.fail["exists"]; err != nil {
		return false, err
	}
	return w.EvidenceWriter.Exists(runID)
}

func (w *fakeWriter) Stage(files []ports.File) error {
	if err := w.f.fail["stage"]; err != nil {
		return err
	}
	return w.EvidenceWriter.Stage(files)
}

func (w *fakeWriter) Commit(runID string) error {
	if err := w.EvidenceWriter.Commit(runID); err != nil {
		return err
	}
	return w.f.fail["commit"]
}

func (w *fakeWriter) Where(runID, name string) string {
	return storeURL + "/.attempt-0123/" + name
}

// withStore runs requests over m with its output directory in f.
func (m *memWorkspace) withStore(f *fakeStore) func(request string, args ...string) response {
	f.m = m
	return func(request string, args ...string) response {
		m.t.Helper()
		var out bytes.Buffer
		exit := stdio.Run(context.Background(), args, strings.NewReader(request), &out, f.wire)
		return decode(m.t, out.Bytes(), exit)
	}
}

func (f *fakeStore) wire(o app.Options) (app.Ports, io.Closer, error) {
	p, c, err := f.m.wire(o)
	p.Paths, p.Evidence, p.Reach = f, f, f.reach
	return p, c, err
}

// Every failure a store reports reaches the answer that says what is true:
// a store that did not answer is IO_OR_NUMERIC_ERROR and retryable, and
// nothing committed; a missing bucket is the option's fault; refused
// credentials say so; a commit whose answer was lost says the run may
// stand, never that nothing was committed, and is not retried blindly.
func TestAStoresFaultsReachHonestAnswers(t *testing.T) {
	tests := []struct {
		name, step string
		err        error
		tool       string // "analyze", "verify"
		code       protocol.Code
		retryable  bool
		says       string // in the message
		committed  bool   // a run stands afterwards
	}{
		{"analyze, the store down at the collision check", "exists", errDown, "analyze", protocol.IOOrNumericError, true, "nothing was committed", false},
		{"analyze, no bucket", "exists", ports.ErrNoBucket, "analyze", protocol.InvalidOutput, false, "bucket of the output directory does not exist", false},
		{"analyze, credentials refused", "exists", errDenied, "analyze", protocol.IOOrNumericError, false, "the store refused the credentials", false},
		{"analyze, the store down while staging", "stage", errDown, "analyze", protocol.IOOrNumericError, true, "nothing was committed", false},
		{"analyze, a staged file's answer lost", "stage", errLost, "analyze", protocol.IOOrNumericError, true, "nothing was committed", false},
		{"analyze, the commit's answer lost", "commit", errMaybeRun, "analyze", protocol.IOOrNumericError, false, "the run may be committed: verify it", true},
		{"verify, the store down", "read", errDown, "verify", protocol.IOOrNumericError, true, "could not be read (the store could not be reached", true},
		{"verify, no bucket", "read", ports.ErrNoBucket, "verify", protocol.InvalidOutput, false, "bucket of the output directory does not exist", true},
		{"verify, the store down for a file", "file", errDown, "verify", protocol.IOOrNumericError, true, "result.json of run r1 could not be read", true},
		{"verify, credentials refused for a file", "file", errDenied, "verify", protocol.IOOrNumericError, false, "refused the credentials", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			m := newMem(t, testutil.Fixture(t))
			digest := m.digest()
			f := &fakeStore{fail: map[string]error{}}
			run := m.withStore(f)
			args := []string{"--workspace", wsRoot, "--output-dir", storeURL}
			if tt.tool == "verify" {
				is.Equal(run(analyzeReq("r1", digest), args...).Exit, 0)
			}
			f.fail[tt.step] = tt.err
			var r response
			if tt.tool == "verify" {
				r = run(verifyReq("v1", "r1"), args...)
			} else {
				r = run(analyzeReq("r1", digest), args...)
			}
			is.Equal(r.Exit, 1)
			is.Equal(r.code(), string(tt.code))
			is.Equal(r.Body.Error.Retryable, tt.retryable)
			is.True(strings.Contains(r.Body.Error.Message, tt.says)) // the message says what is true
			is.Equal(len(r.Body.Artifacts), 0)                       // an answer that failed claims no file
			is.Equal(m.exists(storeDir+"/r1"), tt.committed)
		})
	}
}

// A run committed in a store is named by where its files lie: the URLs
// the writer gives, not a path made up from the run's name.
func TestARunInAStoreIsNamedByTheURLsOfItsFiles(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	run := m.withStore(&fakeStore{})
	r := run(analyzeReq("r1", m.digest()), "--workspace", wsRoot, "--output-dir", storeURL)
	is.Equal(r.Exit, 0)
	is.Equal(r.Body.Artifacts, map[string]string{
		"result":    storeURL + "/.attempt-0123/result.json",
		"receipt":   storeURL + "/.attempt-0123/receipt.json",
		"checksums": storeURL + "/.attempt-0123/checksums.json",
	})
}

// The list of runs (MCP's resources/list) from a store that does not
// answer is an error, retryable, never an empty list.
func TestRunsFromAStoreThatDoesNotAnswerAreAnErrorNotNone(t *testing.T) {
	for _, tt := range []struct {
		err       error
		code      protocol.Code
		retryable bool
	}{
		{errDown, protocol.IOOrNumericError, true},
		{ports.ErrNoBucket, protocol.InvalidOutput, false},
		{errDenied, protocol.IOOrNumericError, false},
	} {
		t.Run(tt.err.Error(), func(t *testing.T) {
			is := is.New(t)
			m := newMem(t, testutil.Fixture(t))
			f := &fakeStore{m: m, fail: map[string]error{"list": tt.err}}
			svc, err := app.Open(app.Options{Workspace: wsRoot, OutputDir: storeURL}, f.wire)
			is.NoErr(err)
			defer svc.Close()
			runs, more, err := svc.Runs(context.Background(), "", 10)
			e := protocol.ErrorOf(err)
			is.True(e != nil)
			is.Equal(e.Code, tt.code)
			is.Equal(e.Retryable, tt.retryable)
			is.Equal(len(runs), 0)
			is.True(!more)
		})
	}
}

// A server (CheckPaths, at its start) and the reviewer's page ask the
// store once before anything else: a store that does not serve the place
// stops them with the code of why, and no page is printed for a run that
// was never judged.
func TestAServerAndTheReviewAskTheStoreFirst(t *testing.T) {
	for _, tt := range []struct {
		err       error
		code      protocol.Code
		retryable bool
	}{
		{nil, "", false},
		{errDown, protocol.IOOrNumericError, true},
		{ports.ErrNoBucket, protocol.InvalidOutput, false},
		{errDenied, protocol.IOOrNumericError, false},
	} {
		t.Run(fmt.Sprint(tt.err), func(t *testing.T) {
			is := is.New(t)
			m := newMem(t, testutil.Fixture(t))
			f := &fakeStore{m: m, fail: map[string]error{"reach": tt.err}}
			svc, err := app.Open(app.Options{Workspace: wsRoot, OutputDir: storeURL}, f.wire)
			is.NoErr(err) // opening asks nothing of the store
			defer svc.Close()
			for _, err := range []error{svc.CheckPaths(), reviewErr(svc)} {
				e := protocol.ErrorOf(err)
				if tt.err == nil {
					is.True(e == nil || e.Code == protocol.MissingResult)
					continue
				}
				is.True(e != nil)
				is.Equal(e.Code, tt.code)
				is.Equal(e.Retryable, tt.retryable)
			}
		})
	}
}

// reviewErr is the error of the reviewer's page of a run that does not
// exist: nil when a page was made (saying the run is missing).
func reviewErr(svc *app.Service) error {
	r, err := svc.Review(context.Background(), "r1")
	if err == nil && r.Fault.Code != protocol.MissingResult {
		return errors.New("a page without the run's fault")
	}
	return err
}

// An option that names a store the composition cannot open is the
// option's fault, INVALID_OPTIONS, decided before the request is read
// (request_id null), naming the option and never a file.
func TestAStoreOptionThatCannotBeOpenedIsRefusedBeforeTheRequest(t *testing.T) {
	for _, tt := range []struct {
		option string
		err    error
		says   string
	}{
		{"--output-dir", ports.ErrStoreURL, "--output-dir is not a store's URL"},
		{"--ledger", ports.ErrStoreURL, "--ledger is not a store's URL"},
		{"--output-dir", ports.ErrStoreConfig, "names no region"},
		{"--ledger", ports.ErrNoCredentials, "hold no credentials"},
	} {
		t.Run(tt.option+" "+tt.says, func(t *testing.T) {
			is := is.New(t)
			wire := func(app.Options) (app.Ports, io.Closer, error) {
				return app.Ports{}, nil, &app.OptionError{Option: tt.option, Err: tt.err}
			}
			var out bytes.Buffer
			exit := stdio.Run(context.Background(), []string{"--workspace", wsRoot, tt.option, "s3://x"}, strings.NewReader(inspect("i1")), &out, wire)
			r := decode(t, out.Bytes(), exit)
			is.Equal(r.Exit, 1)
			is.Equal(r.code(), string(protocol.InvalidOptions))
			is.True(r.Body.RequestID == nil) // decided before the request
			is.True(strings.Contains(r.Body.Error.Message, tt.says))
			is.True(!strings.Contains(r.Raw, wsRoot))
		})
	}
}

// The ledger's faults as a store reports them: a pre-check the store did
// not answer runs nothing and is retryable; a missing bucket is the
// option's fault; an append the store did not answer is retryable unless
// the call committed a run, which a retry would only collide with.
func TestALedgerStoresFaultsReachHonestAnswers(t *testing.T) {
	tests := []struct {
		name      string
		ledger    faultyLedger
		analyze   bool
		code      protocol.Code
		retryable bool
		says      string
	}{
		{"pre-check, the store down", faultyLedger{lastErr: errDown}, false, protocol.IOOrNumericError, true, "nothing was run"},
		{"pre-check, no bucket", faultyLedger{lastErr: ports.ErrNoBucket}, false, protocol.InvalidOutput, false, "bucket of the ledger does not exist"},
		{"pre-check, credentials refused", faultyLedger{lastErr: errDenied}, false, protocol.IOOrNumericError, false, "refused the credentials"},
		{"append of an inspection, the store down", faultyLedger{appendErr: errDown}, false, protocol.IOOrNumericError, true, "the call's own outcome was success"},
		{"append of a committed run, the store down", faultyLedger{appendErr: errDown}, true, protocol.IOOrNumericError, false, "run r1 was committed and stays committed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			m := newMem(t, testutil.Fixture(t))
			digest := m.digest()
			f := tt.ledger
			run := m.withLedger(&f)
			req := inspect("i1")
			if tt.analyze {
				req = analyzeReq("r1", digest)
			}
			r := run(req, "--workspace", wsRoot, "--output-dir", "runs", "--ledger", "calls.jsonl")
			is.Equal(r.code(), string(tt.code))
			is.Equal(r.Body.Error.Retryable, tt.retryable)
			is.True(strings.Contains(r.Body.Error.Message, tt.says))
			is.Equal(f.appended, 0) // nothing recorded
		})
	}
}
