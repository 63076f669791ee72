package protocol_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/app/protocol"
)

// The shared hostile requests (../../testdata/requests.json) that a request
// check refuses get their code from DecodeRequest, with the request_id and
// tool a refusal echoes; the rest pass every request check.
func TestDecodeRequestAnswersTheSharedRequests(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Name  string
			Input []struct {
				Text  string
				Hex   string
				Times int
			}
			Code      string
			RequestID *string `json:"request_id"`
			Tool      *string
		}
	}
	if err := json.Unmarshal(data, &file); err != nil || len(file.Cases) < 50 {
		t.Fatalf("requests.json: %v, %d cases", err, len(file.Cases))
	}
	requestChecks := map[string]bool{"INVALID_JSON": true, "INVALID_REQUEST": true, "UNKNOWN_TOOL": true, "INVALID_ARGUMENTS": true}
	for _, c := range file.Cases {
		if c.Code == "REQUEST_LIMIT" { // the transport's read decides it
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			is := is.New(t)
			var in bytes.Buffer
			for _, p := range c.Input {
				part := []byte(p.Text)
				if p.Hex != "" {
					part, err = hex.DecodeString(p.Hex)
					is.NoErr(err)
				}
				in.Write(bytes.Repeat(part, max(p.Times, 1)))
			}
			call, e := protocol.DecodeRequest(in.Bytes())
			if !requestChecks[c.Code] {
				is.True(e == nil) // passes the request checks
				is.Equal(*call.HeardID(), *c.RequestID)
				is.Equal(*call.HeardTool(), *c.Tool)
				return
			}
			is.True(e != nil)
			is.Equal(string(e.Code), c.Code)
			is.Equal(call.HeardID(), c.RequestID)
			is.Equal(call.HeardTool(), c.Tool)
		})
	}
}

// MCP arguments: absent or null is {}, over the limit is REQUEST_LIMIT,
// and analyze's valid run_id is the call ID.
func TestDecodeMCPArguments(t *testing.T) {
	digest := strings.Repeat("a", 64)
	tests := []struct {
		tool, raw string
		code      protocol.Code
		id        string
	}{
		{protocol.ToolInspect, "", "", "assigned"},
		{protocol.ToolInspect, "null", "", "assigned"},
		{protocol.ToolInspect, `{"x":1}`, protocol.InvalidArguments, "assigned"},
		{protocol.ToolInspect, `[]`, protocol.InvalidArguments, "assigned"},
		{protocol.ToolInspect, `{"a":1,"a":2}`, protocol.InvalidJSON, "assigned"},
		{protocol.ToolInspect, `"` + strings.Repeat("x", protocol.RequestLimitChars) + `"`, protocol.RequestLimit, "assigned"},
		{protocol.ToolAnalyze, `{"expected_source_digest":"` + digest + `","run_id":"mine"}`, "", "mine"},
		{protocol.ToolAnalyze, `{"expected_source_digest":"` + digest + `","run_id":"-bad"}`, protocol.InvalidArguments, "assigned"},
		{protocol.ToolVerify, `{"run_id":"r1","expected_source_digest":"` + digest + `"}`, protocol.InvalidArguments, "assigned"},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.raw[:min(len(tt.raw), 40)], func(t *testing.T) {
			is := is.New(t)
			c := protocol.MCPCall(tt.tool, []byte(tt.raw), func() string { return "assigned" })
			is.Equal(c.ID, tt.id)
			c, e := protocol.DecodeMCP(c, []byte(tt.raw))
			if tt.code == "" {
				is.True(e == nil)
			} else {
				is.True(e != nil)
				is.Equal(e.Code, tt.code)
			}
			is.Equal(*c.HeardID(), tt.id) // every answer carries the call ID
			is.Equal(*c.HeardTool(), tt.tool)
		})
	}
}

// Only CANCELLED has its own status, and only OUTPUT_BUSY and STALE_CONTEXT
// are retryable unless the failure says otherwise.
func TestCodesStatusAndRetry(t *testing.T) {
	is := is.New(t)
	is.Equal(len(protocol.Codes()), 28)
	for _, c := range protocol.Codes() {
		is.Equal(c.Status() == "cancelled", c == protocol.Cancelled)
		is.Equal(protocol.Errorf(c, "x").Retryable, c == protocol.OutputBusy || c == protocol.StaleContext)
	}
}

// Retryability belongs to the failure: an amended failure keeps it, so a
// store that marks an IO_OR_NUMERIC_ERROR retryable is answered so.
func TestRetryabilityIsTheFailuresAndSurvivesAmending(t *testing.T) {
	is := is.New(t)
	e := &protocol.Error{Code: protocol.IOOrNumericError, Message: "the store could not be reached", Retryable: true}
	amended := e.Amended("; nothing was committed")
	is.Equal(amended.Message, "the store could not be reached; nothing was committed")
	is.True(amended.Retryable)
	is.True(!protocol.Errorf(protocol.IOOrNumericError, "x").Amended("y").Retryable)
	is.Equal(protocol.ErrorOf(nil), (*protocol.Error)(nil))
	is.Equal(protocol.ErrorOf(fmt.Errorf("wrapped: %w", e)), e)
	is.Equal(protocol.ErrorOf(errors.New("a bug")).Code, protocol.InternalError) // no code is a bug
}
