package mcphttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/adapters/engine"
	"github.com/metricproof/metricproof/adapters/mcp"
	"github.com/metricproof/metricproof/adapters/mcp/internal/mcptest"
	"github.com/metricproof/metricproof/adapters/mcp/mcphttp"
	"github.com/metricproof/metricproof/adapters/oauth/oauthtest"
	"github.com/metricproof/metricproof/app/call"
	"github.com/metricproof/metricproof/app/ledger"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/internal/wire"
)

// A full flow over HTTP with the Go SDK's client, for each revision, with
// a bearer token: inspect, analyze, verify, and the run's result.json read
// as a resource; each call recorded with transport "http" and the token's
// principal right after it, in a chain the ledger check accepts. Without
// authorization (loopback only) the principal is null.
func TestAFlowOverHTTPIsRecordedWithWhoCalled(t *testing.T) {
	for _, auth := range []bool{true, false} {
		for _, version := range []string{stateless, handshake} {
			t.Run(fmt.Sprintf("auth=%v/%s", auth, version), func(t *testing.T) {
				is := is.New(t)
				h := startHTTP(t, httpSetup{noAuth: !auth})
				token := ""
				if auth {
					token = h.token(t, scopeBoth)
				}
				cs := h.session(t, version, token)
				digest := mcptest.DigestOf(t, cs)
				run := mcptest.CallTool(t, cs, "analyze", map[string]any{"expected_source_digest": digest, "run_id": "r1"})
				is.Equal(run.Code(), "")
				is.Equal(mcptest.CallTool(t, cs, "verify_result", map[string]any{"run_id": "r1"}).Code(), "")
				read, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "metricproof://runs/r1/result.json"})
				is.NoErr(err)
				onDisk, err := os.ReadFile(filepath.Join(h.ws, "runs", "r1", "result.json"))
				is.NoErr(err)
				is.Equal(read.Contents[0].Text, string(onDisk)) // the exact bytes

				recs := h.records(t)
				is.Equal(len(recs), 3) // the three calls; the read is no call
				for i, tool := range []string{"inspect_inputs", "analyze", "verify_result"} {
					is.Equal(recs[i]["transport"], "http")
					is.Equal(recs[i]["tool"], tool)
					is.Equal(recs[i]["status"], "success")
					if auth {
						is.Equal(recs[i]["principal"], map[string]any{"issuer": h.iss.URL, "subject": "alice"})
					} else {
						p, present := recs[i]["principal"]
						is.True(present && p == nil) // null, and there
					}
				}
				is.Equal(recs[1]["run_id"], "r1")
				checkChain(t, h)
			})
		}
	}
}

// checkChain checks the server's ledger as "tool-runner ledger" does: every
// line a record of this engine's shape, chained.
func checkChain(t *testing.T, h *httpServer) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.ws, "calls.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	chain := ledger.Rules{Transports: ledger.Transports(), Callers: ledger.Callers()}.Chain()
	for line := range bytes.Lines(data) {
		if _, err := chain.Add(line); err != nil {
			t.Fatalf("the ledger check refuses the ledger: %v", err)
		}
	}
}

