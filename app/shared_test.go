package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/metricproof/metricproof/internal/testinputs"
	"github.com/metricproof/metricproof/internal/testutil"
)

// sharedRequests are the cases of ../testdata/requests.json: one-shot
// requests and the answers protocol §2 gives them on the shipped fixture with
// --output-dir runs. cmd/tool-runner runs the same file through real
// processes.
func sharedRequests(t testing.TB) []testinputs.Request {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases, err := testinputs.Requests(data)
	if err != nil || len(cases) < 50 {
		t.Fatalf("testdata/requests.json: %v, %d cases", err, len(cases))
	}
	return cases
}

// requestBytes assembles a shared request.
func requestBytes(t testing.TB, r testinputs.Request) []byte {
	t.Helper()
	b, err := testinputs.Assemble(r.Input)
	if err != nil {
		t.Fatalf("%s: %v", r.Name, err)
	}
	return b
}

func TestSharedRequestsAnswerTheirCode(t *testing.T) {
	files := testutil.Fixture(t)
	for _, tt := range sharedRequests(t) {
		t.Run(tt.Name, func(t *testing.T) {
			is := is.New(t)
			m := newMem(t, files)
			r := m.run(string(requestBytes(t, tt)), "--workspace", wsRoot, "--output-dir", "runs")
			is.Equal(r.code(), tt.Code)
			is.Equal(r.Body.OK, tt.Code == "")
			is.Equal(r.Body.RequestID, tt.RequestID) // echoed only when protocol §2 says so
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
			want := expectAnswer(requestBytes(t, tt), digest)
			is.Equal(want.codes, []string{tt.Code})
			is.Equal(want.requestID, tt.RequestID)
			is.Equal(want.tool, tt.Tool)
		})
	}
}

// sourcesAt are the first rows rows of the maximum inputs, with the
// shipped contract.
func sourcesAt(t testing.TB, rows int) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "max-sources.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := testinputs.ParseMax(data)
	if err != nil {
		t.Fatal(err)
	}
	files, err := m.SourcesAt(rows)
	if err != nil {
		t.Fatal(err)
	}
	files["contracts/metric-definitions.json"] = testutil.Fixture(t)["contracts/metric-definitions.json"]
	return files
}
