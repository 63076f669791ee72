//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/adapters/landlock"
	"github.com/metricproof/metricproof/adapters/oauth/oauthtest"
	"github.com/metricproof/metricproof/internal/testutil"
)

// The server over HTTP (protocol §14) as real processes: "tool-runner mcp
// --http" started from the command line, a test issuer on loopback, and
// the Go SDK's Streamable HTTP client.

// httpAudience is the audience of the tokens: the URL clients use (the
// proxy's, in production a TLS proxy's), not a server's own address.
const httpAudience = "https://mcp.example.com/mcp"

// httpProcess is one "tool-runner mcp --http" process, listening.
type httpProcess struct {
	cmd  *exec.Cmd
	url  *url.URL // of /mcp
	done chan error
	rest *bytes.Buffer // stderr after the listening line
}

// startHTTPProcess starts "tool-runner mcp --http 127.0.0.1:0" over ws
// with the output directory runs, the ledger calls.jsonl and the issuer's
// authorization, and waits for its listening line. It is stopped (SIGTERM)
// at the test's end, and must then exit 0.
func startHTTPProcess(t *testing.T, ws string, iss *oauthtest.Issuer, env []string, args ...string) *httpProcess {
	t.Helper()
	all := append([]string{"mcp", "--workspace", ws, "--output-dir", "runs", "--ledger", "calls.jsonl",
		"--http", "127.0.0.1:0", "--auth-issuer", iss.URL, "--auth-audience", httpAudience}, args...)
	cmd := exec.Command(runnerPath(t), all...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &httpProcess{cmd: cmd, done: make(chan error, 1), rest: &bytes.Buffer{}}
	lines := bufio.NewReader(stderr)
	first, err := lines.ReadString('\n')
	if strings.HasPrefix(first, "warning: ") { // an engine no one can rebuild says so first (protocol §9.1)
		first, err = lines.ReadString('\n')
	}
	var l struct {
		Listening string `json:"listening"`
	}
	if err != nil || json.Unmarshal([]byte(first), &l) != nil || !strings.HasSuffix(l.Listening, "/mcp") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("not a listening line: %q (%v)", first, err)
	}
	if p.url, err = url.Parse(l.Listening); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = io.Copy(p.rest, lines)
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.done:
			if err != nil {
				t.Errorf("the server exited: %v: %s", err, p.rest.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("the server did not stop on SIGTERM")
		}
	})
	return p
}

// bearerTransport sends a bearer token with every request.
type bearerTransport string

func (b bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(req)
}

// httpClient connects the Go SDK's Streamable HTTP client to endpoint with
// token, speaking version.
func httpClient(t *testing.T, endpoint, token, version string) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "process-test", Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearerTransport(token)}, MaxRetries: -1}
	cs, err := c.Connect(context.Background(), tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect (%s): %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// toolOver calls a tool and returns its response object (protocol §9.4).
func toolOver(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T", name, res.Content[0])
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(text.Text), &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if m["ok"] != true {
		t.Fatalf("%s refused: %v", name, m["error"])
	}
	return m
}

// roundRobin is a tiny reverse proxy: the n-th tool call goes to backend n
// mod 2, and every other message alternates on its own count. It records
// which backend served each tool call.
type roundRobin struct {
	backends []*url.URL
	mu       sync.Mutex
	calls    int
	others   int
	served   []string // "tool@backend"
}

func (rr *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &msg)
	rr.mu.Lock()
	var to int
	if msg.Method == "tools/call" {
		to = rr.calls % len(rr.backends)
		rr.calls++
		rr.served = append(rr.served, msg.Params.Name+"@"+string(rune('A'+to)))
	} else {
		to = rr.others % len(rr.backends)
		rr.others++
	}
	target := rr.backends[to]
	rr.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host})
	}}
	proxy.ServeHTTP(w, r)
}