// Every fault of the options of the server over HTTP stops it at start:
// one line on stderr naming INVALID_OPTIONS (or the workspace's code),
// exit 2, nothing on stdout, no path, nothing written.
func TestHTTPOptionFaultsStopTheServerAtStart(t *testing.T) {
	ws := testutil.CopyFixture(t, t.TempDir())
	jwks := filepath.Join(ws, "jwks.json")
	if err := os.WriteFile(jwks, []byte(`{"keys":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code string
	}{
		{"no port", []string{"--http", "127.0.0.1"}, "INVALID_OPTIONS"},
		{"no host", []string{"--http", ":8080"}, "INVALID_OPTIONS"},
		{"every address without authorization", []string{"--http", "0.0.0.0:0"}, "INVALID_OPTIONS"},
		{"a name without authorization", []string{"--http", "mcp.example.com:0"}, "INVALID_OPTIONS"},
		{"an issuer without its audience", []string{"--http", "127.0.0.1:0", "--auth-issuer", "https://id.example.com"}, "INVALID_OPTIONS"},
		{"an issuer that is no URL", []string{"--http", "127.0.0.1:0", "--auth-issuer", "id", "--auth-audience", resource}, "INVALID_OPTIONS"},
		{"an http issuer off loopback", []string{"--http", "0.0.0.0:0", "--auth-issuer", "http://id.example.com", "--auth-audience", resource}, "INVALID_OPTIONS"},
		{"an unreachable issuer", []string{"--http", "127.0.0.1:0", "--auth-issuer", "http://127.0.0.1:1", "--auth-audience", resource}, "INVALID_OPTIONS"},
		{"a key set without keys", []string{"--http", "127.0.0.1:0", "--auth-issuer", "https://id.example.com", "--auth-audience", resource, "--auth-jwks", jwks}, "INVALID_OPTIONS"},
		{"a missing key set", []string{"--http", "127.0.0.1:0", "--auth-issuer", "https://id.example.com", "--auth-audience", resource, "--auth-jwks", filepath.Join(ws, "none.json")}, "INVALID_OPTIONS"},
		{"a certificate that is no certificate", []string{"--http", "127.0.0.1:0", "--tls-cert", jwks, "--tls-key", jwks}, "INVALID_OPTIONS"},
		{"an allowed host with a path", []string{"--http", "127.0.0.1:0", "--allowed-host", "mcp.example.com/mcp"}, "INVALID_OPTIONS"},
		{"an allowed origin without a scheme", []string{"--http", "127.0.0.1:0", "--allowed-origin", "app.example.com"}, "INVALID_OPTIONS"},
		{"a bad option before a missing workspace", []string{"--http", "0.0.0.0:0", "--workspace", filepath.Join(ws, "none")}, "INVALID_OPTIONS"},
		{"a missing workspace", []string{"--http", "127.0.0.1:0", "--workspace", filepath.Join(ws, "none")}, "MISSING_WORKSPACE"},
		{"an output directory in the sources", []string{"--http", "127.0.0.1:0", "--output-dir", "data"}, "PATH_BOUNDARY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			args := tt.args
			if !strings.Contains(strings.Join(args, " "), "--workspace") {
				args = append([]string{"--workspace", ws}, args...)
			}
			var stdout, stderr bytes.Buffer
			srv, code := mcp.Open(args, &stdout, &stderr, wire.Real(engine.New()), "test", mcptest.ReadmeBuild(), mcphttp.Transport{})
			is.True(srv == nil)
			is.Equal(code, 2)
			is.Equal(stdout.String(), "")
			is.Equal(strings.Count(stderr.String(), "\n"), 1)         // one line
			is.True(strings.HasPrefix(stderr.String(), tt.code+": ")) // naming its code
			is.True(!strings.Contains(stderr.String(), ws))           // no path
			is.True(!strings.Contains(stderr.String(), "listening"))  // it never listened
			_, err := os.Stat(filepath.Join(ws, "runs"))
			is.True(os.IsNotExist(err)) // nothing written
		})
	}
}

// Every bad token is 401 with the header that points a client at the
// metadata, for a call of each revision: none, expired past the leeway,
// another issuer's, another audience's, none, alg none, HS256 keyed with
// the issuer's public key, a key the issuer never published, and noise.
// Nothing runs, nothing is written or recorded, and no answer holds the
// token.
func TestHTTPRefusesEveryBadTokenAndRecordsNothing(t *testing.T) {
	h := startHTTP(t, httpSetup{})
	now := h.clock.Now()
	claims := func(change func(map[string]any)) map[string]any {
		c := h.iss.Claims(resource, scopeBoth)
		change(c)
		return c
	}
	other := oauthtest.New(t, h.clock)
	k := h.iss.Current()
	tests := []struct {
		name  string
		token string
	}{
		{"no token", ""},
		{"expired", h.iss.Token(t, claims(func(c map[string]any) { c["exp"] = now.Add(-61 * time.Second).Unix() }))},
		{"another issuer", other.Token(t, other.Claims(resource, scopeBoth))},
		{"our issuer's key, another iss", h.iss.Token(t, claims(func(c map[string]any) { c["iss"] = other.URL }))},
		{"another audience", h.iss.Token(t, claims(func(c map[string]any) { c["aud"] = "https://other.example.com/mcp" }))},
		{"no audience", h.iss.Token(t, claims(func(c map[string]any) { delete(c, "aud") }))},
		{"alg none", oauthtest.Sign(t, map[string]any{"alg": "none", "kid": k.ID}, claims(func(map[string]any) {}), k)},
		{"HS256 with the public key", oauthtest.SignHMAC(t, map[string]any{"alg": "HS256", "kid": k.ID}, claims(func(map[string]any) {}), k.PublicPEM(t))},
		{"a key never published", oauthtest.Sign(t, map[string]any{"alg": other.Current().Alg, "kid": "unpublished"}, claims(func(map[string]any) {}), other.Current())},
		{"noise", "not.a.token"},
	}
	for _, tt := range tests {
		for _, version := range []string{stateless, handshake} {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				is := is.New(t)
				r := h.post(t, exchange{token: tt.token, version: version, body: toolCall(1, version, "inspect_inputs", `{}`),
					header: versionHeaders(version, "tools/call", "inspect_inputs")})
				is.Equal(r.status, http.StatusUnauthorized)
				is.True(strings.Contains(r.header.Get("WWW-Authenticate"), `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`))
				is.True(tt.token == "" || !strings.Contains(string(r.body)+r.header.Get("WWW-Authenticate"), tt.token)) // no token bytes
				if tt.token == "" {
					_, err := h.connect(t, version, "")
					is.True(err != nil) // the SDK's client cannot connect either
				}
			})
		}
	}
	is := is.New(t)
	is.Equal(len(h.records(t)), 0) // nothing recorded
	is.Equal(len(h.runs(t)), 0)    // nothing written
}

// Scopes per tool: metricproof:read for inspect_inputs, verify_result,
// resources and every other message; metricproof:run for analyze. A token
// without the scope a body needs is 403 with insufficient_scope and the
// scope; nothing runs or is recorded. The tool is read as the SDK reads
// it: a name that differs only in case is another member.
func TestHTTPScopesArePerTool(t *testing.T) {
	h := startHTTP(t, httpSetup{})
	digest := mcptest.DigestOf(t, h.session(t, stateless, h.token(t, scopeBoth)))
	h.post(t, exchange{token: h.token(t, scopeBoth), body: toolCall(9, handshake, "analyze", `{"expected_source_digest":"`+digest+`","run_id":"r1"}`)})
	before := len(h.records(t))
	analyze := `{"expected_source_digest":"` + digest + `"}`
	tests := []struct {
		name, scope, body string
		need              string // "" when allowed; "refused" when the body is refused before the scope
	}{
		{"inspect with read", scopeRead, toolCall(1, handshake, "inspect_inputs", `{}`), ""},
		{"verify with read", scopeRead, toolCall(1, handshake, "verify_result", `{"run_id":"r1"}`), ""},
		{"analyze with read", scopeRead, toolCall(1, handshake, "analyze", analyze), scopeRun},
		{"analyze with run", scopeRun, toolCall(1, handshake, "analyze", analyze), ""},
		{"inspect with run", scopeRun, toolCall(1, handshake, "inspect_inputs", `{}`), scopeRead},
		{"verify with run", scopeRun, toolCall(1, handshake, "verify_result", `{"run_id":"r1"}`), scopeRead},
		{"a resource read with run", scopeRun, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"metricproof://runs/r1/result.json"}}`, scopeRead},
		{"a resource read with read", scopeRead, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"metricproof://runs/r1/result.json"}}`, ""},
		{"tools/list with run", scopeRun, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, scopeRead},
		{"initialize with neither", "openid", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, scopeRead},
		{"a malformed body with run", scopeRun, `{`, "refused"}, // -32700, as over stdio
		{"the tool named twice", scopeRead, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"inspect_inputs","name":"analyze","arguments":{}}}`, "refused"},
		{"analyze with a name twice in its arguments", scopeRead, toolCall(1, handshake, "analyze", `{"run_id":"a","run_id":"b"}`), scopeRun}, // the scope of the one tool named
		{"analyze named, another case after it", scopeRead, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"analyze","NAME":"inspect_inputs","arguments":` + analyze + `}}`, scopeRun},
		{"inspect named, analyze in another case", scopeRead, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME":"analyze","name":"inspect_inputs","arguments":{}}}`, ""},
	}
	allowed := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r := h.post(t, exchange{token: h.token(t, tt.scope), body: tt.body, version: handshake})
			if tt.need == "refused" {
				is.Equal(r.status, http.StatusBadRequest)
				is.Equal(r.header.Get("Content-Type"), "application/json")
				is.True(r.rpc(t)["error"] != nil) // a JSON-RPC error
				return
			}
			if tt.need != "" {
				is.Equal(r.status, http.StatusForbidden)
				is.True(strings.Contains(r.header.Get("WWW-Authenticate"), `error="insufficient_scope", scope="`+tt.need+`"`))
				return
			}
			is.Equal(r.status, http.StatusOK)
			if m := r.rpc(t); m["error"] != nil {
				t.Fatalf("refused: %v", m["error"])
			}
			if strings.Contains(tt.body, "tools/call") {
				allowed++
				if strings.Contains(tt.body, `"name":"inspect_inputs"`) {
					is.Equal(r.toolResponse(t)["tool"], "inspect_inputs") // the SDK ran the tool the scope was for
				}
			}
		})
	}
	is.New(t).Equal(len(h.records(t)), before+allowed) // only the calls let through are recorded
}

