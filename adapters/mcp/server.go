package mcp

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/app/call"
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
// than the request limit (message.heldBack).
type carried interface {
	arrived()
	heldBack() (sum string, ok bool)
	answered(release func())
}

// unwritten is the carrier of a connection that cannot tell when an
// answer is written (the SDK's in-memory transports, in tests): a call's
// slot goes back as its handler returns.
type unwritten struct{}

func (unwritten) start(ctx context.Context) (context.Context, carried) { return ctx, unwritten{} }
func (unwritten) arrived()                                             {}
func (unwritten) heldBack() (string, bool)                             { return "", false }
func (unwritten) answered(release func())                              { release() }

// NewServer is the MCP server of calls, for any of the SDK's transports:
// the three tools, the run files as resources, capabilities "tools" and
// "resources" (neither sends list-changed notifications), and the
// instructions to the model. listLimit is K
// of the list cut; version the module version it announces; stop cancels
// every call in flight when it is done. A call's compute slot goes back
// when its handler returns: the stdio server ([Server]) keeps it until the
// answer is written.
func NewServer(calls *call.Calls, listLimit int, version string, stop context.Context) (*sdk.Server, error) {
	return newServer(calls, listLimit, version, stop, unwritten{})
}

func newServer(calls *call.Calls, listLimit int, version string, stop context.Context, conn carrier) (*sdk.Server, error) {
	tools, err := Tools(listLimit)
	if err != nil {
		return nil, err
	}
	server := sdk.NewServer(&sdk.Implementation{Name: ServerName, Version: version}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}, Resources: &sdk.ResourceCapabilities{}},
		Instructions: Instructions,
		Logger:       slog.New(slog.DiscardHandler),
	})
	h := handlers{calls: calls, t: call.Transport{Name: "mcp", ListLimit: listLimit}, stop: stop, conn: conn}
	for _, t := range tools {
		server.AddTool(t, h.tool(t.Name))
	}
	res := newResources(h)
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
		var a call.Answer
		if sum, ok := c.heldBack(); ok {
			a = h.calls.ToolOverLimit(ctx, h.t, p, name, sum)
		} else {
			var raw []byte
			if req.Params != nil {
				raw = req.Params.Arguments
			}
			a = h.calls.Tool(ctx, h.t, p, name, raw)
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
