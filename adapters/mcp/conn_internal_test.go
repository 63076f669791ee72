package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An answer that cannot be encoded is still an answer: the call gets
// -32603 under its id, leaves the calls in flight, and gives its compute
// slot back, so that no slot is kept and the end of input is not held
// forever.
func TestAnAnswerThatCannotBeEncodedIsAnInternalError(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	c := newLineConn(strings.NewReader(""), &out, nil, nil)
	id, err := jsonrpc.MakeID(float64(7))
	is.NoErr(err)
	released := 0
	cl := &pending{req: &jsonrpc.Request{ID: id}, extra: &sdk.RequestExtra{}, held: 100, release: func() { released++ }}
	c.inFlight[id], c.byExtra[cl.extra], c.held = cl, cl, cl.held
	is.NoErr(c.Write(context.Background(), &jsonrpc.Response{ID: id, Result: json.RawMessage(`{`)})) // not JSON
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error struct{ Code int64 }
	}
	is.NoErr(json.Unmarshal(out.Bytes(), &m))
	is.Equal(string(m.ID), "7")
	is.Equal(m.Error.Code, int64(jsonrpc.CodeInternalError))
	is.Equal(len(c.inFlight), 0) // answered
	is.Equal(c.held, 0)
	is.Equal(released, 1) // its slot given back, once
}
