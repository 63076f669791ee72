// Command bench is metricproof's whole-process benchmark: it builds
// tool-runner once, exactly as README says, and a floor program (start,
// read the four sources, SHA256 them), and times inspect_inputs, analyze
// and verify_result as an operator runs them, each a fresh process on the
// machine's own disk with every fsync, next to the floor measured in the
// same run. It reports the median wall time of each, its ratio to the
// floor, and the peak RSS, at 1,000, 3,000 and 10,000 rows (the maximum
// inputs of protocol §8), and the marginal cost per row between the sizes.
// analyze and verify_result must hash the whole runner executable on every
// call (protocol §6), so they are measured against the engine floor: the floor
// that also SHA256s the runner binary through read-only mappings, as the
// engine does; inspect_inputs, which does not hash it, against the plain
// floor.
//
// Every timed call must answer ok: true (a fresh run ID for every analyze,
// verify by the same binary that analyzed), or bench fails instead of
// timing a refusal. Run it from the repository:
//
//	go run ./internal/tools/bench            # 15 runs of each
//	go run ./internal/tools/bench -runs 31
//
// With -mcp it measures the MCP server instead (mcp.go): one warm
// "tool-runner mcp" session per size, the SDK's client timing each
// tools/call, next to the in-process floor of the same run. -runner PATH
// measures a tool-runner built elsewhere (another revision, for a before
// and after) instead of building this one. With -load it runs 64 clients
// at once (-clients) mixing the three tools for 960 calls (-calls) over
// HTTP, then the same over stdio, and reports throughput, p50 and p99 per
// tool and the server's peak RSS (load.go).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/metricproof/metricproof/internal/testinputs"
	"github.com/metricproof/metricproof/internal/tools/buildcmd"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == launchFlag {
		os.Exit(launch(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// launchFlag runs bench as the launcher of one measured process.
//
// Linux records the memory of the process that calls exec into the peak
// RSS of what it execs, and Go starts children sharing its own memory until
// they exec, so a child of this benchmark, which holds every workspace's
// bytes, would report the benchmark's RSS as its own. The launcher is a
// fresh small process that starts the measured one, times it from start to
// exit, and writes the wall time and peak RSS to file descriptor 3.
const launchFlag = "-launch-measured"

func launch(argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if cmd.ProcessState == nil { // it never started (no process left on a loaded machine)
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 127
	}
	rss := exitedRSSKiB(cmd.ProcessState)
	report := os.NewFile(3, "report")
	fmt.Fprintf(report, "%d %d\n", wall.Nanoseconds(), rss)
	report.Close()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return 127
	}
	return 0
}

// sizes are the row counts measured; the last is the maximum.
func sizes() []int { return []int{1000, 3000, 10000} }

// tools are the measured processes, the floor first. "runner start" is
// "tool-runner --help": the runner starting (its packages' initialisation
// included) and exiting with no work, the part of every call that no work
// it does can change.
func tools() []string {
	return []string{"floor", "engine floor", "runner start", "inspect_inputs", "analyze", "verify_result"}
}

// baseline is the floor a tool is measured against: the engine floor for
// the tools that hash the engine.
func baseline(tool string) string {
	switch tool {
	case "analyze", "verify_result":
		return "engine floor"
	}
	return "floor"
}

// goal is each tool's goal as a ratio to its baseline (issue 18), and the
// peak RSS goal in MiB.
func goal(tool string) float64 {
	return map[string]float64{"inspect_inputs": 2, "analyze": 2, "verify_result": 1.3}[tool]
}

const rssGoalMiB = 16

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runs := fs.Int("runs", 15, "timed runs of each tool at each size (at least 15)")
	keep := fs.Bool("keep", false, "keep the temporary directory and say where it is")
	mcpMode := fs.Bool("mcp", false, "measure tools/call of a warm MCP server session instead of one-shot processes")
	runner := fs.String("runner", "", "measure this tool-runner binary instead of building one")
	load := fs.Bool("load", false, "measure many clients at once over HTTP, next to the same calls over stdio (load.go)")
	clients := fs.Int("clients", 64, "with -load: clients at once")
	calls := fs.Int("calls", 960, "with -load: calls in all, per transport")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *runs < 15 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: go run ./internal/tools/bench [-runs N (>= 15)] [-keep] [-mcp | -load [-clients N] [-calls N]] [-runner PATH]")
		return 2
	}
	b, err := newBench(*keep, *runner)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	defer b.close(stderr)
	if *load {
		if *clients < 1 || *calls < *clients {
			fmt.Fprintln(stderr, "bench: -load needs -clients >= 1 and -calls >= -clients")
			return 2
		}
		if err := b.runLoad(*clients, *calls, stdout); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		return 0
	}
	if *mcpMode {
		if err := b.runMCP(*runs, stdout); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		return 0
	}
	results := map[int]map[string]measure{}
	for _, rows := range sizes() {
		m, err := b.measureSize(rows, *runs)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		results[rows] = m
	}
	report(stdout, results, *runs)
	return 0
}