// A key the issuer rotated in is taken once the last fetch of its key set
// is a minute old (an unknown kid never fetches more often); the old key
// still verifies.
func TestHTTPTakesARotatedKeyAtMostOnceAMinute(t *testing.T) {
	is := is.New(t)
	h := startHTTP(t, httpSetup{})
	old := h.token(t, scopeBoth)
	fetches := h.iss.Fetches()
	h.iss.Rotate(t, "EdDSA")
	rotated := h.token(t, scopeBoth)
	call := func(token string) int {
		return h.post(t, exchange{token: token, version: handshake, body: toolCall(1, handshake, "inspect_inputs", `{}`)}).status
	}
	is.Equal(call(rotated), http.StatusUnauthorized) // within the minute: not fetched again
	is.Equal(h.iss.Fetches(), fetches)
	h.clock.Advance(61 * time.Second)
	is.Equal(call(rotated), http.StatusOK) // fetched once, and taken
	is.Equal(h.iss.Fetches(), fetches+1)
	is.Equal(call(old), http.StatusOK)
	is.Equal(call(rotated), http.StatusOK)
	is.Equal(h.iss.Fetches(), fetches+1) // one fetch for all
}

// Host and Origin, through the real server: a Host it does not serve is
// 403, unless --allowed-host names it (a reverse proxy's); an Origin is
// 403 unless --allowed-origin names it, and then CORS answers it. Nothing
// refused is recorded.
func TestHTTPServesOnlyItsHostsAndOrigins(t *testing.T) {
	h := startHTTP(t, httpSetup{args: []string{"--allowed-host", "mcp.example.com", "--allowed-origin", "https://app.example.com"}})
	token := h.token(t, scopeBoth)
	tests := []struct {
		name   string
		header map[string]string
		status int
	}{
		{"its own address", nil, http.StatusOK},
		{"an allowed host", map[string]string{"Host": "mcp.example.com"}, http.StatusOK},
		{"a rebound name", map[string]string{"Host": "evil.example"}, http.StatusForbidden},
		{"an allowed origin", map[string]string{"Origin": "https://app.example.com"}, http.StatusOK},
		{"another origin", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"a null origin", map[string]string{"Origin": "null"}, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			before := len(h.records(t))
			r := h.post(t, exchange{token: token, version: handshake, body: toolCall(1, handshake, "inspect_inputs", `{}`), header: tt.header})
			is.Equal(r.status, tt.status)
			if tt.status != http.StatusOK {
				is.Equal(len(h.records(t)), before) // not a call
				return
			}
			is.Equal(len(h.records(t)), before+1)
			if origin := tt.header["Origin"]; origin != "" {
				is.Equal(r.header.Get("Access-Control-Allow-Origin"), origin)
			} else {
				is.Equal(r.header.Get("Access-Control-Allow-Origin"), "") // no CORS without an origin
			}
		})
	}
}