// Two servers over HTTP, two processes on one workspace, one output
// directory and one ledger file, behind a round-robin proxy: inspect on
// one, analyze on the other, verify on the first, and the run read back
// through either, for each revision. Every call is in the ledger, each
// process appending under the ledger's lock, in one chain that
// "tool-runner ledger" accepts. Both run confined (protocol §16; no_new_privs
// shows it) and are ready.
func TestTwoHTTPServersBehindARoundRobinShareOneLedger(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	iss := oauthtest.New(t, oauthtest.NewClock())
	a := startHTTPProcess(t, ws, iss, nil)
	b := startHTTPProcess(t, ws, iss, nil)
	rr := &roundRobin{backends: []*url.URL{a.url, b.url}}
	proxy := httptest.NewServer(rr)
	t.Cleanup(proxy.Close)
	token := iss.Token(t, iss.Claims(httpAudience, "metricproof:read metricproof:run"))

	versions := []string{"2026-07-28", "2025-11-25"}
	for i, version := range versions {
		rr.mu.Lock()
		rr.calls, rr.served = 0, nil
		rr.mu.Unlock()
		cs := httpClient(t, proxy.URL+"/mcp", token, version)
		inspected := toolOver(t, cs, "inspect_inputs", map[string]any{})
		digest := inspected["result"].(map[string]any)["source_digest"].(string)
		runID := "team-" + string(rune('1'+i))
		toolOver(t, cs, "analyze", map[string]any{"expected_source_digest": digest, "run_id": runID})
		verified := toolOver(t, cs, "verify_result", map[string]any{"run_id": runID})
		is.Equal(verified["result"].(map[string]any)["integrity"], "verified")
		rr.mu.Lock()
		is.Equal(rr.served, []string{"inspect_inputs@A", "analyze@B", "verify_result@A"}) // each on the server named
		rr.mu.Unlock()
		read, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "metricproof://runs/" + runID + "/result.json"})
		is.NoErr(err)
		onDisk, err := os.ReadFile(filepath.Join(ws, "runs", runID, "result.json"))
		is.NoErr(err)
		is.Equal(read.Contents[0].Text, string(onDisk))
	}

	data, err := os.ReadFile(filepath.Join(ws, "calls.jsonl"))
	is.NoErr(err)
	var tools []string
	for line := range bytes.Lines(data) {
		var r struct {
			Transport string `json:"transport"`
			Tool      string `json:"tool"`
			Status    string `json:"status"`
			Principal struct {
				Issuer, Subject string
			} `json:"principal"`
		}
		is.NoErr(json.Unmarshal(line, &r))
		is.Equal(r.Transport, "http")
		is.Equal(r.Status, "success")
		is.Equal(r.Principal.Issuer, iss.URL)
		tools = append(tools, r.Tool)
	}
	flow := []string{"inspect_inputs", "analyze", "verify_result"}
	is.Equal(tools, append(flow, flow...)) // every call, once, in order

	for _, p := range []*httpProcess{a, b} { // ready, confined: the workspace, runs and ledger reachable
		res, err := http.Get(p.url.Scheme + "://" + p.url.Host + "/readyz")
		is.NoErr(err)
		res.Body.Close()
		is.Equal(res.StatusCode, http.StatusOK)
		status, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/status")
		is.NoErr(err)
		is.True(strings.Contains(string(status), "NoNewPrivs:\t1")) // it confined itself (protocol §16.4)
	}

	check := exec.Command(runnerPath(t), "ledger", "--workspace", ws, "--ledger", "calls.jsonl")
	out, err := check.CombinedOutput()
	is.True(err == nil) // the ledger check accepts the one chain
	is.True(strings.Contains(string(out), `"ledger":"verified","records":6,`))
}

