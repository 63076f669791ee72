package mcphttp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/adapters/engine"
	"github.com/metricproof/metricproof/adapters/mcp"
	"github.com/metricproof/metricproof/adapters/mcp/internal/mcptest"
	"github.com/metricproof/metricproof/adapters/mcp/mcphttp"
	"github.com/metricproof/metricproof/adapters/oauth/oauthtest"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/internal/wire"
	"github.com/metricproof/metricproof/ports"
)

// The server over HTTP (protocol §14), opened and run in this process as
// "tool-runner mcp --http" runs it: the real command line, the real
// workspace on disk, the real tools, ledger and front; a test issuer on
// loopback; the Go SDK's Streamable HTTP client, or raw requests for what
// a client would not send. Only the clock (the issuer's, moved by hand)
// and a gate in the cancel check (to hold calls in flight) are the
// tests'.

// resource is the audience of the tests' tokens: the URL clients use
// behind a proxy, not the address the test listens on.
const resource = "https://mcp.example.com/mcp"

// The protocol revisions the tests' clients speak: the stateless one, and
// the last with a handshake.
const (
	stateless = "2026-07-28"
	handshake = "2025-11-25"
)

// The scopes of protocol §14.
const (
	scopeRead = "metricproof:read"
	scopeRun  = "metricproof:run"
	scopeBoth = scopeRead + " " + scopeRun
)

// httpServer is one server over HTTP, running.
type httpServer struct {
	ws     string // the workspace, on disk
	url    string // of /mcp
	base   string // scheme://host:port
	iss    *oauthtest.Issuer
	clock  *oauthtest.Clock
	gate   *gate
	stderr *testutil.SyncBuffer
	stop   context.CancelFunc
	exit   chan int
	once   sync.Once
	code   int
}

// httpSetup is how a test starts a server.
type httpSetup struct {
	noAuth bool
	ws     string            // "" for a fresh copy of the fixture
	iss    *oauthtest.Issuer // nil for a new one; shared by two servers
	args   []string          // more options
	// outputDir is --output-dir; runs when empty.
	outputDir string
}

// startHTTP opens and runs a server over HTTP on 127.0.0.1:0 with the
// output directory runs and the ledger calls.jsonl, and, unless
// s.noAuth, the test issuer's authorization.
func startHTTP(t *testing.T, s httpSetup) *httpServer {
	t.Helper()
	ws := s.ws
	if ws == "" {
		ws = testutil.CopyFixture(t, t.TempDir())
	}
	iss := s.iss
	if iss == nil {
		iss = oauthtest.New(t, oauthtest.NewClock())
	}
	h := &httpServer{ws: ws, iss: iss, clock: iss.Clock, gate: newGate(), stderr: &testutil.SyncBuffer{}, exit: make(chan int, 1)}
	real := wire.Real(engine.New())
	wired := func(o app.Options) (app.Ports, io.Closer, error) {
		p, closer, err := real(o)
		if err == nil {
			p.Clock, p.Cancel = h.clock, h.gate.over(p.Cancel)
		}
		return p, closer, err
	}
	out := s.outputDir
	if out == "" {
		out = "runs"
	}
	args := []string{"--workspace", ws, "--output-dir", out, "--ledger", "calls.jsonl", "--http", "127.0.0.1:0"}
	if !s.noAuth {
		args = append(args, "--auth-issuer", iss.URL, "--auth-audience", resource)
	}
	var stdout bytes.Buffer
	srv, code := mcp.Open(append(args, s.args...), &stdout, h.stderr, wired, "test", mcptest.ReadmeBuild(), mcphttp.Transport{})
	if srv == nil {
		t.Fatalf("open: exit %d: %s", code, h.stderr.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	go func() {
		code := srv.Run(ctx, strings.NewReader(""))
		srv.Close()
		h.exit <- code
	}()
	line := h.listening(t)
	h.url = line
	h.base = strings.TrimSuffix(line, "/mcp")
	t.Cleanup(func() {
		h.gate.release()
		if code := h.wait(); code != 0 {
			t.Errorf("the server exited %d", code)
		}
		if stdout.Len() > 0 {
			t.Errorf("the server wrote to stdout: %q", stdout.String())
		}
	})
	return h
}

// listening waits for the listening line, the one line a healthy server
// prints on stderr, and returns its URL.
func (h *httpServer) listening(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if text := h.stderr.String(); strings.HasSuffix(text, "\n") {
			var l struct {
				Listening string `json:"listening"`
			}
			if err := json.Unmarshal([]byte(text), &l); err != nil || !strings.HasSuffix(l.Listening, "/mcp") {
				t.Fatalf("not a listening line: %q", text)
			}
			return l.Listening
		}
		select {
		case code := <-h.exit:
			t.Fatalf("the server exited %d: %s", code, h.stderr.String())
		case <-time.After(time.Millisecond):
		}
	}
	t.Fatal("the server did not say it listens")
	return ""
}

// wait stops the server, once, and returns its exit status.
func (h *httpServer) wait() int {
	h.once.Do(func() {
		h.stop()
		h.code = <-h.exit
	})
	return h.code
}

// token is a token of the server's issuer for resource with scope.
func (h *httpServer) token(t *testing.T, scope string) string {
	t.Helper()
	return h.iss.Token(t, h.iss.Claims(resource, scope))
}

// records reads the ledger, one map a record; none when it does not exist.
func (h *httpServer) records(t *testing.T) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.ws, "calls.jsonl"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var recs []map[string]any
	for line := range bytes.Lines(data) {
		var r map[string]any
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("a ledger line is not JSON: %q", line)
		}
		recs = append(recs, r)
	}
	return recs
}

