package remote_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/remote"
)

// raw sends request, bytes as written, on a connection of its own and
// reads the answer's status (0 when the connection closed without one).
func raw(t *testing.T, f *fixture, request string) int {
	t.Helper()
	addr := strings.TrimSuffix(strings.TrimPrefix(f.srv.URL(), "http://"), remote.PathMCP)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// Requests as no well-behaved client writes them, byte for byte: a Host
// the front does not serve never reaches the token check (401), whatever
// form the request line or the Host takes. An absolute-form request line
// names the host net/http takes (RFC 9112 §3.2.2); a browser never sends
// one to a server, so it is no way around the rebinding check.
func TestHostTricksOnTheWire(t *testing.T) {
	f := start(t, false, nil)
	p := f.port()
	body := initialize
	post := func(target, hostLines string) string {
		return "POST " + target + " HTTP/1.1\r\n" + hostLines + "Content-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body
	}
	tests := []struct {
		name, request string
		want          int
	}{
		{"served", post("/mcp", "Host: 127.0.0.1:"+p+"\r\n"), 401},
		{"absolute form naming a served host, an evil Host", post("http://127.0.0.1:"+p+"/mcp", "Host: evil.example\r\n"), 401},
		{"absolute form naming an evil host, a served Host", post("http://evil.example/mcp", "Host: 127.0.0.1:"+p+"\r\n"), 403},
		{"no Host, HTTP/1.1", post("/mcp", ""), 400},
		{"no Host, HTTP/1.0", "POST /mcp HTTP/1.0\r\nContent-Length: 0\r\n\r\n", 403},
		{"two Hosts", post("/mcp", "Host: 127.0.0.1:"+p+"\r\nHost: evil.example\r\n"), 400},
		{"a port that is a name", post("/mcp", "Host: localhost:"+p+".evil.example\r\n"), 403},
		{"userinfo", post("/mcp", "Host: evil.example@127.0.0.1:"+p+"\r\n"), 400},
		{"an integer address", post("/mcp", "Host: 2130706433:"+p+"\r\n"), 403},
		{"a short address", post("/mcp", "Host: 127.1:"+p+"\r\n"), 403},
		{"an IPv4-mapped IPv6", post("/mcp", "Host: [::ffff:127.0.0.1]:"+p+"\r\n"), 403},
		{"IPv6 loopback, long form", post("/mcp", "Host: [0:0:0:0:0:0:0:1]:"+p+"\r\n"), 403},
		{"IPv6 loopback with a zone", post("/mcp", "Host: [::1%25lo]:"+p+"\r\n"), 403},
		{"IPv6 loopback without brackets", post("/mcp", "Host: ::1\r\n"), 403},
		{"two trailing dots", post("/mcp", "Host: localhost..:"+p+"\r\n"), 403},
		{"a trailing dot and uppercase", post("/mcp", "Host: LocalHost.:"+p+"\r\n"), 401},
		{"a space inside", post("/mcp", "Host: local host\r\n"), 400},
		{"a negative port", post("/mcp", "Host: localhost:-1\r\n"), 403},
		{"a huge port", post("/mcp", "Host: localhost:99999999999999999999\r\n"), 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			before := f.toy.calls.Load()
			is.Equal(raw(t, f, tt.request), tt.want)
			is.Equal(f.toy.calls.Load(), before)
		})
	}
}

// Requests that declare their body, send part of it and hang up, again
// and again, give back what they held: the next whole body is read, not
// refused as if the bodies held were at their bound.
func TestRequestsThatCloseMidBodyGiveBackWhatTheyHeld(t *testing.T) {
	is := is.New(t)
	limits := remote.DefaultLimits()
	limits.MaxBodyBytes, limits.HeldBytes = 4096, 8192
	f := start(t, true, func(o *remote.Options) { o.Limits = limits })
	addr := strings.TrimSuffix(strings.TrimPrefix(f.srv.URL(), "http://"), remote.PathMCP)
	for range 32 {
		c, err := net.Dial("tcp", addr)
		is.NoErr(err)
		_, err = c.Write([]byte("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{\"jsonrpc\""))
		is.NoErr(err)
		is.NoErr(c.(*net.TCPConn).CloseWrite()) // the body ends here, as a hang-up ends it
		_, err = io.ReadAll(c)                  // the server has seen it once it answers and closes
		is.NoErr(err)
		c.Close()
	}
	f.settle() // and once its handlers have returned, nothing may be held
	for chunked := range 2 {
		length := int64(len(initialize))
		if chunked == 1 {
			length = -1
		}
		res := post(t, f, map[string]string{"Host": "127.0.0.1"}, strings.NewReader(initialize), length)
		is.Equal(res.StatusCode, http.StatusOK) // nothing leaked
		f.settle()
	}
}
