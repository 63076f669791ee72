package mcp

import (
	"net/http"

	"github.com/metricproof/metricproof/app/call"
)

// NewHTTPHandler is the handler of /mcp over calls, without the front:
// for tests that feed it bodies in this process.
func NewHTTPHandler(calls *call.Calls, listLimit int) (http.Handler, error) {
	return newHTTPMCP(calls, listLimit, "test", nil)
}

// ReadBody is the front's reading of a POST body (remote.Options.Read).
func ReadBody(body []byte) (method, tool string, refusal []byte) {
	r, refusal := readBody(body)
	return r.Method, r.Tool, refusal
}
