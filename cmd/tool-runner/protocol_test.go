package main

import (
	"strings"
	"testing"

	"github.com/matryer/is"
)

// Every row of SPEC §2, through the real process: the code, exit 1, one
// line, empty stderr, and the request_id and tool echoed only when the
// rules say so.
func TestBadRequestsAnswerTheirCode(t *testing.T) {
	digest := strings.Repeat("a", 64)
	tests := []struct {
		name, in, code string
		id, tool       any // expected echoes; nil means JSON null
	}{
		{"empty input", "", "INVALID_JSON", nil, nil},
		{"only white space", " \n", "INVALID_JSON", nil, nil},
		{"malformed JSON", `{"request_id":`, "INVALID_JSON", nil, nil},
		{"invalid UTF-8", "{\"request_id\":\"a\xff\",\"tool\":\"inspect_inputs\",\"arguments\":{}}", "INVALID_JSON", nil, nil},
		{"a second document", inspectRequest("r1") + inspectRequest("r2"), "INVALID_JSON", nil, nil},
		{"a second document after a newline", inspectRequest("r1") + "\n{}", "INVALID_JSON", nil, nil},
		{"NaN", `{"request_id":"r1","tool":"inspect_inputs","arguments":{"x":NaN}}`, "INVALID_JSON", nil, nil},
		{"Infinity", `{"request_id":"r1","tool":"inspect_inputs","arguments":{"x":Infinity}}`, "INVALID_JSON", nil, nil},
		{"-Infinity", `{"request_id":"r1","tool":"inspect_inputs","arguments":{"x":-Infinity}}`, "INVALID_JSON", nil, nil},
		{"a duplicate top-level key", `{"request_id":"r1","request_id":"r1","tool":"inspect_inputs","arguments":{}}`, "INVALID_JSON", nil, nil},
		{"a duplicate key deep down", `{"request_id":"r1","tool":"analyze","arguments":{"expected_source_digest":"` + digest + `","x":{"a":1,"a":1}}}`, "INVALID_JSON", nil, nil},
		{"top level an array", `[]`, "INVALID_REQUEST", nil, nil},
		{"top level a string", `"inspect_inputs"`, "INVALID_REQUEST", nil, nil},
		{"a missing key", `{"request_id":"r1","tool":"inspect_inputs"}`, "INVALID_REQUEST", "r1", nil},
		{"an unknown top-level key", `{"request_id":"r1","tool":"inspect_inputs","arguments":{},"x":1}`, "INVALID_REQUEST", "r1", nil},
		{"request_id not a string", `{"request_id":1,"tool":"inspect_inputs","arguments":{}}`, "INVALID_REQUEST", nil, nil},
		{"request_id with a space", `{"request_id":"r 1","tool":"inspect_inputs","arguments":{}}`, "INVALID_REQUEST", nil, nil},
		{"request_id of 65 characters", `{"request_id":"` + strings.Repeat("r", 65) + `","tool":"inspect_inputs","arguments":{}}`, "INVALID_REQUEST", nil, nil},
		{"request_id starting with '_'", `{"request_id":"_r","tool":"inspect_inputs","arguments":{}}`, "INVALID_REQUEST", nil, nil},
		{"tool not a string", `{"request_id":"r1","tool":["inspect_inputs"],"arguments":{}}`, "INVALID_REQUEST", "r1", nil},
		{"arguments not an object", `{"request_id":"r1","tool":"inspect_inputs","arguments":[]}`, "INVALID_REQUEST", "r1", nil},
		{"arguments null", `{"request_id":"r1","tool":"inspect_inputs","arguments":null}`, "INVALID_REQUEST", "r1", nil},
		{"an unknown tool", `{"request_id":"r1","tool":"rm_rf","arguments":{}}`, "UNKNOWN_TOOL", "r1", nil},
		{"a tool in the wrong case", `{"request_id":"r1","tool":"Inspect_Inputs","arguments":{}}`, "UNKNOWN_TOOL", "r1", nil},
		{"a tool with a trailing space", `{"request_id":"r1","tool":"analyze ","arguments":{}}`, "UNKNOWN_TOOL", "r1", nil},
		{"an unknown argument", `{"request_id":"r1","tool":"inspect_inputs","arguments":{"path":"/etc"}}`, "INVALID_ARGUMENTS", "r1", "inspect_inputs"},
		{"a missing argument", `{"request_id":"r1","tool":"analyze","arguments":{}}`, "INVALID_ARGUMENTS", "r1", "analyze"},
		{"an argument of the wrong type", `{"request_id":"r1","tool":"analyze","arguments":{"expected_source_digest":1}}`, "INVALID_ARGUMENTS", "r1", "analyze"},
		{"a digest in upper case", `{"request_id":"r1","tool":"analyze","arguments":{"expected_source_digest":"` + strings.Repeat("A", 64) + `"}}`, "INVALID_ARGUMENTS", "r1", "analyze"},
		{"a digest of 63 characters", `{"request_id":"r1","tool":"analyze","arguments":{"expected_source_digest":"` + digest[1:] + `"}}`, "INVALID_ARGUMENTS", "r1", "analyze"},
		{"a digest beside an extra argument", `{"request_id":"r1","tool":"analyze","arguments":{"expected_source_digest":"` + digest + `","run_id":"x"}}`, "INVALID_ARGUMENTS", "r1", "analyze"},
		{"a run_id that is not an ID", `{"request_id":"r1","tool":"verify_result","arguments":{"run_id":"../etc"}}`, "INVALID_ARGUMENTS", "r1", "verify_result"},
		{"a run_id of the wrong type", `{"request_id":"r1","tool":"verify_result","arguments":{"run_id":null}}`, "INVALID_ARGUMENTS", "r1", "verify_result"},
		{"over the limit", `{"request_id":"r1","tool":"inspect_inputs","arguments":{}}` + strings.Repeat(" ", 65_536), "REQUEST_LIMIT", nil, nil},
		{"over the limit in 4-byte characters", `"` + strings.Repeat("😀", 65_536) + `"`, "REQUEST_LIMIT", nil, nil},
	}
	ws := fixture(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			o := call(t, ws, tt.in, "--workspace", ws, "--output-dir", "runs")
			is.Equal(o.code(), tt.code)
			is.Equal(o.exit, 1)
			is.Equal(o.resp["ok"], false)
			is.Equal(o.resp["status"], "error")
			is.Equal(o.resp["request_id"], tt.id)
			is.Equal(o.resp["tool"], tt.tool)
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
