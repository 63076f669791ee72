package s3test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
)

// Fault is what a Proxy does to one request.
type Fault int

const (
	// Pass hands the request to the server and its answer back.
	Pass Fault = iota
	// LoseAnswer hands the request to the server, which carries it out,
	// and closes the client's connection instead of answering: the
	// client cannot tell whether it took effect.
	LoseAnswer
	// Fail answers 500 InternalError without passing the request on.
	Fail
)

// Proxy starts an HTTP proxy in front of the server and returns its
// endpoint, for a store to reach the server through. decide sees every
// request (without reading its body) before it is passed on, to record it
// or to choose a Fault. The proxy stops at the test's end.
func (s *Server) Proxy(t testing.TB, decide func(r *http.Request) Fault) string {
	t.Helper()
	target, err := url.Parse(s.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	// The request keeps its Host header, which its signature covers.
	rp := httputil.NewSingleHostReverseProxy(target)
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch decide(r) {
		case Fail:
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected</Message></Error>`)
			return
		case Pass:
			rp.ServeHTTP(w, r)
			return
		}
		rp.ServeHTTP(httptest.NewRecorder(), r)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(p.Close)
	return p.URL
}