// The official TypeScript clients, the SDK v1 (Streamable HTTP) and the v2
// client pinned to 2026-07-28, each run a whole flow with a bearer token
// against the real "tool-runner mcp --http": inspect, analyze, verify,
// and the run's result.json read as a resource, byte for byte; each call
// is recorded with the token's principal. It needs node and the clients
// installed: npm ci --prefix adapters/remote/testdata/tsclient (skipped
// otherwise, saying so; .ci/run installs them and requires it).
func TestTheTypeScriptClientsRunAFlowOverHTTP(t *testing.T) {
	node, dir := testutil.TSClients(t)
	for _, which := range []string{"v1", "v2"} {
		t.Run(which, func(t *testing.T) {
			is := is.New(t)
			ws := fixture(t)
			iss := oauthtest.New(t, oauthtest.NewClock())
			p := startHTTPProcess(t, ws, iss, nil)
			token := iss.Token(t, iss.Claims(httpAudience, "metricproof:read metricproof:run"))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "flow.mjs", which, p.url.String(), "ts-"+which)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "MCP_TOKEN="+token)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("the client's flow failed: %v: %s", err, stderr.String())
			}
			var got struct {
				ProtocolVersion *string `json:"protocolVersion"`
				Calls           []struct {
					Name     string         `json:"name"`
					IsError  bool           `json:"isError"`
					Response map[string]any `json:"response"`
				} `json:"calls"`
				Resource string `json:"resource"`
			}
			is.NoErr(json.Unmarshal(out, &got))
			if got.ProtocolVersion != nil {
				t.Logf("%s: protocol %s", which, *got.ProtocolVersion)
			}
			if which == "v2" {
				is.True(got.ProtocolVersion != nil && *got.ProtocolVersion == "2026-07-28")
			}
			is.Equal(len(got.Calls), 3)
			for i, name := range []string{"inspect_inputs", "analyze", "verify_result"} {
				is.Equal(got.Calls[i].Name, name)
				is.True(!got.Calls[i].IsError)
				is.Equal(got.Calls[i].Response["ok"], true)
			}
			is.Equal(got.Calls[2].Response["result"].(map[string]any)["integrity"], "verified")
			onDisk, err := os.ReadFile(filepath.Join(ws, "runs", "ts-"+which, "result.json"))
			is.NoErr(err)
			is.Equal(got.Resource, string(onDisk)) // the exact bytes
			is.True(!strings.Contains(string(out)+stderr.String(), token))

			data, err := os.ReadFile(filepath.Join(ws, "calls.jsonl"))
			is.NoErr(err)
			n := 0
			for line := range bytes.Lines(data) {
				var r struct {
					Transport string `json:"transport"`
					Principal struct{ Issuer, Subject string }
				}
				is.NoErr(json.Unmarshal(line, &r))
				is.Equal(r.Transport, "http")
				is.Equal(r.Principal.Issuer, iss.URL)
				is.Equal(r.Principal.Subject, "alice")
				n++
			}
			is.Equal(n, 3) // each call, recorded
		})
	}
}

// postTool posts one tools/call of inspect_inputs to endpoint with token,
// as the stateless revision sends it, and returns the HTTP status.
func postTool(t *testing.T, endpoint, token string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "inspect_inputs")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode
}

// The server over HTTP runs confined (protocol §16) and still does all it
// must: it answers calls on its port, and, a minute after its last fetch,
// fetches the issuer's key set again for a key rotated in, through the one
// port it may connect to. Without that port in its rules the kernel
// refuses the fetch and the rotated key is never taken. Long: it waits
// the minute out.
func TestAConfinedServerOverHTTPFetchesItsIssuersKeys(t *testing.T) {
	testutil.SkipUnlessLong(t)
	if !landlock.Kernel(false).Network {
		t.Skip("this kernel does not confine TCP (Landlock ABI 4): nothing to show")
	}
	is := is.New(t)
	ws := fixture(t)
	clock := oauthtest.NewClock()
	iss := oauthtest.New(t, clock)
	p := startHTTPProcess(t, ws, iss, nil)
	endpoint := p.url.String()
	is.Equal(postTool(t, endpoint, iss.Token(t, iss.Claims(httpAudience, "metricproof:read"))), http.StatusOK)

	fetches := iss.Fetches()
	iss.Rotate(t, "ES256")
	rotated := iss.Token(t, iss.Claims(httpAudience, "metricproof:read"))
	is.Equal(postTool(t, endpoint, rotated), http.StatusUnauthorized) // within the minute: not fetched
	is.Equal(iss.Fetches(), fetches)
	time.Sleep(61 * time.Second)                            // the server's own clock must pass the minute
	iss.DropConnections()                                   // no connection from before the confinement left to reuse
	is.Equal(postTool(t, endpoint, rotated), http.StatusOK) // fetched, confined
	is.Equal(iss.Fetches(), fetches+1)
}
