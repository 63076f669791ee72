// Package mcptest is the harness the tests of the MCP server (adapters/mcp)
// and of its HTTP transport (adapters/mcp/mcphttp) share: the shipped
// fixture in an in-memory workspace and the call layer over it, opened as
// "tool-runner mcp" opens it; a raw stdio session of that server; an SDK
// client's tool call checked for what every tool result must be. The HTTP
// tests run the stdio server beside theirs on one workspace to show both
// answer alike, so the harness lives once, here. It is for tests only.
package mcptest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/adapters/cli"
	"github.com/metricproof/metricproof/adapters/keyfile"
	"github.com/metricproof/metricproof/adapters/mcp"
	"github.com/metricproof/metricproof/adapters/memfs"
	"github.com/metricproof/metricproof/adapters/porttest"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/call"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/ports"
)

// WSRoot is where the in-memory workspace lives.
const WSRoot = "/operator/ws"

// World is an in-memory workspace and the service over it.
type World struct {
	t      testing.TB
	FS     afero.Fs
	WS     *memfs.Workspace
	Cancel ports.Canceller // nil: the options' marker
}

// NewWorld is the shipped fixture in a fresh in-memory workspace.
func NewWorld(t testing.TB) *World {
	t.Helper()
	fs := afero.NewMemMapFs()
	for name, data := range testutil.Fixture(t) {
		if err := fs.MkdirAll(path.Dir(path.Join(WSRoot, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := afero.WriteFile(fs, path.Join(WSRoot, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := memfs.New(fs, WSRoot)
	if err != nil {
		t.Fatal(err)
	}
	return &World{t: t, FS: fs, WS: ws}
}

// Wire composes the ports over the workspace, with a fixed clock and
// engine (an app.Wire).
func (w *World) Wire(o app.Options) (app.Ports, io.Closer, error) {
	cancel := w.Cancel
	if cancel == nil {
		cancel = w.WS.Marker(o.CancelFile)
	}
	return app.Ports{Sources: w.WS, Paths: w.WS, Evidence: w.WS, Ledger: w.WS, Cancel: cancel, Keys: keyfile.Reader{},
		Clock:  porttest.FixedClock(time.Date(2026, 12, 1, 7, 30, 0, 0, time.UTC)),
		Engine: porttest.FixedEngine{SHA256: strings.Repeat("e", 64), GoVersion: "go1.26.8"}}, nil, nil
}

// Service is the call layer over a service opened with the options of
// "tool-runner mcp" args, and the list limit they give.
type Service struct {
	Calls     *call.Calls
	ListLimit int
}

// Service opens the app with the options of "tool-runner mcp" args.
func (w *World) Service(args ...string) Service {
	w.t.Helper()
	return w.ServiceOver(w.Wire, args...)
}

// ServiceOver is Service over another composition of the ports.
func (w *World) ServiceOver(wire app.Wire, args ...string) Service {
	w.t.Helper()
	o, _, e := cli.Parse(cli.MCP, append([]string{"--workspace", WSRoot}, args...))
	if e != nil {
		w.t.Fatal(e)
	}
	s, err := app.Open(o.Options, wire)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { s.Close() })
	return Service{Calls: call.New(s), ListLimit: o.ListLimit}
}

// Write writes data to rel in the workspace, with its folders.
func (w *World) Write(t *testing.T, rel, data string) {
	t.Helper()
	p := path.Join(WSRoot, rel)
	if err := w.FS.MkdirAll(path.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := afero.WriteFile(w.FS, p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Read reads rel in the workspace.
func (w *World) Read(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := afero.ReadFile(w.FS, path.Join(WSRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Tree is every path of the workspace with its content.
func (w *World) Tree(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := afero.Walk(w.FS, WSRoot, func(p string, info fs.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, err := afero.ReadFile(w.FS, p)
		out[p] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// LedgerLines decodes the in-memory ledger's records.
func LedgerLines(t *testing.T, w *World) []map[string]any {
	t.Helper()
	data, err := afero.ReadFile(w.FS, WSRoot+"/calls.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var records []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("ledger line %q: %v", line, err)
		}
		records = append(records, r)
	}
	return records
}

// ListFiles lists every path in fs, one per line.
func ListFiles(t testing.TB, fs afero.Fs) string {
	t.Helper()
	var b strings.Builder
	err := afero.Walk(fs, "/", func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// RawSession runs the server of svc over its stdio stream, feeding it
// lines and closing its input, and returns every line it wrote.
func RawSession(t *testing.T, svc Service, lines ...string) []string {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		defer outW.Close()
		if err := mcp.ServeStdio(svc.Calls, svc.ListLimit, "test", inR, outW, context.Background()); err != nil {
			t.Errorf("the session did not start: %v", err)
			_ = inR.CloseWithError(err) // the writer below stops too
		}
	}()
	go func() {
		for _, l := range lines {
			_, _ = io.WriteString(inW, l+"\n")
		}
		inW.Close()
	}()
	var out []string
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 32<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	<-ended
	return out
}

// ReadmeBuild is what Go records for README's build command from a clean
// checkout: an engine an auditor can rebuild.
func ReadmeBuild() map[string]string {
	return map[string]string{"-buildmode": "exe", "-compiler": "gc", "-trimpath": "true", "CGO_ENABLED": "0",
		"GOARCH": "amd64", "GOOS": "linux", "vcs": "git", "vcs.revision": strings.Repeat("a", 40), "vcs.modified": "false"}
}

// Response is the §3 object of a tool result.
type Response struct {
	RequestID string          `json:"request_id"`
	OK        bool            `json:"ok"`
	Status    string          `json:"status"`
	Tool      string          `json:"tool"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Code string `json:"code"`
	} `json:"error"`
	Artifacts map[string]string `json:"artifacts"`
}

// Code is the response's error code; "" for a success.
func (r Response) Code() string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

// CallTool calls a tool and checks what every tool result must be: one
// text block holding the same object as the structured content (then only
// resource links), isError exactly when ok is false.
func CallTool(t *testing.T, cs *sdk.ClientSession, name string, args any) Response {
	t.Helper()
	r, _ := CallToolLinks(t, cs, name, args)
	return r
}

// CallToolLinks is CallTool that also returns the resource links after
// the text block.
func CallToolLinks(t *testing.T, cs *sdk.ClientSession, name string, args any) (Response, []*sdk.ResourceLink) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("%s: no content", name)
	}
	var links []*sdk.ResourceLink
	for _, c := range res.Content[1:] {
		link, ok := c.(*sdk.ResourceLink)
		if !ok {
			t.Fatalf("%s: content after the text is %T", name, c)
		}
		links = append(links, link)
	}
	text, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T", name, res.Content[0])
	}
	var fromText, fromStructured any
	if err := json.Unmarshal([]byte(text.Text), &fromText); err != nil {
		t.Fatal(err)
	}
	structured, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(structured, &fromStructured); err != nil {
		t.Fatal(err)
	}
	is.New(t).Equal(fromText, fromStructured) // one object, twice
	var r Response
	if err := json.Unmarshal([]byte(text.Text), &r); err != nil {
		t.Fatal(err)
	}
	if res.IsError == r.OK {
		t.Fatalf("%s: isError %v with ok %v", name, res.IsError, r.OK)
	}
	if r.Tool != name || r.RequestID == "" {
		t.Fatalf("%s: tool %q, request_id %q", name, r.Tool, r.RequestID)
	}
	return r, links
}

// DigestOf is the source digest inspect_inputs gives over cs.
func DigestOf(t *testing.T, cs *sdk.ClientSession) string {
	t.Helper()
	r := CallTool(t, cs, "inspect_inputs", map[string]any{})
	var res struct {
		SourceDigest string `json:"source_digest"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || res.SourceDigest == "" {
		t.Fatalf("inspect failed: %+v", r)
	}
	return res.SourceDigest
}
