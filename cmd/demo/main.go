// Command demo drives the real tool-runner as a separate process over its
// stdio protocol, three times: inspect_inputs, analyze with the digest just
// returned and request_id = --run-id, and verify_result of that run. It
// prints the three response lines and exits 0 only if all three succeed;
// it stops at the first call that does not. On standard error it says what
// each step is before it starts, the first at once (the first go run
// compiles the runner, which takes minutes on a cold build cache).
//
// The runner is started with `go run`, exactly as README tells an operator
// to start it, so the engine that a later manual verify_result hashes is the
// one that made the run. Run it from inside the repository.
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
	"strings"
)

// runnerPackage is the tool-runner, by import path so the demo works from
// any directory of the module.
const runnerPackage = "github.com/metricproof/metricproof/cmd/tool-runner"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usage is what --help prints, and what a mistake in the options is
// answered with on standard error.
const usage = `usage: demo --workspace W --output-dir O --run-id ID

Drives the real tool-runner, started with go run, three times over its
stdio protocol: inspect_inputs, analyze with the digest just returned and
request_id ID, and verify_result of run ID. Prints the three response
lines. Run it from inside the repository.

  --workspace W    the workspace holding data/ and contracts/
  --output-dir O   where analyze commits the run; inside W
  --run-id ID      the run ID: analyze's request_id and verify_result's run_id
  --help           print this text and exit 0

Exit status: 0 when all three calls succeed, 1 when one does not (the
demo stops there), 2 for a mistake in the options.
`

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // package flag's own usage lists single dashes
	workspace := fs.String("workspace", "", "")
	outputDir := fs.String("output-dir", "", "")
	runID := fs.String("run-id", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = io.WriteString(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "demo: %v\n%s", err, usage)
		return 2
	}
	if *workspace == "" || *outputDir == "" || *runID == "" || fs.NArg() > 0 {
		_, _ = io.WriteString(stderr, usage)
		return 2
	}
	goTool, err := findGo()
	if err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 1
	}
	// What the demo is doing goes to standard error, step by step, before
	// each go run starts: the first compiles the runner, which takes
	// minutes on a cold build cache, and silence then reads as a hang.
	// Standard output stays the three response lines.
	step := func(n int, what string) { fmt.Fprintf(stderr, "demo: step %d of 3: %s\n", n, what) }
	call := func(request any, withOutput bool) (map[string]any, bool) {
		argv := []string{"run", runnerPackage, "--workspace", *workspace}
		if withOutput {
			argv = append(argv, "--output-dir", *outputDir)
		}
		body, _ := json.Marshal(request)
		cmd := exec.Command(goTool, argv...)
		cmd.Stdin = bytes.NewReader(body)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		_ = cmd.Run() // the response line, not the exit status, says how it went
		line := bytes.TrimSuffix(out.Bytes(), []byte("\n"))
		var resp map[string]any
		if bytes.Count(out.Bytes(), []byte("\n")) != 1 || json.Unmarshal(line, &resp) != nil {
			fmt.Fprintf(stderr, "demo: the runner did not answer with one JSON line\n%s", errOut.Bytes())
			return nil, false
		}
		fmt.Fprintf(stdout, "%s\n", line)
		return resp, resp["ok"] == true
	}

	step(1, "inspect_inputs reads and checks the four sources; go run builds the runner first (a minute or more the first time, cached after)")
	inspected, ok := call(map[string]any{"request_id": "demo-inspect", "tool": "inspect_inputs", "arguments": map[string]any{}}, false)
	if !ok {
		return 1
	}
	result, _ := inspected["result"].(map[string]any)
	digest, _ := result["source_digest"].(string)
	step(2, "analyze computes with the digest just returned and commits run "+*runID+" in the output directory")
	if _, ok := call(map[string]any{"request_id": *runID, "tool": "analyze", "arguments": map[string]any{"expected_source_digest": digest}}, true); !ok {
		return 1
	}
	step(3, "verify_result checks run "+*runID+" byte for byte and computes it again")
	if _, ok := call(map[string]any{"request_id": "demo-verify", "tool": "verify_result", "arguments": map[string]any{"run_id": *runID}}, true); !ok {
		return 1
	}
	fmt.Fprintf(stderr, "demo: done: run %s verified. Its engine is the one go run builds from this checkout, so read its page with\n"+
		"  go run ./cmd/tool-runner report --workspace %s --output-dir %s --run-id %s\n"+
		"(a binary from go build is another engine, and answers ENGINE_CHANGED).\n", *runID, shown(*workspace, "W"), shown(*outputDir, "O"), *runID)
	return 0
}

// shown is a path as the operator gave it, or name in its place when it
// is absolute: the demo's messages, like the runner's, hold no absolute
// path.
func shown(path, name string) string {
	if filepath.IsAbs(path) || strings.ContainsAny(path, " \t\n'\"$`\\") {
		return name
	}
	return path
}

// findGo returns the go command on PATH.
func findGo() (string, error) {
	p, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("the go command is not on PATH; the demo runs the runner with go run")
	}
	return p, nil
}
