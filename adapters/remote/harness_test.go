package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/adapters/oauth"
	"github.com/metricproof/metricproof/adapters/oauth/oauthtest"
	"github.com/metricproof/metricproof/adapters/remote"
	"github.com/metricproof/metricproof/internal/testutil"
)

// resource is the audience of the tests' tokens: the URL clients would use
// behind a proxy; it need not be the address the test listens on.
const resource = "https://mcp.example.com/mcp"

// The protocol revisions the tests' clients speak: the stateless one, and
// the last with a handshake.
const (
	stateless = "2026-07-28"
	handshake = "2025-11-25"
)

// toy is an MCP server standing in for metricproof's: tools named as ours,
// each answering who called it, and a tool that blocks until released.
type toy struct {
	server  *mcp.Server
	calls   atomic.Int64  // tool calls that ran
	arrived chan struct{} // one per call of "block"
	release chan struct{} // closed to release every "block"
	once    sync.Once
	stop    chan struct{} // closed to cancel every "block", as a stop does
	stopped sync.Once
}

// cancelAll cancels every call of "block": the fixture's CancelCalls.
func (t *toy) cancelAll() { t.stopped.Do(func() { close(t.stop) }) }

// seen is what a toy tool answers: the principal the SDK handed it.
type seen struct {
	Principal *oauth.Principal `json:"principal"`
	Tool      string           `json:"tool"`
	Cancelled bool             `json:"cancelled,omitempty"`
}

func newToy() *toy {
	t := &toy{
		server:  mcp.NewServer(&mcp.Implementation{Name: "toy", Version: "v0"}, nil),
		arrived: make(chan struct{}, 1024),
		release: make(chan struct{}),
		stop:    make(chan struct{}),
	}
	answer := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		t.calls.Add(1)
		s := seen{Tool: req.Params.Name}
		if p, ok := oauth.PrincipalOf(req.Extra.TokenInfo); ok {
			s.Principal = &p
		}
		if req.Params.Name == "block" {
			t.arrived <- struct{}{}
			select {
			case <-t.release:
			case <-t.stop:
				s.Cancelled = true
			case <-ctx.Done():
				s.Cancelled = true
			}
		}
		data, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}, nil
	}
	for _, name := range []string{"inspect_inputs", "analyze", "verify_result", "block"} {
		t.server.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, answer)
	}
	return t
}

func (t *toy) handler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return t.server }, remote.StreamableOptions())
}

// scopeOf is the tests' own scope function: analyze needs run, anything
// else read.
func scopeOf(method, tool string) string {
	if method == "tools/call" && tool == "analyze" {
		return remote.ScopeRun
	}
	return remote.ScopeRead
}

// refusal is the tests' reader's answer to a body it refuses.
const refusal = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: not one message read one way"}}`

// readBody is the tests' stand-in for the MCP server's check of a body
// (Options.Read, which the MCP adapter gives and tests against the SDK
// behind the front, byte for byte as over stdio): the method and tool
// read as the SDK reads them (member names matched case-sensitively), and
// a refusal of anything the SDK might read otherwise: not one object, a
// member name twice at any depth, a string that is not Unicode.
func readBody(body []byte) (remote.Reading, []byte) {
	var msg struct {
		Method string         `json:"method"`
		Params jsontext.Value `json:"params"`
	}
	if jsonv2.Unmarshal(body, &msg) != nil {
		return remote.Reading{}, []byte(refusal)
	}
	r := remote.Reading{Method: msg.Method, Checked: string(body)}
	if msg.Method == "tools/call" {
		var params struct {
			Name string `json:"name"`
		}
		if jsonv2.Unmarshal(msg.Params, &params) != nil {
			return remote.Reading{}, []byte(refusal)
		}
		r.Tool = params.Name
	}
	return r, nil
}

// fixture is a front serving a toy on loopback, with a test issuer.
type fixture struct {
	srv    *remote.Server
	toy    *toy
	iss    *oauthtest.Issuer
	stderr *testutil.SyncBuffer
	stop   context.CancelFunc
	served chan error
	once   sync.Once
	result error
}

