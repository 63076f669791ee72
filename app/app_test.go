package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/stdio"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/ports"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden; review the diff before committing")

func TestEveryCodeHasItsStatusExitAndRetryability(t *testing.T) {
	is := is.New(t)
	codes := protocol.Codes()
	is.Equal(len(codes), 28) // the closed set: the 26 it began with, SIGNATURE_INVALID and LEDGER_TAMPERED
	seen := map[protocol.Code]bool{}
	for _, c := range codes {
		is.True(!seen[c]) // no code twice
		seen[c] = true
		is.True(regexp.MustCompile(`^[A-Z_]+$`).MatchString(string(c)))
		is.Equal(protocol.Errorf(c, "x").Retryable, c == protocol.OutputBusy || c == protocol.StaleContext) // only OUTPUT_BUSY and STALE_CONTEXT are retryable
	}
}

// The checks of protocol §2 run in the order of its table: a request that breaks
// several rules is answered with the first.
func TestRequestChecksRunInTheirOrder(t *testing.T) {
	m := newMem(t, testutil.Fixture(t))
	tests := []struct {
		name, in, code string
	}{
		{"invalid JSON beats everything", `{"request_id":"_","tool":1,"arguments":[],"x":NaN}`, "INVALID_JSON"},
		{"an unknown key beats a bad ID", `{"request_id":"_","tool":"inspect_inputs","arguments":{},"x":1}`, "INVALID_REQUEST"},
		{"a bad ID beats a bad tool", `{"request_id":"_","tool":1,"arguments":{}}`, "INVALID_REQUEST"},
		{"a non-string tool beats bad arguments", `{"request_id":"r","tool":1,"arguments":[]}`, "INVALID_REQUEST"},
		{"non-object arguments beat an unknown tool", `{"request_id":"r","tool":"x","arguments":[]}`, "INVALID_REQUEST"},
		{"an unknown tool beats bad arguments", `{"request_id":"r","tool":"x","arguments":{"y":1}}`, "UNKNOWN_TOOL"},
		{"bad arguments beat a missing output dir", `{"request_id":"r","tool":"analyze","arguments":{}}`, "INVALID_ARGUMENTS"},
		{"a missing output dir comes last", analyzeReq("r", strings.Repeat("0", 64)), "MISSING_CONTEXT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r := m.run(tt.in, "--workspace", wsRoot)
			is.Equal(r.code(), tt.code)
			is.Equal(r.Exit, 1)
		})
	}
}

func TestOptionsAreDecidedBeforeTheRequest(t *testing.T) {
	m := newMem(t, testutil.Fixture(t))
	tests := []struct {
		args []string
		code string
	}{
		{[]string{"--workspace", wsRoot, "--nope"}, "INVALID_OPTIONS"},
		{[]string{"--workspace=" + wsRoot, "--workspace=" + wsRoot}, "INVALID_OPTIONS"},
		{[]string{"--workspace=" + wsRoot, "--output-dir=--x"}, "INVALID_OPTIONS"},
		{[]string{"--workspace", wsRoot, "--cancel-file", "--x"}, "INVALID_OPTIONS"},
		{[]string{}, "MISSING_WORKSPACE"},
		{[]string{"--workspace", "/elsewhere"}, "MISSING_WORKSPACE"},
	}
	for _, tt := range tests {
		is := is.New(t)
		r := m.run("not even JSON", tt.args...)
		is.Equal(r.code(), tt.code)
		is.Equal(r.Body.RequestID, nil)
		is.True(!strings.Contains(r.Raw, wsRoot)) // no absolute path in the message
	}
}

func TestHelpPrintsUsageAndExitsZero(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	wire := func(app.Options) (app.Ports, io.Closer, error) {
		t.Fatal("help must not open the workspace")
		return app.Ports{}, nil, nil
	}
	stdin := readerFunc(func([]byte) (int, error) { t.Fatal("help must not read stdin"); return 0, nil })
	exit := stdio.Run(context.Background(), []string{"--help"}, stdin, &out, wire)
	is.Equal(exit, 0)
	is.True(bytes.HasPrefix(out.Bytes(), []byte("usage: tool-runner")))
}

