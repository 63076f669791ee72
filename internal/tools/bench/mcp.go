package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/adapters/mcp"
	"github.com/metricproof/metricproof/adapters/osfs"
	"github.com/metricproof/metricproof/domain"
)

// The MCP mode (-mcp): for each size, one "tool-runner mcp" process on a
// workspace of the real disk, warmed by one call of each tool, then runs
// rounds of one tools/call of each tool, timed by the SDK's own client from
// the request to the decoded result (what a host waits for), interleaved
// with the floor: this process reading the four sources through the same
// port and hashing them, warm. Every call must answer ok: true. It reports
// the median of each, its ratio to the floor of the same size, the size
// of each answer (the compact text block, which is the structuredContent)
// and the server's peak RSS; and, to show what analyze cannot avoid, the
// disk's own cost of writing and fsyncing a file of result.json's size.

// mcpTools are the rows of the MCP report, the floor first.
func mcpTools() []string {
	return []string{"floor", "fsync", "inspect_inputs", "analyze", "verify_result"}
}

// mcpGoal is each tool's goal at the maximum size, as a ratio to the floor
// (issue 14).
func mcpGoal(tool string) float64 {
	return map[string]float64{"inspect_inputs": 1.5, "analyze": 3.5, "verify_result": 2.5}[tool]
}

// mcpSize is what one size measured.
type mcpSize struct {
	calls  map[string]measure
	bytes  map[string]int // the answer's text block
	rssKiB int64          // the server's VmHWM
}

func (b *bench) runMCP(runs int, stdout io.Writer) error {
	results := map[int]mcpSize{}
	for _, rows := range sizes() {
		m, err := b.measureMCP(rows, runs)
		if err != nil {
			return fmt.Errorf("%d rows: %w", rows, err)
		}
		results[rows] = m
	}
	reportMCP(stdout, results, runs)
	return nil
}

func (b *bench) measureMCP(rows, runs int) (mcpSize, error) {
	ws, err := b.workspace(fmt.Sprintf("mcp-%d", rows), rows)
	if err != nil {
		return mcpSize{}, err
	}
	src, err := osfs.Open(ws)
	if err != nil {
		return mcpSize{}, err
	}
	defer src.Close()
	cmd := exec.Command(b.runner, "mcp", "--workspace", ws, "--output-dir", "runs")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "metricproof-bench", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return mcpSize{}, err
	}
	defer cs.Close()

	out := mcpSize{calls: map[string]measure{}, bytes: map[string]int{}}
	add := func(tool string, d time.Duration) {
		m := out.calls[tool]
		m.wall = append(m.wall, d)
		out.calls[tool] = m
	}
	call := func(tool string, args map[string]any) (map[string]any, time.Duration, error) {
		start := time.Now()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
		wall := time.Since(start)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", tool, err)
		}
		text, _ := res.Content[0].(*sdk.TextContent)
		if res.IsError || text == nil {
			return nil, 0, fmt.Errorf("%s did not answer ok: %.300v", tool, res.Content)
		}
		out.bytes[tool] = max(out.bytes[tool], len(text.Text))
		var body map[string]any
		if err := json.Unmarshal([]byte(text.Text), &body); err != nil {
			return nil, 0, err
		}
		return body, wall, nil
	}
	warm, _, err := call("inspect_inputs", map[string]any{})
	if err != nil {
		return mcpSize{}, err
	}
	digest, _ := warm["result"].(map[string]any)["source_digest"].(string)
	if _, _, err := call("analyze", map[string]any{"expected_source_digest": digest, "run_id": "warm"}); err != nil {
		return mcpSize{}, err
	}
	if _, _, err := call("verify_result", map[string]any{"run_id": "warm"}); err != nil {
		return mcpSize{}, err
	}
	resultBytes, err := os.ReadFile(filepath.Join(ws, "runs", "warm", "result.json"))
	if err != nil {
		return mcpSize{}, err
	}
	for i := range runs {
		d, err := floorOnce(src)
		if err != nil {
			return mcpSize{}, err
		}
		add("floor", d)
		if d, err = fsyncOnce(filepath.Join(ws, "fsync-floor"), len(resultBytes)); err != nil {
			return mcpSize{}, err
		}
		add("fsync", d)
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"inspect_inputs", map[string]any{}},
			{"analyze", map[string]any{"expected_source_digest": digest, "run_id": "run-" + strconv.Itoa(i)}},
			{"verify_result", map[string]any{"run_id": "warm"}},
		} {
			_, d, err := call(c.tool, c.args)
			if err != nil {
				return mcpSize{}, err
			}
			add(c.tool, d)
		}
	}
	out.rssKiB = peakRSSKiB(cmd.Process.Pid)
	if err := cs.Close(); err != nil {
		return mcpSize{}, err
	}
	if stderr.Len() > 0 {
		warning, err := b.startWarning()
		if err != nil {
			return mcpSize{}, err
		}
		if stderr.String() != warning {
			return mcpSize{}, fmt.Errorf("the server wrote to stderr: %.300s", stderr.Bytes())
		}
	}
	return out, nil
}

