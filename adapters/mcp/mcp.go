// Package mcp is metricproof's Model Context Protocol transport (protocol §9):
// "tool-runner mcp" serves the three tools to any MCP host over standard
// input and output, over the same app as the one-shot protocol.
//
// It only frames. The SDK (github.com/modelcontextprotocol/go-sdk) speaks
// the protocol: the handshake, tools/list, tools/call, cancellation. In
// front of it sits a line transport of our own ([Connect]) that runs the
// strict JSON check of protocol §9 on every line without building a tree of it,
// answers what the SDK would mishandle (a NaN, a batch, a duplicate key
// outside the tool's arguments, an id the SDK would round) and keeps the
// session going, bounds what the calls in flight hold (protocol §9, Load), and
// holds end of input back until every call is answered. The tools are
// registered with the SDK's low-level Server.AddTool, and the raw bytes of
// params.arguments reach the app, which checks them as it checks a
// one-shot request; their schemas are derived from contracts/schemas
// ([Tools]). A tool result holds the answer the app built for MCP, its
// lists cut to --list-limit items, then a resource link to each run file it
// is about; the run files themselves are resources (resources.go), read
// through the app as verify reads them.
package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/adapters/cli"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/call"
	"github.com/metricproof/metricproof/app/protocol"
)

// ServerName is the serverInfo name the server announces.
const ServerName = "metricproof"

// Usage is what "tool-runner mcp --help" prints.
const Usage = `usage: tool-runner mcp --workspace W [--output-dir O] [--cancel-file F]
                       [--ledger L] [--signing-key K] [--trusted-key P]
                       [--list-limit N]

Serves inspect_inputs, analyze and verify_result as a Model Context Protocol
server over standard input and output (JSON-RPC, one message per line), and
the files of committed runs as resources (metricproof://runs/{run_id}/{file}).
The options are those of the one-shot runner (tool-runner --help), all
checked at start: a fault prints one line naming its code to standard error
and exits 2. --list-limit N (0 to 1000, default 10) cuts each list that
grows with the data to its first N items in a tool result; the result's
"truncated" names the lists cut, and the run files hold them whole. The
server runs until its input ends, or SIGINT or SIGTERM, answers the calls
in flight, and exits 0.
`

// Serve runs "tool-runner mcp" with args (the command line after "mcp")
// and returns the exit status: 0 after the session, 2 for an option fault,
// which is one line on stderr. When ctx is cancelled (SIGINT, SIGTERM) the
// server stops taking calls, cancels the calls in flight, writes their
// answers and returns 0.
func Serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, wire app.Wire, version string) int {
	o, help, e := cli.Parse(cli.MCP, args)
	if e != nil {
		return optionFault(stderr, e)
	}
	if help {
		_, _ = io.WriteString(stdout, Usage)
		return 0
	}
	svc, err := app.Open(o.Options, wire)
	if err != nil {
		return optionFault(stderr, err)
	}
	defer svc.Close()
	if err := svc.CheckPaths(); err != nil {
		return optionFault(stderr, err)
	}
	calls := call.New(svc)
	server, err := NewServer(calls, o.ListLimit, version, ctx)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", protocol.InternalError, err)
		return 2
	}
	session, err := Connect(context.WithoutCancel(ctx), server, stdin, stdout, ctx.Done(), unhandled(calls, o.ListLimit))
	if err != nil {
		fmt.Fprintf(stderr, "%s: the session could not start\n", protocol.InternalError)
		return 2
	}
	_ = session.Wait() // the end of input, or a stop after the calls in flight
	return 0
}

// optionFault reports a fault of the options or of their paths: one line
// naming its code, exit 2.
func optionFault(stderr io.Writer, err error) int {
	e := protocol.ErrorOf(err)
	fmt.Fprintf(stderr, "%s: %s\n", e.Code, e.Message)
	return 2
}

// NewServer returns the MCP server of svc: the three tools and the run
// files as resources, capabilities "tools" and "resources" (neither sends
// list-changed notifications). stop cancels every call in flight when it
// is done.
func NewServer(calls *call.Calls, listLimit int, version string, stop context.Context) (*sdk.Server, error) {
	tools, err := Tools(listLimit)
	if err != nil {
		return nil, err
	}
	server := sdk.NewServer(&sdk.Implementation{Name: ServerName, Version: version}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}, Resources: &sdk.ResourceCapabilities{}},
		Logger:       slog.New(slog.DiscardHandler),
	})
	for _, t := range tools {
		server.AddTool(t, handler(calls, call.Transport{Name: "mcp", ListLimit: listLimit}, t.Name, stop))
	}
	res := newResources(calls)
	// The SDK's read reaches the template's handler only for a URI the
	// middleware lets through (templated); the middleware answers any
	// other URI itself.
	server.AddResourceTemplate(runTemplate(), func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return res.read(ctx, req.Params.URI)
	})
	server.AddReceivingMiddleware(res.middleware)
	return server, nil
}

// handler answers tools/call of one tool: the raw bytes of
// params.arguments go to the app as they arrived; the answer is the
// response object of protocol §3, as the text content and as the structured
// content, with isError exactly when ok is false.
func handler(calls *call.Calls, t call.Transport, tool string, stop context.Context) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(stop, cancel)()
		var raw []byte
		if req.Params != nil {
			raw = req.Params.Arguments
		}
		h := hooksOf(ctx) // over the line transport, the arguments come from it
		if h != nil {
			raw = h.arguments()
		}
		p := calls.ArriveCall(tool)
		if h != nil {
			h.arrived()
		}
		a := calls.Tool(ctx, t, p, tool, raw)
		if h != nil {
			h.keep(a.Done)
		} else {
			a.Done()
		}
		return toolResult(a), nil
	}
}

// toolResult is the tool result of an answer: the response object of
// protocol §3 (its lists cut, with "truncated", §9) as the text content and
// as the structured content, with isError exactly when ok is false; then
// a resource_link to each run file the answer is about.
func toolResult(a call.Answer) *sdk.CallToolResult {
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
	}
}

// unhandled answers a call of one of the tools that was cancelled before its
// handler ran, as the handler would have: the app, under a context that
// is already cancelled, checks and records it, and answers CANCELLED (or
// the request check that fails first).
func unhandled(calls *call.Calls, listLimit int) Unhandled {
	return func(tool string, arguments json.RawMessage) (*sdk.CallToolResult, bool) {
		if !slices.Contains(protocol.Tools(), tool) {
			return nil, false
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		a := calls.Tool(ctx, call.Transport{Name: "mcp", ListLimit: listLimit}, nil, tool, arguments)
		a.Done()
		return toolResult(a), true
	}
}