// readerFunc is an io.Reader made of a function.
type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// The envelope's keys come in the order of protocol §3.
func TestEnvelopeKeysComeInOrder(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	for _, in := range []string{inspect("i1"), "{"} {
		r := m.run(in, "--workspace", wsRoot)
		var keys []string
		dec := json.NewDecoder(strings.NewReader(r.Raw))
		tok, _ := dec.Token()
		is.Equal(tok, json.Delim('{'))
		for dec.More() {
			k, _ := dec.Token()
			keys = append(keys, k.(string))
			var skip json.RawMessage
			is.NoErr(dec.Decode(&skip))
		}
		is.Equal(keys, []string{"protocol_version", "request_id", "ok", "status", "tool", "result", "error", "artifacts", "verification"})
		is.True(strings.HasSuffix(r.Raw, "}\n"))
		is.Equal(strings.Count(r.Raw, "\n"), 1)
		var compact bytes.Buffer
		is.NoErr(json.Compact(&compact, []byte(r.Raw)))
		is.Equal(compact.String()+"\n", r.Raw) // no insignificant white space
	}
}

// panicEngine panics, standing in for any bug below the app.
type panicEngine struct{}

func (panicEngine) Identity() (ports.EngineIdentity, error) { panic("boom") }

func TestAPanicBecomesInternalError(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	digest := m.digest()
	m.engine = panicEngine{}
	r := m.run(analyzeReq("r1", digest), "--workspace", wsRoot, "--output-dir", "runs")
	is.Equal(r.code(), "INTERNAL_ERROR")
	is.Equal(r.Exit, 1)
	is.Equal(*r.Body.RequestID, "r1")
	is.True(!strings.Contains(r.Raw, "boom")) // the panic value is not shown
	is.True(!m.exists("runs/r1"))
}

// The analyze response's result is the JSON value of result.json, and
// result.json is byte-for-byte the reviewed golden file.
func TestAnalyzeOfTheFixtureMatchesTheGoldenResult(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	r := m.run(analyzeReq("demo-001", m.digest()), "--workspace", wsRoot, "--output-dir", "runs/demo")
	is.Equal(r.Exit, 0)
	is.Equal(r.Body.Artifacts, map[string]string{
		"result":    "runs/demo/demo-001/result.json",
		"receipt":   "runs/demo/demo-001/receipt.json",
		"checksums": "runs/demo/demo-001/checksums.json",
	})
	saved := m.read("runs/demo/demo-001/result.json")
	var fromFile, fromResponse any
	is.NoErr(json.Unmarshal(saved, &fromFile))
	is.NoErr(json.Unmarshal(r.Body.Result, &fromResponse))
	is.Equal(fromFile, fromResponse)

	golden := filepath.Join("testdata", "golden", "fixture-result.json")
	if *update {
		is.NoErr(os.WriteFile(golden, saved, 0o644))
	}
	want, err := os.ReadFile(golden)
	is.NoErr(err)
	is.Equal(string(saved), string(want)) // go test ./app -run Golden -update, then review the diff
}

func TestReceiptAndChecksumsBindTheRun(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	digest := m.digest()
	r := m.run(analyzeReq("r1", digest), "--workspace", wsRoot, "--output-dir", "runs")
	is.Equal(r.Exit, 0)
	result, receipt, checksums := m.read("runs/r1/result.json"), m.read("runs/r1/receipt.json"), m.read("runs/r1/checksums.json")
	var rc evidence.Receipt
	is.NoErr(json.Unmarshal(receipt, &rc))
	is.Equal(rc.ProtocolVersion, "1.0")
	is.Equal(rc.RunID, "r1")
	is.Equal(rc.DefinitionID, "synthetic-v1")
	is.Equal(rc.SourceDigest, digest)
	is.Equal(len(rc.Sources), 4)
	is.Equal(rc.EngineSHA256, strings.Repeat("e", 64))
	is.Equal(rc.ResultSHA256, testutil.SHA256Hex(result))
	is.Equal(rc.CreatedAt, "2026-11-29T12:00:00Z") // the clock port's UTC time
	is.Equal(*rc.Build.GoVersion, "go1.26.8")
	is.Equal(rc.Build.VCSRevision, nil) // unknown facts are null, never invented
	is.Equal(string(checksums), fmt.Sprintf("{\n  \"receipt.json\": %q,\n  \"result.json\": %q\n}\n", testutil.SHA256Hex(receipt), testutil.SHA256Hex(result)))
	is.True(!bytes.Contains(result, []byte("r1")))         // result.json holds no run ID
	is.True(!bytes.Contains(result, []byte("2026-11-29"))) // and no time
	is.True(bytes.HasSuffix(result, []byte("\n}\n")))      // one layout: indented, one trailing newline
}

