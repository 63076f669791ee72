//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/metricproof/metricproof/internal/testinputs"
)

// echo is the JSON value an answer's request_id or tool is compared with:
// nil for null.
func echo(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// Every row of protocol §2, and the edges around it, through the real process:
// the code, exit, one line, empty stderr, and the request_id and tool
// echoed only when the rules say so.
func TestSharedRequestsAnswerTheirCode(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases, err := testinputs.Requests(data)
	if err != nil || len(cases) < 50 {
		t.Fatalf("testdata/requests.json: %v, %d cases", err, len(cases))
	}
	ws := fixture(t)
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			is := is.New(t)
			in, err := testinputs.Assemble(tt.Input)
			is.NoErr(err)
			o := call(t, ws, string(in), "--workspace", ws, "--output-dir", "runs")
			is.Equal(o.code(), tt.Code)
			is.Equal(o.resp["request_id"], echo(tt.RequestID))
			is.Equal(o.resp["tool"], echo(tt.Tool))
			if tt.Code == "" {
				is.Equal(o.exit, 0)
				is.Equal(o.resp["ok"], true)
				is.Equal(o.resp["status"], "success")
				return
			}
			is.Equal(o.exit, 1)
			is.Equal(o.resp["ok"], false)
			is.Equal(o.resp["status"], "error")
			is.Equal(o.resp["result"], nil)
			is.Equal(o.resp["error"].(map[string]any)["retryable"], false)
		})
	}
}

func TestTheLimitCountsCharactersNotBytes(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	// 65,536 characters in all, most of them 4 bytes long: within the limit.
	pad := 65_536 - len(`{"request_id":"r1","tool":"inspect_inputs","arguments":{},"x":""}`)
	in := `{"request_id":"r1","tool":"inspect_inputs","arguments":{},"x":"` + strings.Repeat("😀", pad) + `"}`
	o := call(t, ws, in, "--workspace", ws)
	is.Equal(o.code(), "INVALID_REQUEST") // read whole and judged, not REQUEST_LIMIT
}

// Every option fault, decided before standard input is read.
func TestBadOptionsAnswerTheirCode(t *testing.T) {
	ws := fixture(t)
	tests := []struct {
		name string
		args []string
		code string
	}{
		{"an unknown option", []string{"--workspace", ws, "--bogus"}, "INVALID_OPTIONS"},
		{"a single-dash option", []string{"-workspace", ws}, "INVALID_OPTIONS"},
		{"a repeated option", []string{"--workspace", ws, "--workspace", ws}, "INVALID_OPTIONS"},
		{"a repeated option in = form", []string{"--workspace=" + ws, "--output-dir=a", "--output-dir=b"}, "INVALID_OPTIONS"},
		{"a value missing at the end", []string{"--workspace", ws, "--output-dir"}, "INVALID_OPTIONS"},
		{"a value missing before an option", []string{"--output-dir", "--workspace", ws}, "INVALID_OPTIONS"},
		{"an empty value", []string{"--workspace", ws, "--cancel-file="}, "INVALID_OPTIONS"},
		{"a positional argument", []string{"--workspace", ws, "extra"}, "INVALID_OPTIONS"},
		{"a double dash", []string{"--workspace", ws, "--"}, "INVALID_OPTIONS"},
		{"--help beside a bad option", []string{"--help", "--bogus"}, "INVALID_OPTIONS"},
		{"no workspace", []string{"--output-dir", "runs"}, "MISSING_WORKSPACE"},
		{"a workspace that does not exist", []string{"--workspace", ws + "/nothing"}, "MISSING_WORKSPACE"},
		{"a workspace that is a file", []string{"--workspace", ws + "/data/groups.csv"}, "MISSING_WORKSPACE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			// A valid request on stdin: the options alone must decide.
			o := call(t, ws, inspectRequest("r1"), tt.args...)
			is.Equal(o.code(), tt.code)
			is.Equal(o.exit, 1)
			is.Equal(o.resp["request_id"], nil) // decided before stdin was read
			is.Equal(o.resp["tool"], nil)
		})
	}
}

func TestAnalyzeAndVerifyNeedAnOutputDirectory(t *testing.T) {
	ws := fixture(t)
	for _, in := range []string{analyzeRequest("r1", strings.Repeat("a", 64)), verifyRequest("r1", "x")} {
		is := is.New(t)
		o := call(t, ws, in, "--workspace", ws)
		is.Equal(o.code(), "MISSING_CONTEXT")
		is.Equal(o.exit, 1)
		is.Equal(o.resp["request_id"], "r1")
	}
}
