package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The load mode (-load): many clients at once mixing the three tools, for
// a fixed number of calls, over HTTP ("tool-runner mcp --http" on
// loopback, one Streamable HTTP client session per client, stateless
// revision) and, in the same run on the same workspace size, over stdio
// (one "tool-runner mcp" session that all clients share, as the stdio
// transport allows). Every call must answer ok: true, with a ledger, so
// that each call is also appended under the ledger's lock. It reports, for
// each transport, the wall time, the throughput, p50 and p99 of each tool
// (from the request to the decoded result) and the server's peak RSS.
// Nothing here is asserted on time: the figures are for docs/speed.md.

// loadRows is the size of the load's workspace: the shipped fixture's
// order of size, so that the transport, not the calculation, is measured.
const loadRows = 1000

// loadResult is one transport's run.
type loadResult struct {
	transport string
	wall      time.Duration
	calls     map[string][]time.Duration
	errors    int
	rssKiB    int64
}

func (b *bench) runLoad(clients, calls int, stdout io.Writer) error {
	var results []loadResult
	for _, transport := range []string{"http", "stdio"} {
		r, err := b.measureLoad(transport, clients, calls)
		if err != nil {
			return fmt.Errorf("%s: %w", transport, err)
		}
		results = append(results, r)
	}
	reportLoad(stdout, results, clients, calls)
	for _, r := range results {
		if r.errors > 0 {
			return fmt.Errorf("%s: %d calls did not answer ok", r.transport, r.errors)
		}
	}
	return nil
}

// loadServer is one measured server and how to reach it.
type loadServer struct {
	cmd     *exec.Cmd
	session func() (*sdk.ClientSession, error) // a client's session
	close   func()
}

// startLoadServer starts the server of transport on ws with a ledger.
func (b *bench) startLoadServer(transport, ws string) (*loadServer, error) {
	args := []string{"mcp", "--workspace", ws, "--output-dir", "runs", "--ledger", "calls.jsonl"}
	client := sdk.NewClient(&sdk.Implementation{Name: "metricproof-load", Version: "1"}, nil)
	if transport == "stdio" {
		cmd := exec.Command(b.runner, args...)
		cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			return nil, err
		}
		return &loadServer{cmd: cmd, session: func() (*sdk.ClientSession, error) { return cs, nil }, close: func() { cs.Close() }}, nil
	}
	cmd := exec.Command(b.runner, append(args, "--http", "127.0.0.1:0")...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lines := bufio.NewReader(stderr)
	var endpoint string
	for endpoint == "" {
		line, err := lines.ReadString('\n')
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, fmt.Errorf("the server did not say it listens: %q", line)
		}
		var l struct {
			Listening string `json:"listening"`
		}
		if json.Unmarshal([]byte(line), &l) == nil {
			endpoint = l.Listening
		}
	}
	go func() { _, _ = io.Copy(io.Discard, lines) }()
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	session := func() (*sdk.ClientSession, error) {
		tr := &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: httpClient, MaxRetries: -1}
		return client.Connect(context.Background(), tr, &sdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	}
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
	return &loadServer{cmd: cmd, session: session, close: stop}, nil
}

func (b *bench) measureLoad(transport string, clients, calls int) (loadResult, error) {
	ws, err := b.workspace("load-"+transport, loadRows)
	if err != nil {
		return loadResult{}, err
	}
	srv, err := b.startLoadServer(transport, ws)
	if err != nil {
		return loadResult{}, err
	}
	defer srv.close()
	warm, err := srv.session()
	if err != nil {
		return loadResult{}, err
	}
	inspected, err := loadCall(warm, "inspect_inputs", map[string]any{})
	if err != nil {
		return loadResult{}, err
	}
	digest, _ := inspected["result"].(map[string]any)["source_digest"].(string)
	if _, err := loadCall(warm, "analyze", map[string]any{"expected_source_digest": digest, "run_id": "warm"}); err != nil {
		return loadResult{}, err
	}

	r := loadResult{transport: transport, calls: map[string][]time.Duration{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sessions := make([]*sdk.ClientSession, clients)
	for c := range clients {
		if sessions[c], err = srv.session(); err != nil {
			return loadResult{}, err
		}
	}
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < calls; i += clients {
				tool := []string{"inspect_inputs", "analyze", "verify_result"}[i%3]
				args := map[string]any{}
				switch tool {
				case "analyze":
					args = map[string]any{"expected_source_digest": digest, "run_id": "load-" + strconv.Itoa(i)}
				case "verify_result":
					args = map[string]any{"run_id": "warm"}
				}
				t0 := time.Now()
				_, err := loadCall(sessions[c], tool, args)
				d := time.Since(t0)
				mu.Lock()
				if err != nil {
					r.errors++
				} else {
					r.calls[tool] = append(r.calls[tool], d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	r.wall = time.Since(start)
	r.rssKiB = peakRSSKiB(srv.cmd.Process.Pid)
	if transport == "http" {
		for _, s := range sessions {
			s.Close()
		}
	}
	return r, nil
}

// loadCall makes one tools/call and returns its response object; an
// answer other than ok: true is an error.
func loadCall(cs *sdk.ClientSession, tool string, args map[string]any) (map[string]any, error) {
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	text, _ := res.Content[0].(*sdk.TextContent)
	if res.IsError || text == nil {
		return nil, fmt.Errorf("%s did not answer ok: %.300v", tool, res.Content)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(text.Text), &body); err != nil {
		return nil, err
	}
	return body, nil
}

// percentile is the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func reportLoad(w io.Writer, results []loadResult, clients, calls int) {
	fmt.Fprintf(w, "load: %d clients at once, %d calls mixing the three tools (a third each), %d-row workspace, with a ledger, built binary, same run\n\n", clients, calls, loadRows)
	fmt.Fprintln(w, "| transport | errors | wall | calls/s | inspect_inputs p50 / p99 | analyze p50 / p99 | verify_result p50 / p99 | server peak RSS |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range results {
		n := 0
		var cols []string
		for _, tool := range []string{"inspect_inputs", "analyze", "verify_result"} {
			n += len(r.calls[tool])
			cols = append(cols, fmt.Sprintf("%.1f / %.1f ms", ms(percentile(r.calls[tool], 50)), ms(percentile(r.calls[tool], 99))))
		}
		fmt.Fprintf(w, "| %s | %d | %.2f s | %.0f | %s | %.1f MiB |\n", r.transport, r.errors, r.wall.Seconds(),
			float64(n)/r.wall.Seconds(), strings.Join(cols, " | "), float64(r.rssKiB)/1024)
	}
}
