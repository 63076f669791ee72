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

// A Carrier is what a server's handlers need of the connection that
// carries their calls (the stdio stream; mcphttp's request): Start, as a
// handler starts, ties its call to the connection, and the context it
// returns is cancelled with the call. A nil Call: the connection knows
// nothing of it, and its slot goes back as its handler returns.
type Carrier interface {
	Start(ctx context.Context) (context.Context, Call)
}

// A Call is one call as its connection carries it. Arrived: it has its
// place in the service's lines, so the connection may read on. HeldBack:
// the SHA256 of arguments not handed to the SDK, being over the request
// limit (message.Facts.ArgsSHA256). Answered holds release (its compute
// slot) until the answer is written. Caller: who calls, for the record
// (the zero Caller when the connection cannot tell).
type Call interface {
	Arrived()
	HeldBack() (sum string, ok bool)
	Answered(release func())
	Caller() ledger.Caller
}

// unwritten is the call of a connection that cannot tell when an answer
// is written (the SDK's in-memory transports, in tests): its slot goes
// back as its handler returns.
type unwritten struct{}

func (unwritten) Arrived()                 {}
func (unwritten) HeldBack() (string, bool) { return "", false }
func (unwritten) Answered(release func())  { release() }
func (unwritten) Caller() ledger.Caller    { return ledger.Caller{} }

// Config is what a server needs of its transport and its process.
type Config struct {
	// Calls is the call layer the tools and reads go through.
	Calls *call.Calls
	// Transport names the transport in the records, and holds K.
	Transport call.Transport
	// Version is the module version the server announces.
	Version string
	// Stop cancels every call in flight when it is done.
	Stop context.Context
	// Carrier is the connection's; nil for none (a slot goes back as its
	// handler returns).
	Carrier Carrier
	// CursorKey authenticates resources/list cursors; nil for a random
	// one of the server's own.
	CursorKey []byte
}

// stdioTransport is the transport over stdio, with K listLimit.
func stdioTransport(listLimit int) call.Transport {
	return call.Transport{Name: "mcp", ListLimit: listLimit}
}

// New is the MCP server of cfg.Calls, for any of the SDK's transports: the
// three tools, the run files as resources, capabilities "tools" and
// "resources" (neither sends list-changed notifications), and the
// instructions to the model.
func New(cfg Config) (*sdk.Server, error) {
	tools, err := Tools(cfg.Transport.ListLimit)
	if err != nil {
		return nil, err
	}
	server := sdk.NewServer(&sdk.Implementation{Name: ServerName, Version: cfg.Version}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}, Resources: &sdk.ResourceCapabilities{}},
		Instructions: Instructions,
		Logger:       slog.New(slog.DiscardHandler),
	})
	h := handlers{calls: cfg.Calls, t: cfg.Transport, stop: cfg.Stop, conn: cfg.Carrier}
	for _, t := range tools {
		server.AddTool(t, h.tool(t.Name))
	}
	res := newResources(h, cfg.CursorKey)
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
	conn  Carrier // nil for none
}

// begin starts serving a call or read: tied to its connection and to the
// server's stop.
func (h handlers) begin(ctx context.Context) (context.Context, Call, context.CancelFunc) {
	var c Call
	if h.conn != nil {
		ctx, c = h.conn.Start(ctx)
	}
	if c == nil {
		c = unwritten{}
	}
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
		c.Arrived()
		t := h.t
		t.Caller = c.Caller()
		var a call.Answer
		if sum, ok := c.HeldBack(); ok {
			a = h.calls.ToolOverLimit(ctx, t, p, name, sum)
		} else {
			var raw []byte
			if req.Params != nil {
				raw = req.Params.Arguments
			}
			a = h.calls.Tool(ctx, t, p, name, raw)
		}
		c.Answered(a.Done)
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