// bench holds the built binaries and the scratch directory.
type bench struct {
	dir, runner, floor, root string
	keep                     bool
	description              testinputs.Max
	contract                 []byte
}

func newBench(keep bool, runner string) (*bench, error) {
	root, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	desc, err := os.ReadFile(filepath.Join(root, "testdata", "max-sources.json"))
	if err != nil {
		return nil, errors.New("run it from the repository's top folder (testdata/max-sources.json not found)")
	}
	m, err := testinputs.ParseMax(desc)
	if err != nil {
		return nil, err
	}
	contract, err := os.ReadFile(filepath.Join(root, "contracts", "metric-definitions.json"))
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(root, ".bench-")
	if err != nil {
		return nil, err
	}
	b := &bench{dir: dir, root: root, keep: keep, description: m, contract: contract,
		runner: filepath.Join(dir, "tool-runner"), floor: filepath.Join(dir, "floor")}
	// Built exactly as README tells the operator to build it (a static,
	// stripped binary), and the floor alike.
	builds := [][2]string{
		{b.runner, "./cmd/tool-runner"},
		{b.floor, "./internal/tools/bench/floor"},
	}
	if runner != "" {
		if b.runner, err = filepath.Abs(runner); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		builds = builds[1:]
	}
	for _, build := range builds {
		cmd := buildcmd.Command(root, build[0], build[1])
		if out, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("go %v: %v\n%s", cmd.Args[1:], err, out)
		}
	}
	return b, nil
}

func (b *bench) close(stderr io.Writer) {
	if b.keep {
		fmt.Fprintln(stderr, "bench: kept", b.dir)
		return
	}
	os.RemoveAll(b.dir)
}

// measure is one tool's runs at one size.
type measure struct {
	wall   []time.Duration
	rssKiB int64
}

func (m measure) median() time.Duration {
	s := slices.Clone(m.wall)
	slices.Sort(s)
	return s[len(s)/2]
}

// measureSize builds a workspace of rows rows on the disk and times every
// tool there, the tools interleaved run by run so that a drift of the
// machine touches them alike.
func (b *bench) measureSize(rows, runs int) (map[string]measure, error) {
	ws, err := b.workspace(fmt.Sprintf("ws-%d", rows), rows)
	if err != nil {
		return nil, err
	}
	inspected, _, err := b.call(ws, `{"request_id":"warm","tool":"inspect_inputs","arguments":{}}`)
	if err != nil {
		return nil, err
	}
	var digest struct {
		SourceDigest string `json:"source_digest"`
	}
	if err := json.Unmarshal(inspected["result"], &digest); err != nil {
		return nil, err
	}
	out := map[string]measure{}
	add := func(tool string, wall time.Duration, rss int64) {
		m := out[tool]
		m.wall = append(m.wall, wall)
		m.rssKiB = max(m.rssKiB, rss)
		out[tool] = m
	}
	for i := -1; i < runs; i++ { // run -1 warms the caches and is not kept
		wall, rss, err := b.timed([]string{b.floor, ws}, nil)
		if err != nil {
			return nil, fmt.Errorf("floor: %w", err)
		}
		ewall, erss, err := b.timed([]string{b.floor, "-engine", b.runner, ws}, nil)
		if err != nil {
			return nil, fmt.Errorf("engine floor: %w", err)
		}
		requests := []struct{ tool, body string }{
			{"inspect_inputs", `{"request_id":"i1","tool":"inspect_inputs","arguments":{}}`},
			{"analyze", fmt.Sprintf(`{"request_id":"run-%d","tool":"analyze","arguments":{"expected_source_digest":%q}}`, i+1, digest.SourceDigest)},
			{"verify_result", fmt.Sprintf(`{"request_id":"v1","tool":"verify_result","arguments":{"run_id":"run-%d"}}`, i+1)},
		}
		swall, srss, err := b.timed([]string{b.runner, "--help"}, nil)
		if err != nil {
			return nil, fmt.Errorf("runner start: %w", err)
		}
		if i >= 0 {
			add("floor", wall, rss)
			add("engine floor", ewall, erss)
			add("runner start", swall, srss)
		}
		for _, r := range requests {
			wall, rss, err := b.timed([]string{b.runner, "--workspace", ws, "--output-dir", "runs"}, []byte(r.body))
			if err != nil {
				return nil, fmt.Errorf("%s at %d rows: %w", r.tool, rows, err)
			}
			if i >= 0 {
				add(r.tool, wall, rss)
			}
		}
	}
	return out, nil
}

