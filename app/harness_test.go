package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/adapters/memfs"
	"github.com/metricproof/metricproof/adapters/porttest"
	"github.com/metricproof/metricproof/adapters/stdio"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/ports"
)

// wsRoot is where the in-memory workspace lives. Responses must never
// mention it.
const wsRoot = "/secret/operator/ws"

// fixedTime is the clock of every in-memory run.
var fixedTime = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// fixedEngine is the engine identity of every in-memory run.
func fixedEngine() porttest.FixedEngine {
	return porttest.FixedEngine{SHA256: strings.Repeat("e", 64), GoVersion: "go1.26.8", ModuleVersion: "(devel)"}
}

// memWorkspace is an in-memory workspace and the runner over it.
type memWorkspace struct {
	t      testing.TB
	fs     afero.Fs
	ws     *memfs.Workspace
	engine ports.Engine
	cancel ports.Canceller // nil: the marker of the options
}

func newMem(t testing.TB, files map[string][]byte) *memWorkspace {
	t.Helper()
	fs := afero.NewMemMapFs()
	if err := fs.MkdirAll(wsRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		p := path.Join(wsRoot, name)
		if err := fs.MkdirAll(path.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := afero.WriteFile(fs, p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := memfs.New(fs, wsRoot)
	if err != nil {
		t.Fatal(err)
	}
	return &memWorkspace{t: t, fs: fs, ws: ws, engine: fixedEngine()}
}

func (m *memWorkspace) ports(o app.Options) app.Ports {
	cancel := m.cancel
	if cancel == nil {
		cancel = m.ws.Marker(o.CancelFile)
	}
	return app.Ports{
		Sources: m.ws, Paths: m.ws, Evidence: m.ws, Ledger: m.ws, Cancel: cancel,
		Clock: porttest.FixedClock(fixedTime), Engine: m.engine,
	}
}

// wire is the in-memory composition root: the workspace exists only at
// wsRoot.
func (m *memWorkspace) wire(o app.Options) (app.Ports, io.Closer, error) {
	if o.Workspace != wsRoot {
		return app.Ports{}, nil, ports.ErrMissing
	}
	return m.ports(o), nil, nil
}

// run answers one request with the given arguments, through the one-shot
// transport.
func (m *memWorkspace) run(request string, args ...string) response {
	m.t.Helper()
	var out bytes.Buffer
	exit := stdio.Run(context.Background(), args, strings.NewReader(request), &out, m.wire)
	return decode(m.t, out.Bytes(), exit)
}

func (m *memWorkspace) read(rel string) []byte {
	m.t.Helper()
	b, err := afero.ReadFile(m.fs, path.Join(wsRoot, rel))
	if err != nil {
		m.t.Fatal(err)
	}
	return b
}

func (m *memWorkspace) exists(rel string) bool {
	_, err := m.fs.Stat(path.Join(wsRoot, rel))
	return err == nil
}

// response is a decoded reply.
type response struct {
	Raw  string
	Exit int
	Body struct {
		ProtocolVersion string          `json:"protocol_version"`
		RequestID       *string         `json:"request_id"`
		OK              bool            `json:"ok"`
		Status          string          `json:"status"`
		Tool            *string         `json:"tool"`
		Result          json.RawMessage `json:"result"`
		Error           *struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
		Artifacts map[string]string `json:"artifacts"`
	}
}

func (r response) code() string {
	if r.Body.Error == nil {
		return ""
	}
	return r.Body.Error.Code
}

func decode(t testing.TB, line []byte, exit int) response {
	t.Helper()
	r := response{Raw: string(line), Exit: exit}
	if err := json.Unmarshal(line, &r.Body); err != nil {
		t.Fatalf("reply is not JSON: %v: %q", err, line)
	}
	return r
}

func inspect(id string) string {
	return `{"request_id":"` + id + `","tool":"inspect_inputs","arguments":{}}`
}

func analyzeReq(id, digest string) string {
	return `{"request_id":"` + id + `","tool":"analyze","arguments":{"expected_source_digest":"` + digest + `"}}`
}

func verifyReq(id, runID string) string {
	return `{"request_id":"` + id + `","tool":"verify_result","arguments":{"run_id":"` + runID + `"}}`
}

// digest inspects and returns the source digest.
func (m *memWorkspace) digest() string {
	m.t.Helper()
	r := m.run(inspect("i1"), "--workspace", wsRoot)
	var res struct {
		SourceDigest string `json:"source_digest"`
	}
	if err := json.Unmarshal(r.Body.Result, &res); err != nil || res.SourceDigest == "" {
		m.t.Fatalf("inspect failed: %s", r.Raw)
	}
	return res.SourceDigest
}
