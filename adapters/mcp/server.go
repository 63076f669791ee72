package mcp

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/app/call"
	"github.com/metricproof/metricproof/app/ledger"
)

// ServerName is the serverInfo name the server announces.
const ServerName = "metricproof"

// carrier is what a server's handlers need of the connection that carries
// their calls, whatever the transport. start, called by a handler as it
// starts, ties the call it serves to the connection: the context it
// returns is cancelled with the call (a cancellation notice, a stop), and
// the carried call lets the connection read on once the call has its
// place in the service's lines (arrived), and holds the call's compute
// slot until its answer is written (answered). The stdio stream is one
// (stream.start); without one, a slot goes back when its handler returns.
type carrier interface {
	start(ctx context.Context) (context.Context, carried)
}

// carried is one call as its connection carries it. heldBack reports the
// SHA256 of arguments the connection did not hand to the SDK, being longer
// than the request limit (message.heldBack); caller is who makes the call,
// for its record (the zero Caller when the connection cannot tell).
type carried interface {
	arrived()
	heldBack() (sum string, ok bool)
	answered(release func())
	caller() ledger.Caller
}

// unwritten is the carrier of a connection that cannot tell when an
// answer is written (the SDK's in-memory transports, in tests): a call's
// slot goes back as its handler returns.
type unwritten struct{}

func (unwritten) start(ctx context.Context) (context.Context, carried) { return ctx, unwritten{} }
func (unwritten) arrived()                                             {}
func (unwritten) heldBack() (string, bool)                             { return "", false }
func (unwritten) answered(release func())                              { release() }
func (unwritten) caller() ledger.Caller                                { return ledger.Caller{} }

// NewServer is the MCP server of calls, for any of the SDK's transports:
// the three tools, the run files as resources, capabilities "tools" and
// "resources" (neither sends list-changed notifications), and the
// instructions to the model. listLimit is K
// of the list cut; version the module version it announces; stop cancels
// every call in flight when it is done. A call's compute slot goes back
// when its handler returns: the stdio server ([Server]) keeps it until the
// answer is written.
func NewServer(calls *call.Calls, listLimit int, version string, stop context.Context) (*sdk.Server, error) {
	return newServer(serverConfig{calls: calls, transport: stdioTransport(listLimit), version: version, stop: stop, conn: unwritten{}})
}

// serverConfig is what a server needs of its transport and its process.
type serverConfig struct {
	calls *call.Calls
	// transport names the transport in the records, and holds K.
	transport call.Transport
	version   string
	// stop cancels every call in flight when it is done.
	stop context.Context
	conn carrier
	// cursorKey authenticates resources/list cursors; nil for a random
	// one of the server's own.
	cursorKey []byte
}

// stdioTransport is the MCP transport over stdio, with K listLimit.
func stdioTransport(listLimit int) call.Transport {
	return call.Transport{Name: "mcp", ListLimit: listLimit}
}

func newServer(cfg serverConfig) (*sdk.Server, error) {
	calls, listLimit, version, stop, conn := cfg.calls, cfg.transport.ListLimit, cfg.version, cfg.stop, cfg.conn
	tools, err := Tools(listLimit)
	if err != nil {
		return nil, err
	}
	server := sdk.NewServer(&sdk.Implementation{Name: ServerName, Version: version}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}, Resources: &sdk.ResourceCapabilities{}},
		Instructions: Instructions,
		Logger:       slog.New(slog.DiscardHandler),
	})
	h := handlers{calls: calls, t: cfg.transport, stop: stop, conn: conn}
	for _, t := range tools {
		server.AddTool(t, h.tool(t.Name))
	}
	res := newResources(h, cfg.cursorKey)
	// The SDK's read reaches the template's handler only for a URI the
	// middleware lets through (templated); the middleware answers any
	// other URI itself.
	server.AddResourceTemplate(runTemplate(), func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return res.read(ctx, req.Params.URI)
	})
	server.AddReceivingMiddleware(res.middleware)
	return server, nil
}

// handlers serve the calls and reads of one server.
type handlers struct {
	calls *call.Calls
	t     call.Transport
	stop  context.Context
	conn  carrier
}

// begin starts serving a call or read: tied to its connection and to the
// server's stop.
func (h handlers) begin(ctx context.Context) (context.Context, carried, context.CancelFunc) {
	ctx, c := h.conn.start(ctx)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.stop, cancel)
	return ctx, c, func() { stop(); cancel() }
}

// tool answers tools/call of one tool: the raw bytes of params.arguments
// go to the call layer as they arrived; the answer is the response object
// as the text content and as the structured content.
func (h handlers) tool(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		ctx, c, end := h.begin(ctx)
		defer end()
		p := h.calls.ArriveCall(name)
		c.arrived()
		t := h.t
		t.Caller = c.caller()
		var a call.Answer
		if sum, ok := c.heldBack(); ok {
			a = h.calls.ToolOverLimit(ctx, t, p, name, sum)
		} else {
			var raw []byte
			if req.Params != nil {
				raw = req.Params.Arguments
			}
			a = h.calls.Tool(ctx, t, p, name, raw)
		}
		c.answered(a.Done)
		return toolResult(a)
	}
}

// toolResult is the tool result of an answer: the response object of
// protocol §3 (its lists cut, with "truncated") as the text content
// and as the structured content, with isError exactly when ok is false;
// then a resource_link to each run file the answer is about. An answer
// that is not JSON (which the call layer never makes) is -32603 rather
// than a result the SDK could not write, which would leave the call
// unanswered.
func toolResult(a call.Answer) (*sdk.CallToolResult, error) {
	if !json.Valid(a.JSON) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: the answer could not be encoded"}
	}
	content := make([]sdk.Content, 0, 1+len(a.Files))
	content = append(content, &sdk.TextContent{Text: string(a.JSON)})
	for _, f := range a.Files {
		size := int64(f.Size)
		content = append(content, &sdk.ResourceLink{
			URI:      RunFileURI(f.RunID, f.Name),
			Name:     f.RunID + "/" + f.Name,
			MIMEType: runFileMIMEType,
			Size:     &size,
		})
	}
	return &sdk.CallToolResult{
		Content:           content,
		StructuredContent: json.RawMessage(a.JSON),
		IsError:           !a.OK(),
	}, nil
}
