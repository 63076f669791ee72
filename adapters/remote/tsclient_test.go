package remote_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/oauth"
	"github.com/metricproof/metricproof/adapters/remote"
	"github.com/metricproof/metricproof/internal/testutil"
)

// The official TypeScript clients, the SDK v1 (Streamable HTTP) and the v2
// client pinned to 2026-07-28, each connect with a bearer token, list the
// tools, call two, and are refused without a token. It needs node and the
// clients installed: npm ci --prefix adapters/remote/testdata/tsclient
// (skipped otherwise, saying so; .ci/run installs them and requires it).
func TestTheTypeScriptClients(t *testing.T) {
	node, dir := testutil.TSClients(t)
	for _, which := range []string{"v1", "v2"} {
		t.Run(which, func(t *testing.T) {
			is := is.New(t)
			f := start(t, false, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "client.mjs", which, f.srv.URL())
			cmd.Dir = dir
			token := f.token(t, remote.ScopeRead+" "+remote.ScopeRun)
			cmd.Env = append(os.Environ(), "MCP_TOKEN="+token)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			is.NoErr(err) // the client ran its flow
			var got struct {
				Tools           []string `json:"tools"`
				ProtocolVersion *string  `json:"protocolVersion"`
				Calls           []struct {
					Name    string `json:"name"`
					IsError bool   `json:"isError"`
					Text    string `json:"text"`
				} `json:"calls"`
				Unauthorized string `json:"unauthorized"`
			}
			is.NoErr(json.Unmarshal(out, &got))
			t.Logf("%s: protocol %v; without a token: %s", which, deref(got.ProtocolVersion), got.Unauthorized)
			is.Equal(got.Tools, []string{"analyze", "block", "inspect_inputs", "verify_result"})
			is.Equal(len(got.Calls), 2)
			for _, c := range got.Calls {
				is.True(!c.IsError)
				var s seen
				is.NoErr(json.Unmarshal([]byte(c.Text), &s))
				is.Equal(s.Tool, c.Name)
				is.Equal(*s.Principal, oauth.Principal{Issuer: f.iss.URL, Subject: "alice"})
			}
			if which == "v2" {
				is.Equal(deref(got.ProtocolVersion), stateless)
			}
			is.True(strings.Contains(got.Unauthorized, "401") || strings.Contains(strings.ToLower(got.Unauthorized), "unauthorized"))
			is.True(!strings.Contains(string(out)+stderr.String(), token)) // the client printed no token
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "(none)"
	}
	return *s
}