// wait waits for Serve to return, once, and gives what it returned.
func (f *fixture) wait() error {
	f.once.Do(func() { f.result = <-f.served })
	return f.result
}

// start serves a toy behind a front on 127.0.0.1:0, with authorization by
// a test issuer unless noAuth; change adjusts the options first.
func start(t *testing.T, noAuth bool, change func(*remote.Options)) *fixture {
	t.Helper()
	clock := oauthtest.NewClock()
	f := &fixture{toy: newToy(), iss: oauthtest.New(t, clock), stderr: &testutil.SyncBuffer{}, served: make(chan error, 1)}
	o := remote.Options{Addr: "127.0.0.1:0", MCP: f.toy.handler(), Stderr: f.stderr, CancelCalls: f.toy.cancelAll, Read: readBody}
	if !noAuth {
		v, err := oauth.New(context.Background(), oauth.Config{Issuer: f.iss.URL, Audience: resource, AllowHTTP: true, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		o.Auth = &remote.Auth{Issuer: f.iss.URL, Resource: resource, Verify: v.Verify, Scope: scopeOf}
	}
	if change != nil {
		change(&o)
	}
	srv, err := remote.Listen(o)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	ctx, cancel := context.WithCancel(context.Background())
	f.stop = cancel
	go func() { f.served <- srv.Serve(ctx) }()
	for !strings.Contains(f.stderr.String(), "\n") && len(f.served) == 0 { // ready once it said so
		runtime.Gosched()
	}
	t.Cleanup(func() {
		f.toy.releaseAll()
		cancel()
		if err := f.wait(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return f
}

// settle waits until the server holds no request and no body's bytes:
// a client has its answer a moment before the handler that wrote it
// gives back its slot and its bytes.
func (f *fixture) settle() {
	for !f.srv.Idle() {
		time.Sleep(time.Millisecond)
	}
}

// releaseAll releases every call of "block", now and later.
func (t *toy) releaseAll() { t.once.Do(func() { close(t.release) }) }

// token is a token from the fixture's issuer for resource with scope.
func (f *fixture) token(t *testing.T, scope string) string {
	return f.iss.Token(t, f.iss.Claims(resource, scope))
}

// exchange is one HTTP exchange a client made, as the recorder saw it.
type exchange struct {
	status int
	header http.Header
	body   string
}

// recorder is a client transport that sends a bearer token (when set) and
// keeps every answer, so tests see what the SDK client saw.
type recorder struct {
	token string
	host  string // sent as Host when set
	base  http.RoundTripper
	mu    sync.Mutex
	seen  []exchange
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.host != "" {
		req.Host = r.host
	}
	base := r.base
	if base == nil {
		base = http.DefaultTransport
	}
	res, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	// A 405 is the answer to the standalone stream older clients open
	// with GET, which a stateless server does not keep.
	if res.StatusCode >= 300 && !(req.Method == http.MethodGet && res.StatusCode == http.StatusMethodNotAllowed) {
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		res.Body = io.NopCloser(bytes.NewReader(body))
		r.mu.Lock()
		r.seen = append(r.seen, exchange{status: res.StatusCode, header: res.Header.Clone(), body: string(body)})
		r.mu.Unlock()
	}
	return res, nil
}

// refusals are the answers of 300 and above the client got (but the 405s
// of GET).
func (r *recorder) refusals() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]exchange(nil), r.seen...)
}

// connect opens an SDK client session to the fixture with token.
func connect(ctx context.Context, url, version string, rec *recorder) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}, MaxRetries: -1}
	return c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
}

// call calls a tool and reads what the toy saw.
func call(ctx context.Context, cs *mcp.ClientSession, tool string) (seen, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		return seen{}, err
	}
	if len(res.Content) != 1 {
		return seen{}, errors.New("not one content block")
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return seen{}, errors.New("not text")
	}
	var s seen
	err = json.NewDecoder(strings.NewReader(text.Text)).Decode(&s)
	return s, err
}
