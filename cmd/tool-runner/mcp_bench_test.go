//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/adapters/cli"
	"github.com/metricproof/metricproof/adapters/engine"
	"github.com/metricproof/metricproof/adapters/mcp"
	"github.com/metricproof/metricproof/adapters/osfs"
	"github.com/metricproof/metricproof/app"
	appcall "github.com/metricproof/metricproof/app/call"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/internal/testinputs"
	"github.com/metricproof/metricproof/internal/wire"
)

// BenchmarkMCP times one tools/call of each tool through a live server
// session (the production server and line transport, the SDK's client over
// pipes, the real disk with every fsync), at 1,000, 3,000 and 10,000 rows
// of the maximum inputs, next to the floor every call pays: read the four
// sources through the same port and hash them, in the same warm process.
// Quote the tools as ratios to the floor of the same size and run.
//
//	go test ./cmd/tool-runner -run '^$' -bench BenchmarkMCP -benchmem
//	go test ./cmd/tool-runner -run '^$' -bench 'BenchmarkMCP/rows=10000/analyze' -cpuprofile cpu.out
//
// internal/tools/bench -mcp measures the same against the built binary.
func BenchmarkMCP(b *testing.B) {
	root := filepath.Join("..", "..")
	desc, err := os.ReadFile(filepath.Join(root, "testdata", "max-sources.json"))
	if err != nil {
		b.Fatal(err)
	}
	m, err := testinputs.ParseMax(desc)
	if err != nil {
		b.Fatal(err)
	}
	contract, err := os.ReadFile(filepath.Join(root, "contracts", "metric-definitions.json"))
	if err != nil {
		b.Fatal(err)
	}
	eng := engine.New() // hashed once, as the server does at start
	for _, rows := range testinputs.BenchmarkRows() {
		files, err := m.SourcesAt(rows)
		if err != nil {
			b.Fatal(err)
		}
		files[domain.DefinitionsFile] = contract
		ws := b.TempDir()
		for name, data := range files {
			p := filepath.Join(ws, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("rows=%d/floor", rows), func(b *testing.B) {
			w, err := osfs.Open(ws)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			for b.Loop() {
				read := make(map[string][]byte, 4)
				for _, name := range domain.SourceNames() {
					if read[name], err = w.ReadSource(name, domain.MaxSourceBytes); err != nil {
						b.Fatal(err)
					}
				}
				_ = domain.HashSources(read).Digest()
			}
		})
		cs := benchSession(b, ws, eng)
		digest := benchCall(b, cs, "inspect_inputs", map[string]any{})
		benchCall(b, cs, "analyze", map[string]any{"expected_source_digest": digest, "run_id": "verified"})
		b.Run(fmt.Sprintf("rows=%d/inspect_inputs", rows), func(b *testing.B) {
			for b.Loop() {
				benchCall(b, cs, "inspect_inputs", map[string]any{})
			}
		})
		n := 0
		b.Run(fmt.Sprintf("rows=%d/analyze", rows), func(b *testing.B) {
			for b.Loop() {
				n++
				benchCall(b, cs, "analyze", map[string]any{"expected_source_digest": digest, "run_id": fmt.Sprintf("bench-%d", n)})
			}
		})
		b.Run(fmt.Sprintf("rows=%d/verify_result", rows), func(b *testing.B) {
			for b.Loop() {
				benchCall(b, cs, "verify_result", map[string]any{"run_id": "verified"})
			}
		})
	}
}

// benchSession starts the server of "tool-runner mcp --workspace ws
// --output-dir runs" in this process, over the line transport, and
// connects the SDK's client to it through pipes.
func benchSession(b *testing.B, ws string, eng *engine.Self) *sdk.ClientSession {
	b.Helper()
	o, _, e := cli.Parse(cli.MCP, []string{"--workspace", ws, "--output-dir", "runs"})
	if e != nil {
		b.Fatal(e)
	}
	svc, err := app.Open(o.Options, wire.Real(eng))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { svc.Close() })
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- mcp.ServeStdio(appcall.New(svc), o.ListLimit, "bench", inR, outW, context.Background())
	}()
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cs.Close()
		inW.Close()
		if err := <-served; err != nil {
			b.Error(err)
		}
	})
	return cs
}

// benchCall calls a tool and fails unless it answers ok (a refusal is
// never timed); it returns the result's source_digest.
func benchCall(b *testing.B, cs *sdk.ClientSession, tool string, args map[string]any) string {
	b.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		b.Fatal(err)
	}
	if res.IsError {
		b.Fatalf("%s did not answer ok: %.300s", tool, res.Content[0].(*sdk.TextContent).Text)
	}
	body, _ := res.StructuredContent.(map[string]any)
	result, _ := body["result"].(map[string]any)
	digest, _ := result["source_digest"].(string)
	return digest
}