func TestTwoRunsOfTheSameSourcesSaveIdenticalResults(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	digest := m.digest()
	is.Equal(m.run(analyzeReq("a", digest), "--workspace", wsRoot, "--output-dir", "runs").Exit, 0)
	is.Equal(m.run(analyzeReq("b", digest), "--workspace", wsRoot, "--output-dir", "runs").Exit, 0)
	is.Equal(string(m.read("runs/a/result.json")), string(m.read("runs/b/result.json")))
	is.True(!bytes.Equal(m.read("runs/a/receipt.json"), m.read("runs/b/receipt.json")))
}

func TestVerifyChecksAreDeclaredInSpecOrder(t *testing.T) {
	is := is.New(t)
	is.Equal(app.Checks(), []string{"run_present", "saved_files_valid", "receipt_bound", "result_bound", "signature_valid", "sources_unchanged", "engine_unchanged", "result_recomputed"})
	m := newMem(t, testutil.Fixture(t))
	is.Equal(m.run(analyzeReq("r1", m.digest()), "--workspace", wsRoot, "--output-dir", "runs").Exit, 0)
	r := m.run(verifyReq("v1", "r1"), "--workspace", wsRoot, "--output-dir", "runs")
	is.Equal(r.Exit, 0)
	var res app.VerifyResult
	is.NoErr(json.Unmarshal(r.Body.Result, &res))
	is.Equal(res.Checks, []string{"run_present", "saved_files_valid", "receipt_bound", "result_bound", "sources_unchanged", "engine_unchanged", "result_recomputed"}) // every check of an unsigned run ran, in order
	is.Equal(res.Integrity, "verified")
	is.Equal(res.HumanApproval, "not_granted")
	is.Equal(res.ReleaseEligible, false)
}

func TestWriteBoundary(t *testing.T) {
	tests := []struct {
		out, code string
	}{
		{".", "PATH_BOUNDARY"},
		{wsRoot, "PATH_BOUNDARY"},
		{"runs/..", "PATH_BOUNDARY"},
		{"data", "PATH_BOUNDARY"},
		{"data/runs", "PATH_BOUNDARY"},
		{"contracts", "PATH_BOUNDARY"},
		{".git/runs", "PATH_BOUNDARY"},
		{"domain", "PATH_BOUNDARY"},
		{"ports/x", "PATH_BOUNDARY"},
		{"adapters", "PATH_BOUNDARY"},
		{"app", "PATH_BOUNDARY"},
		{"cmd/x", "PATH_BOUNDARY"},
		{"src", "PATH_BOUNDARY"},
		{"../outside", "PATH_BOUNDARY"},
		{"/secret/operator/other", "PATH_BOUNDARY"},
		{"data/transactions.csv", "PATH_BOUNDARY"},
		{"notes.txt", "INVALID_OUTPUT"},
		{"notes.txt/runs", "INVALID_OUTPUT"},
		{"database", ""}, // a sibling sharing a prefix with data is fine
		{"runs/cmd", ""}, // protected names only count at the top
	}
	for _, tt := range tests {
		t.Run(tt.out, func(t *testing.T) {
			is := is.New(t)
			files := testutil.Fixture(t)
			files["notes.txt"] = []byte("x")
			m := newMem(t, files)
			r := m.run(analyzeReq("r1", m.digest()), "--workspace", wsRoot, "--output-dir", tt.out)
			is.Equal(r.code(), tt.code)
			if tt.code != "" {
				is.True(!strings.Contains(r.Raw, wsRoot)) // no absolute path
			}
		})
	}
}
