package mcp

import (
	"errors"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/metricproof/metricproof/app/call"
)

// An answer that is not JSON (the call layer never makes one) is -32603
// rather than a result the SDK's encoder would refuse: the SDK would then
// write nothing, and the call would never leave the calls in flight nor
// give its compute slot back.
func TestAnAnswerThatIsNotJSONIsAnInternalError(t *testing.T) {
	is := is.New(t)
	res, err := toolResult(call.Answer{JSON: []byte(`{"ok":`)})
	is.True(res == nil)
	var rpc *jsonrpc.Error
	is.True(errors.As(err, &rpc))
	is.Equal(rpc.Code, int64(jsonrpc.CodeInternalError))
	res, err = toolResult(call.Answer{JSON: []byte(`{"ok":true}`)})
	is.NoErr(err)
	is.True(!res.IsError)
}
