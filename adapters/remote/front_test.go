package remote_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/adapters/remote"
)

// initialize is a JSON-RPC body the SDK answers.
const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"v0"}}}`

// post sends a raw POST to the fixture's /mcp, with headers.
func post(t *testing.T, f *fixture, headers map[string]string, body io.Reader, length int64) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL(), body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// errorOf reads the error code of a refusal's body.
func errorOf(t *testing.T, res *http.Response) string {
	t.Helper()
	var body struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Description == "" {
		t.Fatal("a refusal that does not say what to do")
	}
	return body.Error
}

// port is the fixture's port.
func (f *fixture) port() string {
	_, port, _ := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(f.srv.URL(), "http://"), remote.PathMCP))
	return port
}

// A Host that is not served is 403 before anything else (DNS rebinding: a
// page of another name reaching the loopback server); the listen address,
// the localhost forms and each --allowed-host pass, to the token check.
func TestHostsThatAreNotServedAreForbidden(t *testing.T) {
	f := start(t, false, func(o *remote.Options) { o.AllowedHosts = []string{"mcp.example.com", "10.0.0.5:8443"} })
	p := f.port()
	tests := []struct {
		host string
		want int
	}{
		{"127.0.0.1:" + p, 401},
		{"localhost:" + p, 401},
		{"LOCALHOST.:" + p, 401},
		{"[::1]:" + p, 401},
		{"mcp.example.com", 401},
		{"mcp.example.com:443", 401},
		{"10.0.0.5:8443", 401},
		{"10.0.0.5:8444", 403},
		{"10.0.0.5", 403},
		{"attacker.example:" + p, 403},
		{"127.0.0.1.attacker.example:" + p, 403},
		{"localhost.attacker.example", 403},
		{"mcp.example.com.evil:" + p, 403},
		{"[::1", 403},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			is := is.New(t)
			before := f.toy.calls.Load()
			res := post(t, f, map[string]string{"Host": tt.host}, strings.NewReader(initialize), int64(len(initialize)))
			is.Equal(res.StatusCode, tt.want)
			if tt.want == 403 {
				is.Equal(errorOf(t, res), "forbidden_host")
				is.Equal(res.Header.Get("WWW-Authenticate"), "")
			}
			is.Equal(f.toy.calls.Load(), before)
		})
	}
}

// Behind a reverse proxy that connects over loopback with the public name
// as Host, the SDK's own rebinding check would answer 403; with the name
// given as --allowed-host, a whole flow works.
func TestAReverseProxyOnLoopbackWithAnAllowedHost(t *testing.T) {
	is := is.New(t)
	f := start(t, false, func(o *remote.Options) { o.AllowedHosts = []string{"mcp.example.com"} })
	rec := &recorder{token: f.token(t, remote.ScopeRead+" "+remote.ScopeRun), host: "mcp.example.com"}
	cs, err := connect(context.Background(), f.srv.URL(), stateless, rec)
	is.NoErr(err)
	defer cs.Close()
	got, err := call(context.Background(), cs, "analyze")
	is.NoErr(err)
	is.Equal(got.Tool, "analyze")
}

// An Origin not among --allowed-origin is 403 (none by default); an
// allowed one gets CORS headers, and its preflight is answered without a
// token; without --allowed-origin no CORS header is ever sent.
func TestOriginsAndCORS(t *testing.T) {
	closed := start(t, false, nil)
	open := start(t, false, func(o *remote.Options) { o.AllowedOrigins = []string{"https://app.example.com"} })
	t.Run("no origin is allowed by default", func(t *testing.T) {
		is := is.New(t)
		res := post(t, closed, map[string]string{"Origin": "https://app.example.com"}, strings.NewReader(initialize), int64(len(initialize)))
		is.Equal(res.StatusCode, 403)
		is.Equal(errorOf(t, res), "forbidden_origin")
		is.Equal(res.Header.Get("Access-Control-Allow-Origin"), "")
	})
	t.Run("no CORS header without --allowed-origin", func(t *testing.T) {
		is := is.New(t)
		res := post(t, closed, nil, strings.NewReader(initialize), int64(len(initialize)))
		is.Equal(res.StatusCode, 401)
		for k := range res.Header {
			is.True(!strings.HasPrefix(k, "Access-Control-")) // no CORS header
		}
	})
	t.Run("another origin", func(t *testing.T) {
		is := is.New(t)
		for _, o := range []string{"https://evil.example", "http://app.example.com", "https://app.example.com:444", "null", "https://app.example.com/path"} {
			res := post(t, open, map[string]string{"Origin": o}, strings.NewReader(initialize), int64(len(initialize)))
			is.Equal(res.StatusCode, 403)
			is.Equal(res.Header.Get("Access-Control-Allow-Origin"), "")
		}
	})
	t.Run("the allowed origin, whose page may read WWW-Authenticate", func(t *testing.T) {
		is := is.New(t)
		res := post(t, open, map[string]string{"Origin": "https://app.example.com"}, strings.NewReader(initialize), int64(len(initialize)))
		is.Equal(res.StatusCode, 401)
		is.Equal(res.Header.Get("Access-Control-Allow-Origin"), "https://app.example.com")
		is.True(strings.Contains(res.Header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate"))
		is.True(strings.Contains(res.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id"))
		is.Equal(res.Header.Get("Vary"), "Origin")
		res = post(t, open, map[string]string{"Origin": "https://app.example.com", "Authorization": "Bearer " + open.token(t, remote.ScopeRead)},
			strings.NewReader(initialize), int64(len(initialize)))
		is.Equal(res.StatusCode, 200)
		is.Equal(res.Header.Get("Access-Control-Allow-Origin"), "https://app.example.com")
	})
	t.Run("a preflight", func(t *testing.T) {
		is := is.New(t)
		req, err := http.NewRequest(http.MethodOptions, open.srv.URL(), nil)
		is.NoErr(err)
		req.Header.Set("Origin", "https://app.example.com")
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-protocol-version, mcp-param-region")
		res, err := http.DefaultClient.Do(req)
		is.NoErr(err)
		res.Body.Close()
		is.Equal(res.StatusCode, http.StatusNoContent)
		is.Equal(res.Header.Get("Access-Control-Allow-Origin"), "https://app.example.com")
		is.True(strings.Contains(res.Header.Get("Access-Control-Allow-Methods"), "POST"))
		allowed := res.Header.Get("Access-Control-Allow-Headers")
		for _, h := range []string{"Authorization", "Content-Type", "Mcp-Protocol-Version", "Mcp-Session-Id", "Last-Event-ID", "Mcp-Param-Region"} {
			is.True(strings.Contains(allowed, h)) // each header an MCP client sends
		}
		req.Header.Set("Origin", "https://evil.example")
		res, err = http.DefaultClient.Do(req)
		is.NoErr(err)
		res.Body.Close()
		is.Equal(res.StatusCode, 403)
	})
}

// A body over 16 MiB is 413: at once when its length is declared, without
// reading it; when it is chunked, as soon as the limit is passed, so an
// endless body ends.
func TestABodyOver16MiBIs413(t *testing.T) {
	for _, noAuth := range []bool{false, true} {
		t.Run(fmt.Sprintf("noAuth=%v", noAuth), func(t *testing.T) {
			f := start(t, noAuth, nil)
			headers := map[string]string{"Authorization": "Bearer " + f.token(t, remote.ScopeRead+" "+remote.ScopeRun)}
			t.Run("declared", func(t *testing.T) {
				is := is.New(t)
				body := &endless{}
				res := post(t, f, headers, body, 16<<20+1)
				is.Equal(res.StatusCode, http.StatusRequestEntityTooLarge)
				is.Equal(errorOf(t, res), "too_large")
				is.True(body.read.Load() < 16<<20) // not read whole
			})
			t.Run("chunked and endless", func(t *testing.T) {
				is := is.New(t)
				res := post(t, f, headers, &endless{}, -1)
				is.Equal(res.StatusCode, http.StatusRequestEntityTooLarge)
				is.Equal(errorOf(t, res), "too_large")
			})
			t.Run("exactly 16 MiB is read", func(t *testing.T) {
				if testing.Short() {
					t.Skip("-short: the SDK parsing 16 MiB is slow under the race detector")
				}
				is := is.New(t)
				body := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("a", 16<<20-60) + `"}}`
				body += strings.Repeat(" ", 16<<20-len(body))
				res := post(t, f, headers, strings.NewReader(body), int64(len(body)))
				is.Equal(res.StatusCode, http.StatusOK) // the SDK got it whole
			})
			is := is.New(t)
			is.Equal(f.toy.calls.Load(), int64(0))
		})
	}
}