// workspace writes the first rows rows of the maximum inputs, and the
// shipped contract, into a fresh workspace named name on the disk.
func (b *bench) workspace(name string, rows int) (string, error) {
	ws := filepath.Join(b.dir, name)
	files, err := b.description.SourcesAt(rows)
	if err != nil {
		return "", err
	}
	files["contracts/metric-definitions.json"] = b.contract
	for name, data := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return "", err
		}
	}
	return ws, nil
}

// timed runs argv with stdin through the launcher and returns its wall
// time from start to exit and its peak RSS. A tool-runner call must answer
// ok: true.
func (b *bench) timed(argv []string, stdin []byte) (time.Duration, int64, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	cmd := exec.Command(self, append([]string{launchFlag}, argv...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return 0, 0, err
	}
	report, _ := io.ReadAll(r)
	if err := cmd.Wait(); err != nil {
		return 0, 0, fmt.Errorf("%v: %s%s", err, stdout.Bytes(), stderr.Bytes())
	}
	var wallNs, rss int64
	if _, err := fmt.Sscan(string(report), &wallNs, &rss); err != nil {
		return 0, 0, fmt.Errorf("the launcher did not report: %q", report)
	}
	if stdin != nil {
		var answer struct {
			OK bool `json:"ok"`
		}
		if json.Unmarshal(stdout.Bytes(), &answer) != nil || !answer.OK {
			return 0, 0, fmt.Errorf("did not answer ok: %.300s", stdout.Bytes())
		}
	}
	return time.Duration(wallNs), rss, nil
}

// call runs one request and decodes the answer.
func (b *bench) call(ws, request string) (map[string]json.RawMessage, []byte, error) {
	cmd := exec.Command(b.runner, "--workspace", ws)
	cmd.Stdin = bytes.NewReader([]byte(request))
	out, err := cmd.Output()
	if err != nil {
		return nil, out, fmt.Errorf("tool-runner: %v: %s", err, out)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, out, err
	}
	return m, out, nil
}

// report prints the figures at the maximum size, then the marginal costs.
func report(w io.Writer, results map[int]map[string]measure, runs int) {
	maxRows := sizes()[len(sizes())-1]
	at := results[maxRows]
	fmt.Fprintf(w, "whole process, built binary, %d rows, median of %d runs each (same run, same disk)\n\n", maxRows, runs)
	fmt.Fprintf(w, "| tool | median | ratio | to | goal | peak RSS |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, tool := range tools() {
		m := at[tool]
		base := baseline(tool)
		ratio := float64(m.median()) / float64(at[base].median())
		g := "—"
		if x := goal(tool); x > 0 {
			verdict := "met"
			if ratio > x || float64(m.rssKiB)/1024 > rssGoalMiB {
				verdict = "missed"
			}
			g = fmt.Sprintf("≤ %.1f×, ≤ %d MiB: %s", x, rssGoalMiB, verdict)
		}
		fmt.Fprintf(w, "| %s | %.2f ms | %.2f× | %s | %s | %.1f MiB |\n", tool, ms(m.median()), ratio, base, g, float64(m.rssKiB)/1024)
	}
	fmt.Fprintf(w, "\nmedians by size (ms):\n\n| tool |")
	for _, rows := range sizes() {
		fmt.Fprintf(w, " %d rows |", rows)
	}
	fmt.Fprintf(w, "\n| --- |%s\n", strings.Repeat(" --- |", len(sizes())))
	for _, tool := range tools() {
		fmt.Fprintf(w, "| %s |", tool)
		for _, rows := range sizes() {
			fmt.Fprintf(w, " %.2f |", ms(results[rows][tool].median()))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nmarginal cost per row (µs), from the medians at %v rows:\n\n", sizes())
	fmt.Fprintf(w, "| tool | 1,000→3,000 | 3,000→10,000 | ratio |\n| --- | --- | --- | --- |\n")
	s := sizes()
	for _, tool := range tools() {
		a := perRow(results[s[0]][tool].median(), results[s[1]][tool].median(), s[1]-s[0])
		c := perRow(results[s[1]][tool].median(), results[s[2]][tool].median(), s[2]-s[1])
		fmt.Fprintf(w, "| %s | %.3f | %.3f | %.2f |\n", tool, a, c, c/a)
	}
}

func perRow(from, to time.Duration, rows int) float64 {
	return float64(to-from) / float64(time.Microsecond) / float64(rows)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
