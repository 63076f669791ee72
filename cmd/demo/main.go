// Command demo drives the real tool-runner as a separate process over its
// stdio protocol, three times: inspect_inputs, analyze with the digest just
// returned and request_id = --run-id, and verify_result of that run. It
// prints the three response lines and exits 0 only if all three succeed;
// it stops at the first call that does not.
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
)

// runnerPackage is the tool-runner, by import path so the demo works from
// any directory of the module.
const runnerPackage = "github.com/metricproof/metricproof/cmd/tool-runner"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workspace := fs.String("workspace", "", "the workspace holding data/ and contracts/")
	outputDir := fs.String("output-dir", "", "where analyze commits the run")
	runID := fs.String("run-id", "", "the run ID: analyze's request_id and verify_result's run_id")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *workspace == "" || *outputDir == "" || *runID == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: demo --workspace W --output-dir O --run-id ID")
		return 2
	}
	goTool, err := findGo()
	if err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 1
	}
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

	inspected, ok := call(map[string]any{"request_id": "demo-inspect", "tool": "inspect_inputs", "arguments": map[string]any{}}, false)
	if !ok {
		return 1
	}
	result, _ := inspected["result"].(map[string]any)
	digest, _ := result["source_digest"].(string)
	if _, ok := call(map[string]any{"request_id": *runID, "tool": "analyze", "arguments": map[string]any{"expected_source_digest": digest}}, true); !ok {
		return 1
	}
	if _, ok := call(map[string]any{"request_id": "demo-verify", "tool": "verify_result", "arguments": map[string]any{"run_id": *runID}}, true); !ok {
		return 1
	}
	return 0
}

// findGo returns the go command on PATH.
func findGo() (string, error) {
	p, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("the go command is not on PATH; the demo runs the runner with go run")
	}
	return p, nil
}