// A body over 16 MiB is 413 before it is read whole, with or without a
// Content-Length; nothing is recorded.
func TestHTTPBodyOver16MiBIs413(t *testing.T) {
	is := is.New(t)
	h := startHTTP(t, httpSetup{})
	big := toolCall(1, handshake, "inspect_inputs", `{"pad":"`+strings.Repeat("a", 16<<20)+`"}`)
	r := h.post(t, exchange{token: h.token(t, scopeBoth), version: handshake, body: big})
	is.Equal(r.status, http.StatusRequestEntityTooLarge)
	is.Equal(len(h.records(t)), 0)
}

// The calls in flight hold at most 16 MiB in all across every connection,
// as over stdio: a call that does not fit is 503 with Retry-After: 1 and
// runs nothing; once the calls ahead are answered it fits again.
func TestHTTPCallsPastTheLoadBoundAre503(t *testing.T) {
	is := is.New(t)
	h := startHTTP(t, httpSetup{})
	token := h.token(t, scopeBoth)
	// A _meta of 60,000 values: the SDK holds some 160 bytes of tree a
	// value, so one such call counts for about 10 MiB.
	heavy := func(id int) string {
		return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"inspect_inputs","arguments":{},"_meta":{"pad":[` +
			strings.TrimSuffix(strings.Repeat("0,", 60000), ",") + `]}}}`
	}
	h.gate.hold()
	first := make(chan reply, 1)
	go func() { first <- h.post(t, exchange{token: token, version: handshake, body: heavy(1)}) }()
	h.gate.waitHeld(t, 1)
	r := h.post(t, exchange{token: token, version: handshake, body: heavy(2)})
	is.Equal(r.status, http.StatusServiceUnavailable)
	is.Equal(r.header.Get("Retry-After"), "1")
	light := h.post(t, exchange{token: token, version: handshake, body: `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`})
	is.Equal(light.status, http.StatusOK) // a small message still fits beside the held one
	is.True(light.rpc(t)["result"] != nil)
	h.gate.release()
	is.Equal((<-first).toolResponse(t)["ok"], true)
	is.Equal(h.post(t, exchange{token: token, version: handshake, body: heavy(4)}).status, http.StatusOK) // fits again
	recs := h.records(t)
	is.Equal(len(recs), 2) // the first and the last; the refused one is no call
}

// /healthz is 200 while the process serves; /readyz is 200 while the
// workspace, the output directory and the ledger can be reached, else 503
// naming the code; neither needs a token.
func TestHTTPHealthAndReadiness(t *testing.T) {
	is := is.New(t)
	h := startHTTP(t, httpSetup{})
	status := func(path string) (int, string) {
		r := h.post(t, exchange{method: http.MethodGet, path: path})
		var body struct{ Status, Code string }
		is.NoErr(json.Unmarshal(r.body, &body))
		return r.status, body.Code
	}
	code, _ := status("/healthz")
	is.Equal(code, http.StatusOK)
	code, _ = status("/readyz")
	is.Equal(code, http.StatusOK)

	ledgerFile := filepath.Join(h.ws, "calls.jsonl")
	is.NoErr(os.WriteFile(ledgerFile, []byte("torn"), 0o600))
	code, name := status("/readyz")
	is.Equal(code, http.StatusServiceUnavailable)
	is.Equal(name, "LEDGER_TAMPERED")
	code, _ = status("/healthz")
	is.Equal(code, http.StatusOK) // alive, not ready
	is.NoErr(os.Remove(ledgerFile))

	is.NoErr(os.WriteFile(filepath.Join(h.ws, "runs"), []byte("a file"), 0o644))
	code, name = status("/readyz")
	is.Equal(code, http.StatusServiceUnavailable)
	is.Equal(name, "INVALID_OUTPUT")
	is.NoErr(os.Remove(filepath.Join(h.ws, "runs")))
	code, _ = status("/readyz")
	is.Equal(code, http.StatusOK)
}

// On SIGINT or SIGTERM (the context of Run) the server takes no new
// connection and lets the calls in flight finish: each is answered and
// recorded, and Run returns 0.
func TestHTTPStopLetsTheCallsInFlightFinish(t *testing.T) {
	is := is.New(t)
	h := startHTTP(t, httpSetup{})
	token := h.token(t, scopeBoth)
	h.gate.hold()
	n := call.ComputeSlots() // each computing, held at its check
	answers := make(chan reply, n)
	for i := range n {
		version := []string{stateless, handshake}[i%2]
		go func() {
			answers <- h.post(t, exchange{token: token, version: version, body: toolCall(i, version, "inspect_inputs", `{}`),
				header: versionHeaders(version, "tools/call", "inspect_inputs")})
		}()
	}
	h.gate.waitHeld(t, n)
	stopped := make(chan int, 1)
	go func() { stopped <- h.wait() }()
	for { // the port closes
		if _, err := h.do(t, exchange{method: http.MethodGet, path: "/healthz"}); err != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	h.gate.release()
	for range n {
		r := <-answers
		is.Equal(r.status, http.StatusOK)
		is.Equal(r.toolResponse(t)["ok"], true) // answered, not cancelled
	}
	is.Equal(<-stopped, 0)
	recs := h.records(t)
	is.Equal(len(recs), n)
	for _, r := range recs {
		is.Equal(r["status"], "success")
	}
}

// A client that closes the connection of a call in flight cancels it at
// its next check, for every revision (the SDK itself does so only from
// 2026-07-28 on): the call is recorded as cancelled, its compute slot goes
// back, and the server goes on.
func TestHTTPAClosedConnectionCancelsTheCall(t *testing.T) {
	for _, version := range []string{stateless, handshake, "2025-06-18", "2025-03-26"} {
		t.Run(version, func(t *testing.T) {
			is := is.New(t)
			h := startHTTP(t, httpSetup{})
			token := h.token(t, scopeBoth)
			h.gate.hold()
			ctx, hangUp := context.WithCancel(context.Background())
			gone := make(chan error, 1)
			go func() {
				_, err := h.do(t, exchange{ctx: ctx, token: token, version: version, body: toolCall(1, version, "inspect_inputs", `{}`),
					header: versionHeaders(version, "tools/call", "inspect_inputs")})
				gone <- err
			}()
			h.gate.waitHeld(t, 1)
			hangUp()
			is.True(<-gone != nil) // the client went away
			deadline := time.Now().Add(30 * time.Second)
			for len(h.records(t)) == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			recs := h.records(t)
			is.Equal(len(recs), 1)
			is.Equal(recs[0]["status"], "cancelled") // recorded as cancelled
			is.Equal(recs[0]["code"], "CANCELLED")
			h.gate.release()
			for i := range 8 { // more calls than compute slots: none was kept
				r := h.post(t, exchange{token: token, version: version, body: toolCall(2+i, version, "inspect_inputs", `{}`),
					header: versionHeaders(version, "tools/call", "inspect_inputs")})
				is.Equal(r.toolResponse(t)["ok"], true)
			}
		})
	}
}

// Each POST body is checked as a stdio line is (protocol §9.7, §14.5)
// before the SDK sees it, and before the scope is decided: what is not
// JSON (blank too, which a request cannot leave unanswered) is 400 with
// -32700 as its body; a batch, a name twice outside the arguments, an
// unacceptable id or a message past the bounds is 400 with -32600; an
// argument fault (a name twice inside the arguments too) is the tool's
// answer, recorded with the SHA256 of the raw arguments, over 65,536
// characters too. Nothing refused is recorded.
func TestHTTPChecksEachBodyAsStdioChecksALine(t *testing.T) {
	h := startHTTP(t, httpSetup{})
	token := h.token(t, scopeBoth)
	long := `{"pad":"` + strings.Repeat("é", 70000) + `"}`
	values := `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"pad":[` + strings.TrimSuffix(strings.Repeat("0,", 70000), ",") + `]}}}`
	tests := []struct {
		name   string
		body   string
		status int
		code   int64  // the JSON-RPC error's, 0 for none
		id     any    // the error's id
		tool   string // the tool answer's code, for a tool result
		args   string // its raw arguments
	}{
		{"not JSON", `{`, 400, -32700, nil, "", ""},
		{"empty", ``, 400, -32700, nil, "", ""},
		{"blank", " \r\n", 400, -32700, nil, "", ""},
		{"NaN", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":NaN}`, 400, -32700, nil, "", ""},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"tools/list\"}", 400, -32700, nil, "", ""},
		{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, 400, -32600, nil, "", ""},
		{"two ids", `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list"}`, 400, -32600, nil, "", ""},
		{"a duplicate key outside the arguments", `{"jsonrpc":"2.0","id":7,"method":"tools/list","method":"tools/list"}`, 400, -32600, float64(7), "", ""},
		{"a duplicate key inside the arguments", toolCall(8, handshake, "verify_result", `{"run_id":"a","run_id":"b"}`), 200, 0, nil, "INVALID_JSON", `{"run_id":"a","run_id":"b"}`},
		{"an id with a fraction", `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, 400, -32600, nil, "", ""},
		{"an id past 2^53", `{"jsonrpc":"2.0","id":9007199254740992,"method":"tools/list"}`, 400, -32600, nil, "", ""},
		{"more than 65,536 values outside the arguments", values, 400, -32600, float64(7), "", ""},
		{"a cancellation of no valid id", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.5}}`, 202, 0, nil, "", ""},
		{"arguments longer than 65,536 characters", toolCall(9, handshake, "inspect_inputs", long), 200, 0, nil, "REQUEST_LIMIT", long},
		{"an unknown tool", toolCall(10, handshake, "rm", `{}`), 200, -32602, float64(10), "", ""},
	}
	recorded := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			before := len(h.records(t))
			r := h.post(t, exchange{token: token, version: handshake, body: tt.body})
			is.Equal(r.status, tt.status)
			switch {
			case tt.status == http.StatusAccepted:
				is.Equal(len(r.body), 0)
				return
			}
			m := r.rpc(t)
			if tt.code != 0 {
				e, _ := m["error"].(map[string]any)
				is.Equal(e["code"], float64(tt.code))
				is.Equal(m["id"], tt.id)
				is.Equal(len(h.records(t)), before) // no call
				return
			}
			is.Equal(r.toolResponse(t)["error"].(map[string]any)["code"], tt.tool)
			recorded++
			recs := h.records(t)
			is.Equal(len(recs), recorded)
			last := recs[len(recs)-1]
			is.Equal(last["code"], tt.tool)
			is.Equal(last["input_sha256"], testutil.SHA256Hex([]byte(tt.args))) // of the raw bytes sent
		})
	}
	is.New(t).Equal(len(h.records(t)), 2) // only the tool calls
}