// runs lists the output directory's entries.
func (h *httpServer) runs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(h.ws, "runs"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// bearer is a client transport that sends a bearer token, when it has
// one, and a Host, when set.
type bearer struct {
	token, host string
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	if b.host != "" {
		req.Host = b.host
	}
	return http.DefaultTransport.RoundTrip(req)
}

// connect opens the Go SDK's Streamable HTTP client to the server, with
// token (none when empty), speaking version.
func (h *httpServer) connect(t *testing.T, version, token string) (*sdk.ClientSession, error) {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "http-test", Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{Endpoint: h.url, HTTPClient: &http.Client{Transport: bearer{token: token}}, MaxRetries: -1}
	cs, err := c.Connect(context.Background(), tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// session is connect that must succeed.
func (h *httpServer) session(t *testing.T, version, token string) *sdk.ClientSession {
	t.Helper()
	cs, err := h.connect(t, version, token)
	if err != nil {
		t.Fatalf("connect (%s): %v", version, err)
	}
	return cs
}

// reply is one raw exchange's answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// rpc is the JSON-RPC message of the answer: its body, or the data of its
// first server-sent event.
func (r reply) rpc(t *testing.T) map[string]any {
	t.Helper()
	data := r.body
	if strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		data = nil
		sc := bufio.NewScanner(bytes.NewReader(r.body))
		sc.Buffer(nil, 32<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				data = []byte(d)
				break
			}
		}
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("not a JSON-RPC message (status %d): %q", r.status, r.body)
	}
	return m
}

// toolResponse is the response object of a tool result answer.
func (r reply) toolResponse(t *testing.T) map[string]any {
	t.Helper()
	res, _ := r.rpc(t)["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("no tool result: %q", r.body)
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("the text is not JSON: %q", text)
	}
	return m
}

// exchange is a raw request's parts.
type exchange struct {
	ctx     context.Context
	method  string
	path    string // PathMCP when empty
	token   string
	version string // Mcp-Protocol-Version, when set
	body    string
	header  map[string]string
}

// do makes a raw request of the server and reads the whole answer.
func (h *httpServer) do(t *testing.T, x exchange) (reply, error) {
	t.Helper()
	if x.ctx == nil {
		x.ctx = context.Background()
	}
	if x.method == "" {
		x.method = http.MethodPost
	}
	url := h.url
	if x.path != "" {
		url = h.base + x.path
	}
	req, err := http.NewRequestWithContext(x.ctx, x.method, url, strings.NewReader(x.body))
	if err != nil {
		t.Fatal(err)
	}
	if x.method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if x.token != "" {
		req.Header.Set("Authorization", "Bearer "+x.token)
	}
	if x.version != "" {
		req.Header.Set("Mcp-Protocol-Version", x.version)
	}
	for k, v := range x.header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return reply{status: res.StatusCode, header: res.Header, body: body}, err
}

// post is do that must get an answer.
func (h *httpServer) post(t *testing.T, x exchange) reply {
	t.Helper()
	r, err := h.do(t, x)
	if err != nil {
		t.Fatalf("%s: %v", x.body, err)
	}
	return r
}

// toolCall is the body of a tools/call of tool with args (raw JSON) and
// id, in the request form of version: with the 2026-07-28 revision's
// _meta, or plain.
func toolCall(id int, version, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + meta(version) + `}}`
}

// meta is the 2026-07-28 revision's per-request _meta member, after a
// comma; nothing for an older revision.
func meta(version string) string {
	if version != stateless {
		return ""
	}
	return `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
}

// versionHeaders are the headers a request of version carries: the
// 2026-07-28 revision names its method and tool too.
func versionHeaders(version, method, name string) map[string]string {
	if version != stateless {
		return nil
	}
	return map[string]string{"Mcp-Method": method, "Mcp-Name": name}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// gate holds calls at their cancel checks while it is shut, until it is
// opened or the call is cancelled; open, it is the real marker.
type gate struct {
	mu      sync.Mutex
	shut    chan struct{} // nil when open
	arrived chan struct{} // one per call held
}

func newGate() *gate { return &gate{arrived: make(chan struct{}, 1024)} }

// over is the gate in front of the real canceller.
func (g *gate) over(real ports.Canceller) ports.Canceller { return gated{g: g, real: real} }

// hold shuts the gate.
func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut == nil {
		g.shut = make(chan struct{})
	}
}

// release opens the gate: every call held goes on.
func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut != nil {
		close(g.shut)
		g.shut = nil
	}
}

// waitHeld waits until n calls are held.
func (g *gate) waitHeld(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-g.arrived:
		case <-time.After(30 * time.Second):
			t.Fatal("no call reached the gate")
		}
	}
}

type gated struct {
	g    *gate
	real ports.Canceller
}

func (c gated) Cancelled(ctx context.Context) (bool, error) {
	c.g.mu.Lock()
	shut := c.g.shut
	c.g.mu.Unlock()
	if shut != nil {
		c.g.arrived <- struct{}{}
		select {
		case <-shut:
		case <-ctx.Done():
		}
	}
	return c.real.Cancelled(ctx)
}
