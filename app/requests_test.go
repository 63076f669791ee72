package app_test

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// sharedRequest is one case of ../testdata/requests.json: a one-shot
// request and the answer SPEC §2 gives it on the shipped fixture with
// --output-dir runs. cmd/tool-runner runs the same file through real
// processes.
type sharedRequest struct {
	Name  string `json:"name"`
	Input []struct {
		Text  string `json:"text"`
		Hex   string `json:"hex"`
		Times int    `json:"times"`
	} `json:"input"`
	// Code is "" for a success.
	Code      string  `json:"code"`
	RequestID *string `json:"request_id"`
	Tool      *string `json:"tool"`
}

// bytes assembles the request: each piece's text, or its hex bytes when
// the request is not UTF-8, repeated times times (once when 0).
func (r sharedRequest) bytes(t testing.TB) []byte {
	t.Helper()
	var b []byte
	for _, p := range r.Input {
		piece := []byte(p.Text)
		if p.Hex != "" {
			var err error
			if piece, err = hex.DecodeString(p.Hex); err != nil {
				t.Fatalf("%s: %v", r.Name, err)
			}
		}
		for range max(p.Times, 1) {
			b = append(b, piece...)
		}
	}
	return b
}

// sharedRequests reads ../testdata/requests.json.
func sharedRequests(t testing.TB) []sharedRequest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []sharedRequest `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) < 50 {
		t.Fatalf("only %d shared requests", len(file.Cases))
	}
	return file.Cases
}

func TestSharedRequestsAnswerTheirCode(t *testing.T) {
	files := shippedFixture(t)
	for _, tt := range sharedRequests(t) {
		t.Run(tt.Name, func(t *testing.T) {
			is := is.New(t)
			m := newMem(t, files)
			r := m.run(string(tt.bytes(t)), "--workspace", wsRoot, "--output-dir", "runs")
			is.Equal(r.code(), tt.Code)
			is.Equal(r.Body.OK, tt.Code == "")
			is.Equal(r.Body.RequestID, tt.RequestID) // echoed only when SPEC §2 says so
			is.Equal(r.Body.Tool, tt.Tool)
			is.Equal(r.Exit == 0, tt.Code == "")
			is.True(!strings.Contains(r.Raw, wsRoot)) // no absolute path
		})
	}
}

// The oracle of FuzzRunner must give every shared case the answer written
// there by hand, or the fuzzer would hold the app to a wrong model.
func TestTheRequestOracleAgreesWithTheSharedCases(t *testing.T) {
	digest := fixtureDigest(t)
	for _, tt := range sharedRequests(t) {
		t.Run(tt.Name, func(t *testing.T) {
			is := is.New(t)
			want := expectAnswer(tt.bytes(t), digest)
			is.Equal(want.codes, []string{tt.Code})
			is.Equal(want.requestID, tt.RequestID)
			is.Equal(want.tool, tt.Tool)
		})
	}
}