// Servers of one output directory take each other's resources/list
// cursors, so a listing may go on through any server behind a balancer; a
// cursor of another output directory is unknown (-32602).
func TestHTTPServersOfOneOutputDirectoryShareCursors(t *testing.T) {
	is := is.New(t)
	a := startHTTP(t, httpSetup{noAuth: true})
	cs := a.session(t, handshake, "")
	digest := mcptest.DigestOf(t, cs)
	is.Equal(mcptest.CallTool(t, cs, "analyze", map[string]any{"expected_source_digest": digest, "run_id": "run-000"}).Code(), "")
	for i := 1; i <= mcp.RunsPerPage; i++ { // 101 runs: two pages
		is.NoErr(os.CopyFS(filepath.Join(a.ws, "runs", fmt.Sprintf("run-%03d", i)), os.DirFS(filepath.Join(a.ws, "runs", "run-000"))))
	}
	b := startHTTP(t, httpSetup{noAuth: true, ws: a.ws})
	first, err := cs.ListResources(context.Background(), &sdk.ListResourcesParams{})
	is.NoErr(err)
	is.Equal(len(first.Resources), mcp.RunsPerPage)
	is.True(first.NextCursor != "")
	rest, err := b.session(t, stateless, "").ListResources(context.Background(), &sdk.ListResourcesParams{Cursor: first.NextCursor})
	is.NoErr(err) // the other server goes on
	is.Equal(len(rest.Resources), 1)
	is.Equal(rest.Resources[0].Name, "run-100")

	other := startHTTP(t, httpSetup{noAuth: true, ws: a.ws, outputDir: "elsewhere"})
	_, err = other.session(t, handshake, "").ListResources(context.Background(), &sdk.ListResourcesParams{Cursor: first.NextCursor})
	var werr *jsonrpc.Error
	is.True(errors.As(err, &werr))
	is.Equal(werr.Code, int64(jsonrpc.CodeInvalidParams)) // unknown there
}

