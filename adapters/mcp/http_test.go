package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/adapters/engine"
	"github.com/metricproof/metricproof/adapters/mcp"
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
				digest := digestOf(t, cs)
				run := callTool(t, cs, "analyze", map[string]any{"expected_source_digest": digest, "run_id": "r1"})
				is.Equal(run.code(), "")
				is.Equal(callTool(t, cs, "verify_result", map[string]any{"run_id": "r1"}).code(), "")
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
			srv, code := mcp.Open(args, &stdout, &stderr, wire.Real(engine.New()), "test")
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