// endless is a body that never ends, counting what was read of it.
type endless struct{ read atomic.Int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	e.read.Add(int64(len(p)))
	return len(p), nil
}

// 256 requests open at once, held by a blocking tool; the next is 503
// with Retry-After: 1, health is still answered, and once released every
// held call is answered.
func TestThe257thOpenRequestIs503(t *testing.T) {
	is := is.New(t)
	f := start(t, false, nil)
	token := f.token(t, remote.ScopeRead+" "+remote.ScopeRun)
	ctx := context.Background()
	const open = 256
	sessions := make([]*mcp.ClientSession, open)
	for i := range sessions {
		cs, err := connect(ctx, f.srv.URL(), stateless, &recorder{token: token})
		is.NoErr(err)
		sessions[i] = cs
	}
	var wg sync.WaitGroup
	results := make(chan error, open)
	for _, s := range sessions {
		wg.Go(func() {
			got, err := call(ctx, s, "block")
			if err == nil && got.Cancelled {
				err = errors.New("cancelled")
			}
			results <- err
		})
	}
	for range open {
		<-f.toy.arrived // every call is in the tool, its request open
	}
	res := post(t, f, map[string]string{"Authorization": "Bearer " + token}, strings.NewReader(initialize), int64(len(initialize)))
	is.Equal(res.StatusCode, http.StatusServiceUnavailable)
	is.Equal(res.Header.Get("Retry-After"), "1")
	is.Equal(errorOf(t, res), "busy")
	health, err := http.Get(strings.Replace(f.srv.URL(), remote.PathMCP, remote.PathHealth, 1))
	is.NoErr(err)
	health.Body.Close()
	is.Equal(health.StatusCode, http.StatusOK) // probes are not counted
	f.toy.releaseAll()
	wg.Wait()
	close(results)
	for err := range results {
		is.NoErr(err) // each held call answered
	}
	for _, s := range sessions {
		s.Close()
	}
	f.settle()
	res = post(t, f, map[string]string{"Authorization": "Bearer " + token}, strings.NewReader(initialize), int64(len(initialize)))
	is.Equal(res.StatusCode, http.StatusOK) // the slots were given back
}

