//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/metricproof/metricproof/internal/testinputs"
	"github.com/metricproof/metricproof/internal/testutil"
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
	data, err := os.ReadFile(filepath.Join(testutil.Root(t), "testdata", "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases, err := testinputs.Requests(data)
	if err != nil || len(cases) < 50 {
		t.Fatalf("testdata/requests.json: %v, %d cases", err, len(cases))
	}
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			ws := fixture(t) // its own: a case that wrongly wrote would not touch the others
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
			is.Equal(o.resp["error"].(map[string]any)["retryable"], tt.Code == "STALE_CONTEXT") // inspect again; the rest need another call or the operator
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