// The server names the TCP it needs once serving, for its confinement: the
// port it listens on (the one picked for :0), and the issuer's key set's
// port when it fetches the set; nothing to connect to with --auth-jwks or
// without authorization, and nothing over stdio.
func TestHTTPServerNamesThePortsItNeeds(t *testing.T) {
	ws := testutil.CopyFixture(t, t.TempDir())
	iss := oauthtest.New(t, oauthtest.NewClock())
	jwks := filepath.Join(ws, "jwks.json")
	if err := os.WriteFile(jwks, iss.JWKS(), 0o644); err != nil {
		t.Fatal(err)
	}
	issPort := iss.URL[strings.LastIndex(iss.URL, ":")+1:]
	tests := []struct {
		name    string
		args    []string
		connect []string
		listens bool
	}{
		{"over stdio", nil, nil, false},
		{"no authorization", []string{"--http", "127.0.0.1:0"}, nil, true},
		{"discovery", []string{"--http", "127.0.0.1:0", "--auth-issuer", iss.URL, "--auth-audience", resource}, []string{issPort}, true},
		{"a key set file", []string{"--http", "127.0.0.1:0", "--auth-issuer", iss.URL, "--auth-audience", resource, "--auth-jwks", jwks}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var stdout, stderr bytes.Buffer
			srv, code := mcp.Open(append([]string{"--workspace", ws}, tt.args...), &stdout, &stderr, wire.Real(engine.New()), "test", mcptest.ReadmeBuild(), mcphttp.Transport{})
			is.Equal(code, 0)
			defer srv.Close()
			bind, connect := srv.Network()
			var got []string
			for _, p := range connect {
				got = append(got, fmt.Sprint(p))
			}
			is.Equal(got, tt.connect)
			is.Equal(len(bind) == 1, tt.listens)
			if tt.listens {
				is.True(bind[0] != 0) // the port picked, not 0
			}
		})
	}
}
