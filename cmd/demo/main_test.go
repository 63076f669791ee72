package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/internal/testutil"
)

// The demo drives the real runner (go run, a separate process) three times
// over a copy of the shipped fixture: three lines, all ok, the analyze line
// holding protocol §7's numbers and the third a verification. A second run of
// the same run ID stops at OUTPUT_COLLISION and exits non-zero.
func TestDemoRunsTheThreeToolsAndRefusesASecondRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the runner with go run")
	}
	is := is.New(t)
	ws := testutil.CopyFixture(t, t.TempDir())
	args := []string{"--workspace", ws, "--output-dir", "runs/demo", "--run-id", "demo-001"}

	var out, errOut bytes.Buffer
	is.Equal(run(args, &out, &errOut), 0)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	is.Equal(len(lines), 3)
	var resp [3]struct {
		OK        bool              `json:"ok"`
		Tool      string            `json:"tool"`
		Artifacts map[string]string `json:"artifacts"`
		Result    struct {
			Conversion struct {
				Rate string `json:"rate"`
			} `json:"conversion"`
			Revenue struct {
				KnownSubtotal string `json:"known_subtotal"`
			} `json:"revenue"`
			Integrity string `json:"integrity"`
		} `json:"result"`
	}
	for i, line := range lines {
		is.NoErr(json.Unmarshal([]byte(line), &resp[i]))
		is.True(resp[i].OK)
	}
	is.Equal(resp[0].Tool, "inspect_inputs")
	is.Equal(resp[1].Tool, "analyze")
	is.Equal(resp[1].Result.Conversion.Rate, "0.827272727273")
	is.Equal(resp[1].Result.Revenue.KnownSubtotal, "140")
	is.Equal(resp[1].Artifacts["result"], "runs/demo/demo-001/result.json")
	is.Equal(resp[2].Tool, "verify_result")
	is.Equal(resp[2].Result.Integrity, "verified")
	for _, step := range []string{"demo: step 1 of 3: inspect_inputs", "demo: step 2 of 3: analyze", "demo: step 3 of 3: verify_result",
		"demo: done: run demo-001 verified", "go run ./cmd/tool-runner report --workspace W --output-dir runs/demo --run-id demo-001"} {
		is.True(strings.Contains(errOut.String(), step)) // each step said, and what to read the run with
	}
	errOut.Reset()

	out.Reset()
	is.Equal(run(args, &out, &errOut), 1)
	lines = strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	is.Equal(len(lines), 2) // stopped at analyze
	is.True(strings.Contains(lines[1], `"code":"OUTPUT_COLLISION"`))
}

func TestDemoNeedsItsThreeOptions(t *testing.T) {
	is := is.New(t)
	var out, errOut bytes.Buffer
	is.Equal(run([]string{"--workspace", "."}, &out, &errOut), 2)
	is.Equal(out.Len(), 0)
	is.True(strings.Contains(errOut.String(), "usage"))
}

// singleDash finds an option listed the way package flag lists it.
var singleDash = regexp.MustCompile(`(?m)^\s+-[a-z]`)

// --help prints the demo's own usage, with the double dashes the options
// take, to standard output, and exits 0; a mistyped option gets the same
// usage on standard error and exit 2.
func TestDemoHelpPrintsItsOwnUsage(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		exit       int
		toStdout   bool
		errorFirst string
	}{
		{"--help", []string{"--help"}, 0, true, ""},
		{"-help", []string{"-help"}, 0, true, ""},
		{"-h", []string{"-h"}, 0, true, ""},
		{"an unknown option", []string{"--nope"}, 2, false, "demo: "},
		{"a missing option", []string{"--workspace", "."}, 2, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var out, errOut bytes.Buffer
			is.Equal(run(tt.args, &out, &errOut), tt.exit)
			text, other := errOut.String(), out.String()
			if tt.toStdout {
				text, other = other, text
			}
			is.Equal(other, "")                             // one stream only
			is.True(strings.HasPrefix(text, tt.errorFirst)) // a fault is named first
			is.True(strings.Contains(text, "usage: demo --workspace W --output-dir O --run-id ID"))
			for _, option := range []string{"--workspace", "--output-dir", "--run-id", "--help"} {
				is.True(strings.Contains(text, "\n  "+option+" ")) // each option, with two dashes
			}
			is.True(!singleDash.MatchString(text)) // never Go's single-dash listing
		})
	}
}

// The demo says what it is doing on standard error before each step
// starts, the first before go run has compiled anything: here a go that
// never answers stands in for the compile, and the first step is already
// said when it fails. Standard output holds response lines only.
func TestDemoSaysEachStepBeforeItStarts(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in go is a shell script")
	}
	is := is.New(t)
	bin := t.TempDir()
	is.NoErr(os.WriteFile(filepath.Join(bin, "go"), []byte("#!/bin/sh\necho compiling >&2\nexit 1\n"), 0o755))
	t.Setenv("PATH", bin)
	var out, errOut bytes.Buffer
	is.Equal(run([]string{"--workspace", ".", "--output-dir", "runs/demo", "--run-id", "demo-001"}, &out, &errOut), 1)
	is.Equal(out.String(), "") // no response line: the stand-in answered none
	lines := strings.Split(errOut.String(), "\n")
	is.True(strings.HasPrefix(lines[0], "demo: step 1 of 3: inspect_inputs")) // said first
	is.True(strings.Contains(lines[0], "go run builds the runner first"))     // with what takes the time
	is.True(strings.Contains(errOut.String(), "compiling"))                   // before go ran
	is.True(!strings.Contains(errOut.String(), "step 2"))                     // and no step it did not reach
}