// Health and readiness need no token and tell nothing else.
func TestHealthAndReadiness(t *testing.T) {
	var code atomic.Value
	code.Store("")
	f := start(t, false, func(o *remote.Options) {
		o.Ready = func(context.Context) string { return code.Load().(string) }
	})
	get := func(t *testing.T, path, method string) (int, string) {
		req, err := http.NewRequest(method, strings.Replace(f.srv.URL(), remote.PathMCP, path, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	tests := []struct {
		path, method, ready string
		status              int
		body                string
	}{
		{remote.PathHealth, http.MethodGet, "", 200, `{"status":"ok"}` + "\n"},
		{remote.PathHealth, http.MethodGet, "PATH_BOUNDARY", 200, `{"status":"ok"}` + "\n"},
		{remote.PathReady, http.MethodGet, "", 200, `{"status":"ok"}` + "\n"},
		{remote.PathReady, http.MethodGet, "PATH_BOUNDARY", 503, `{"code":"PATH_BOUNDARY","status":"unavailable"}` + "\n"},
		{remote.PathHealth, http.MethodPost, "", 405, ""},
		{"/nothing", http.MethodGet, "", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path+" "+tt.method+" "+tt.ready, func(t *testing.T) {
			is := is.New(t)
			code.Store(tt.ready)
			status, body := get(t, tt.path, tt.method)
			is.Equal(status, tt.status)
			if tt.body != "" {
				is.Equal(body, tt.body)
			}
		})
	}
}

// Headers must arrive within HeaderTimeout, a body within BodyTimeout
// (408), and an idle connection is closed after IdleTimeout: here
// shortened, and each seen by a real connection.
func TestSlowClientsAreCutOff(t *testing.T) {
	// Each case shortens only the limit it shows, so that a busy machine's
	// pause between dialling and writing trips no other.
	dial := func(t *testing.T, shorten func(*remote.Limits)) net.Conn {
		limits := remote.DefaultLimits()
		shorten(&limits)
		f := start(t, true, func(o *remote.Options) { o.Limits = limits })
		addr := strings.TrimSuffix(strings.TrimPrefix(f.srv.URL(), "http://"), remote.PathMCP)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	t.Run("headers", func(t *testing.T) {
		is := is.New(t)
		c := dial(t, func(l *remote.Limits) { l.HeaderTimeout = 200 * time.Millisecond })
		_, err := io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
		is.NoErr(err)
		_, err = io.ReadAll(c) // the server closes it
		is.NoErr(err)
	})
	t.Run("body", func(t *testing.T) {
		is := is.New(t)
		c := dial(t, func(l *remote.Limits) { l.BodyTimeout = 200 * time.Millisecond })
		_, err := io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"js")
		is.NoErr(err)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		is.NoErr(err)
		is.Equal(res.StatusCode, http.StatusRequestTimeout)
		is.Equal(errorOf(t, res), "timeout")
	})
	t.Run("idle", func(t *testing.T) {
		is := is.New(t)
		c := dial(t, func(l *remote.Limits) { l.IdleTimeout = 200 * time.Millisecond })
		_, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		is.NoErr(err)
		r := bufio.NewReader(c)
		res, err := http.ReadResponse(r, nil)
		is.NoErr(err)
		_, err = io.ReadAll(res.Body)
		is.NoErr(err)
		is.Equal(res.StatusCode, 200)
		_, err = r.ReadByte() // nothing more: the server closes the idle connection
		is.Equal(err, io.EOF)
	})
}

// The defaults are protocol §14's.
func TestTheDefaultLimitsAreTheProtocols(t *testing.T) {
	is := is.New(t)
	l := remote.DefaultLimits()
	is.Equal(l.MaxBodyBytes, int64(16<<20))
	is.Equal(l.HeldBytes, int64(64<<20))
	is.Equal(l.MaxOpen, 256)
	is.Equal(l.HeaderTimeout, 10*time.Second)
	is.Equal(l.BodyTimeout, 60*time.Second)
	is.Equal(l.IdleTimeout, 120*time.Second)
	is.True(l.StopGrace+l.CancelGrace <= 30*time.Second)
	o := remote.StreamableOptions()
	is.True(o.Stateless)
	is.True(o.DisableLocalhostProtection)
	is.True(o.MaxRequestBodyBytes >= l.MaxBodyBytes)
}

// The bodies held at once are bounded in all: while one call holds a body
// of 900 KiB, a second such body is 503 (declared or chunked) under a
// bound of 1.5 MiB, and is read once the first call is answered.
func TestTheBodiesHeldAtOnceAreBounded(t *testing.T) {
	is := is.New(t)
	limits := remote.DefaultLimits()
	limits.MaxBodyBytes, limits.HeldBytes = 1<<20, 3<<19
	f := start(t, true, func(o *remote.Options) { o.Limits = limits })
	pad := strings.Repeat("a", 900<<10)
	cs, err := connect(context.Background(), f.srv.URL(), stateless, &recorder{})
	is.NoErr(err)
	defer cs.Close()
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "block", Arguments: map[string]any{"pad": pad}})
		done <- err
	}()
	<-f.toy.arrived
	body := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + pad + `"}}`
	res := post(t, f, nil, strings.NewReader(body), int64(len(body)))
	is.Equal(res.StatusCode, http.StatusServiceUnavailable)
	is.Equal(res.Header.Get("Retry-After"), "1")
	is.Equal(errorOf(t, res), "busy")
	res = post(t, f, nil, io.MultiReader(strings.NewReader(body)), -1)
	is.Equal(res.StatusCode, http.StatusServiceUnavailable)
	f.toy.releaseAll()
	is.NoErr(<-done)
	f.settle()
	res = post(t, f, nil, strings.NewReader(body), int64(len(body)))
	is.Equal(res.StatusCode, http.StatusOK) // given back
	// This body's bytes are given back once its handler returns, and the
	// client had its answer's headers before then.
	f.settle()
	res = post(t, f, nil, io.MultiReader(strings.NewReader(body)), -1)
	is.Equal(res.StatusCode, http.StatusOK)
}