// startWarning is the one line the measured runner writes on stderr at
// mcp start when it cannot be rebuilt (protocol §9.1), from the build
// settings its version line lists: a runner built from a git worktree or
// a modified checkout says so, and is measured all the same. A runner of
// an earlier revision says nothing, which is fine too.
func (b *bench) startWarning() (string, error) {
	line, err := exec.Command(b.runner, "version").Output()
	if err != nil {
		return "", fmt.Errorf("%s version: %w", b.runner, err)
	}
	var v struct {
		Settings map[string]string `json:"settings"`
	}
	if err := json.Unmarshal(line, &v); err != nil {
		return "", fmt.Errorf("%s version: %w", b.runner, err)
	}
	return mcp.EngineWarning(v.Settings), nil
}

// floorOnce reads the four sources through the port every call reads them
// through, and hashes them: what no tool call can avoid.
func floorOnce(src *osfs.Workspace) (time.Duration, error) {
	start := time.Now()
	files := make(map[string][]byte, 4)
	for _, name := range domain.SourceNames() {
		data, err := src.ReadSource(name, domain.MaxSourceBytes)
		if err != nil {
			return 0, err
		}
		files[name] = data
	}
	_ = domain.HashSources(files).Digest()
	return time.Since(start), nil
}

// fsyncOnce writes size bytes to a new file in dir, fsyncs it and dir, and
// removes it: the part of a commit the disk decides.
func fsyncOnce(dir string, size int) (time.Duration, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	data := bytes.Repeat([]byte{' '}, size)
	start := time.Now()
	f, err := os.CreateTemp(dir, "f-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	d, err := os.Open(dir)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// peakRSSKiB reads a live process's VmHWM; 0 when it cannot.
func peakRSSKiB(pid int) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kib
		}
	}
	return 0
}

func reportMCP(w io.Writer, results map[int]mcpSize, runs int) {
	names := map[string]string{
		"floor": "floor: read + SHA256 the four sources, in process",
		"fsync": "disk: write + fsync result.json's bytes, and the directory",
	}
	fmt.Fprintf(w, "MCP server, one warm session per size, built binary, median of %d calls each, interleaved (same run, same disk)\n\n", runs)
	fmt.Fprintf(w, "| per call |")
	for _, rows := range sizes() {
		fmt.Fprintf(w, " %d rows |", rows)
	}
	fmt.Fprintf(w, " goal at %d |\n| --- |%s --- |\n", sizes()[len(sizes())-1], strings.Repeat(" --- |", len(sizes())))
	for _, tool := range mcpTools() {
		name := names[tool]
		if name == "" {
			name = tool
		}
		fmt.Fprintf(w, "| %s |", name)
		var ratio float64
		for _, rows := range sizes() {
			m := results[rows]
			ratio = float64(m.calls[tool].median()) / float64(m.calls["floor"].median())
			fmt.Fprintf(w, " %.2f ms (%.2f×) |", ms(m.calls[tool].median()), ratio)
		}
		g := "—"
		if x := mcpGoal(tool); x > 0 {
			verdict := "met"
			if ratio > x {
				verdict = "missed"
			}
			g = fmt.Sprintf("≤ %.1f×: %s", x, verdict)
		}
		fmt.Fprintf(w, " %s |\n", g)
	}
	fmt.Fprintf(w, "\nanswer sizes (the compact text block, = structuredContent), bytes:\n\n| tool |")
	for _, rows := range sizes() {
		fmt.Fprintf(w, " %d rows |", rows)
	}
	fmt.Fprintf(w, "\n| --- |%s\n", strings.Repeat(" --- |", len(sizes())))
	for _, tool := range mcpTools()[2:] {
		fmt.Fprintf(w, "| %s |", tool)
		for _, rows := range sizes() {
			fmt.Fprintf(w, " %d |", results[rows].bytes[tool])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nserver peak RSS (VmHWM) after the session:")
	for _, rows := range sizes() {
		fmt.Fprintf(w, " %d rows %.1f MiB;", rows, float64(results[rows].rssKiB)/1024)
	}
	fmt.Fprintln(w)
}
