package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/app/jsonvalue/jsonvaluetest"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/internal/testutil"
)

// The fuzz targets of this file hold the whole app, through the one-shot
// transport and the in-memory workspace, to oracles written here from protocol
// §2, §3 and §6 alone:
//
//   - FuzzRunner: any bytes on standard input get exactly one response line
//     that is the answer the request oracle (expectAnswer) predicts: its
//     code, echoed request_id and tool, status, exit and envelope. No
//     malformed request ever succeeds.
//   - FuzzVerifySavedFiles: a committed run whose result, receipt or
//     checksums bytes are replaced by fuzz bytes (alone, or re-bound so the
//     later checks are reached) never panics, writes nothing, and answers
//     success exactly when the oracle says the run is still intact, else one
//     of the verify codes of protocol §6.
//
// Run one with, for example:
//
//	go test ./app -run '^$' -fuzz '^FuzzRunner$' -fuzztime 30s

// Patterns of protocol §2, written out here rather than taken from the app.
var (
	idPattern     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
	digestPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// fixtureDigest is the source digest of the shipped fixture, computed as
// protocol §4 defines it without the domain package.
func fixtureDigest(t testing.TB) string {
	t.Helper()
	hashes := map[string]string{}
	for name, data := range testutil.Fixture(t) {
		hashes[name] = testutil.SHA256Hex(data)
	}
	canonical, err := json.Marshal(hashes) // sorted keys, no spaces
	if err != nil {
		t.Fatal(err)
	}
	return testutil.SHA256Hex(append(canonical, '\n'))
}

// answer is what the oracle predicts for one request: the code (one of
// codes; "" is a success) and the echoes.
type answer struct {
	codes     []string
	requestID *string
	tool      *string
}

// expectAnswer is protocol §2 as an oracle, for a request on the shipped
// fixture with --output-dir runs and no run in it yet: the limit, then the
// checks in the order of the table, then what the tool answers.
func expectAnswer(data []byte, digest string) answer {
	const limitChars = 65_536
	switch {
	case utf8.Valid(data) && utf8.RuneCount(data) > limitChars:
		return answer{codes: []string{"REQUEST_LIMIT"}}
	case !utf8.Valid(data) && len(data) > limitChars:
		// What a character is in bytes that are not UTF-8 is the
		// transport's choice; either answer keeps the promise.
		return answer{codes: []string{"INVALID_JSON", "REQUEST_LIMIT"}}
	}
	v, err := jsonvaluetest.Decode(data)
	if err != nil {
		return answer{codes: []string{"INVALID_JSON"}}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return answer{codes: []string{"INVALID_REQUEST"}}
	}
	var a answer
	if id, ok := obj["request_id"].(string); ok && idPattern.MatchString(id) {
		a.requestID = &id
	}
	refuse := func(code string) answer { a.codes = []string{code}; return a }
	tool, toolIsString := obj["tool"].(string)
	args, argsIsObject := obj["arguments"].(map[string]any)
	keys := slices.Sorted(maps.Keys(obj))
	switch {
	case !slices.Equal(keys, []string{"arguments", "request_id", "tool"}), a.requestID == nil, !toolIsString, !argsIsObject:
		return refuse("INVALID_REQUEST")
	case tool != "inspect_inputs" && tool != "analyze" && tool != "verify_result":
		return refuse("UNKNOWN_TOOL")
	}
	a.tool = &tool
	argKeys := slices.Sorted(maps.Keys(args))
	switch tool {
	case "inspect_inputs":
		if len(argKeys) != 0 {
			return refuse("INVALID_ARGUMENTS")
		}
		return refuse("")
	case "analyze":
		d, ok := args["expected_source_digest"].(string)
		switch {
		case !slices.Equal(argKeys, []string{"expected_source_digest"}) || !ok || !digestPattern.MatchString(d):
			return refuse("INVALID_ARGUMENTS")
		case d != digest:
			return refuse("STALE_CONTEXT")
		}
		return refuse("")
	default:
		id, ok := args["run_id"].(string)
		if !slices.Equal(argKeys, []string{"run_id"}) || !ok || !idPattern.MatchString(id) {
			return refuse("INVALID_ARGUMENTS")
		}
		return refuse("MISSING_RESULT") // runs/ holds no run yet
	}
}

// verification is protocol §3's fixed verification object.
const verification = `{"native_bi":"not_run","host_cancellation":"not_tested","os_sandbox":"not_claimed","real_model_quality":"not_tested","human_review":"not_performed"}`

// checkEnvelope holds a response to protocol §3 whatever the request was: one
// compact JSON line, a code from the closed set, and status, exit, ok,
// retryable, result and verification agreeing with it.
func checkEnvelope(t *testing.T, r response) {
	t.Helper()
	if strings.Count(r.Raw, "\n") != 1 || !strings.HasSuffix(r.Raw, "\n") {
		t.Fatalf("not one line: %q", r.Raw)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(r.Raw)); err != nil || compact.String()+"\n" != r.Raw {
		t.Fatalf("not compact JSON: %q", r.Raw)
	}
	var raw struct {
		Verification json.RawMessage `json:"verification"`
	}
	if err := json.Unmarshal([]byte(r.Raw), &raw); err != nil || string(raw.Verification) != verification {
		t.Fatalf("verification is not protocol §3's: %q", r.Raw)
	}
	if r.Body.ProtocolVersion != "1.0" {
		t.Fatalf("no protocol version: %q", r.Raw)
	}
	if strings.Contains(r.Raw, wsRoot) {
		t.Fatalf("absolute path in %q", r.Raw)
	}
	if r.Body.RequestID != nil && !idPattern.MatchString(*r.Body.RequestID) {
		t.Fatalf("echoed an invalid request_id: %q", r.Raw)
	}
	code := r.code()
	wantStatus, wantExit := "error", 1
	switch code {
	case "":
		wantStatus, wantExit = "success", 0
	case "CANCELLED":
		wantStatus, wantExit = "cancelled", 3
	}
	switch {
	case r.Body.OK != (code == "") || r.Body.Status != wantStatus || r.Exit != wantExit:
		t.Fatalf("ok, status and exit %d disagree with the code: %q", r.Exit, r.Raw)
	case code != "" && !slices.Contains(protocol.Codes(), protocol.Code(code)):
		t.Fatalf("a code outside the closed set: %q", r.Raw)
	case code != "" && r.Body.Error.Retryable != (code == "OUTPUT_BUSY" || code == "STALE_CONTEXT"):
		t.Fatalf("retryable disagrees with the code: %q", r.Raw)
	case code == "INTERNAL_ERROR":
		t.Fatalf("a panic or an encoding failure: %q", r.Raw)
	case (string(r.Body.Result) == "null") != (code != ""):
		t.Fatalf("result present exactly on success, here: %q", r.Raw)
	}
}

// FuzzRunner feeds arbitrary standard input to the whole app and holds the
// answer to the request oracle.
func FuzzRunner(f *testing.F) {
	digest := fixtureDigest(f)
	for _, s := range []string{
		inspect("i1"), analyzeReq("r1", digest), analyzeReq("r1", strings.Repeat("0", 64)), verifyReq("v1", "r1"),
		"", "{", "[]", "null",
		`{"request_id":"r","tool":"inspect_inputs","arguments":{},"request_id":"r"}`,
		`{"request_id":"r","tool":"verify_result","arguments":{"run_id":"../../etc"}}`,
		`{"request_id":"r","tool":"analyze","arguments":{"expected_source_digest":NaN}}`,
		"{\"request_id\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	for _, c := range sharedRequests(f) {
		if b := requestBytes(f, c); len(b) <= 4096 {
			f.Add(b)
		}
	}
	files := testutil.Fixture(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		want := expectAnswer(in, digest)
		r := newMem(t, files).run(string(in), "--workspace", wsRoot, "--output-dir", "runs")
		checkEnvelope(t, r)
		if !slices.Contains(want.codes, r.code()) {
			t.Fatalf("code %q, the oracle says one of %q, for %q: %s", r.code(), want.codes, in, r.Raw)
		}
		if !equalPtr(r.Body.RequestID, want.requestID) || !equalPtr(r.Body.Tool, want.tool) {
			t.Fatalf("echoes request_id %s tool %s, the oracle %s and %s, for %q", show(r.Body.RequestID), show(r.Body.Tool), show(want.requestID), show(want.tool), in)
		}
		wantArtifacts := 0
		if r.Body.OK && *r.Body.Tool == "analyze" {
			wantArtifacts = 3
		}
		if len(r.Body.Artifacts) != wantArtifacts {
			t.Fatalf("artifacts %v: %s", r.Body.Artifacts, r.Raw)
		}
	})
}

func equalPtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func show(p *string) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *p)
}

// Modes of FuzzVerifySavedFiles: which saved file the fuzz bytes replace,
// and whether the files that bind it are rewritten to match.
const (
	rawResult      = iota // result.json replaced; checksums and receipt kept
	rawReceipt            // receipt.json replaced; checksums kept
	rawChecksums          // checksums.json replaced
	reboundResult         // result.json replaced; receipt's result_sha256 and checksums rewritten
	reboundReceipt        // receipt.json replaced; checksums rewritten
	verifyModes
)

// verifyCodes are the answers of verify_result's checks (protocol §6 and §10)
// for a run whose three files are all present.
var verifyCodes = []string{"INVALID_SAVED_RESULT", "RECEIPT_TAMPERED", "RESULT_TAMPERED", "SIGNATURE_INVALID", "STALE_SOURCES", "ENGINE_CHANGED"}

func checksumsFile(receipt, result []byte) []byte {
	return fmt.Appendf(nil, "{\n  \"receipt.json\": %q,\n  \"result.json\": %q\n}\n", testutil.SHA256Hex(receipt), testutil.SHA256Hex(result))
}

// committedRun analyzes the fixture into runs/r1 and returns the workspace
// and the three saved files.
func committedRun(t testing.TB, files map[string][]byte, digest string) (m *memWorkspace, result, receipt, checksums []byte) {
	t.Helper()
	m = newMem(t, files)
	if r := m.run(analyzeReq("r1", digest), "--workspace", wsRoot, "--output-dir", "runs"); r.Exit != 0 {
		t.Fatalf("analyze failed: %s", r.Raw)
	}
	return m, m.read("runs/r1/result.json"), m.read("runs/r1/receipt.json"), m.read("runs/r1/checksums.json")
}

// memTree is every file under the workspace with its bytes, and every
// directory; verify must leave it as it was.
func memTree(t *testing.T, m *memWorkspace) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := afero.Walk(m.fs, wsRoot, func(p string, fi fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() {
			tree[p] = "dir"
			return nil
		}
		b, err := afero.ReadFile(m.fs, p)
		tree[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// judgeReceipt says whether verify may accept the receipt data in place of
// original, and whether it must. It may when data is strict JSON of the
// same keys whose checked fields (protocol §6: run, protocol, definition,
// sources, digests) have the original's values, whose created_at is a UTC
// time in analyze's layout (README), and whose build facts have their
// shape (checked for shape only). It must when, besides, the build facts
// are the original's: then only created_at or the layout changed.
func judgeReceipt(data, original []byte) (may, must bool) {
	got, err := jsonvaluetest.Decode(data)
	if err != nil {
		return false, false
	}
	want, _ := jsonvaluetest.Decode(original)
	g, ok := got.(map[string]any)
	w := want.(map[string]any)
	if !ok || !slices.Equal(slices.Sorted(maps.Keys(g)), slices.Sorted(maps.Keys(w))) {
		return false, false
	}
	for _, k := range []string{"protocol_version", "run_id", "definition_id", "sources", "source_digest", "engine_sha256", "result_sha256"} {
		if !jsonvaluetest.Equal(g[k], w[k]) {
			return false, false
		}
	}
	created, ok := g["created_at"].(string)
	if !ok {
		return false, false
	}
	at, err := time.Parse(time.RFC3339Nano, created)
	if err != nil || !strings.HasSuffix(created, "Z") || at.UTC().Format(time.RFC3339Nano) != created {
		return false, false
	}
	build, ok := g["build"].(map[string]any)
	if !ok || !slices.Equal(slices.Sorted(maps.Keys(build)), []string{"go_version", "module_version", "vcs_modified", "vcs_revision"}) {
		return false, false
	}
	for k, v := range build {
		switch v.(type) {
		case nil:
		case string:
			if k == "vcs_modified" {
				return false, false
			}
		case bool:
			if k != "vcs_modified" {
				return false, false
			}
		default:
			return false, false
		}
	}
	return true, jsonvaluetest.Equal(g["build"], w["build"])
}

// FuzzVerifySavedFiles damages one saved file of a committed run with fuzz
// bytes and verifies it.
func FuzzVerifySavedFiles(f *testing.F) {
	files := testutil.Fixture(f)
	digest := fixtureDigest(f)
	_, result, receipt, checksums := committedRun(f, files, digest)
	originals := [][]byte{rawResult: result, rawReceipt: receipt, rawChecksums: checksums, reboundResult: result, reboundReceipt: receipt}
	for mode, orig := range originals {
		var compact bytes.Buffer
		_ = json.Compact(&compact, orig)
		for _, seed := range [][]byte{
			orig, compact.Bytes(), append(bytes.Clone(orig), ' '), orig[:len(orig)/2],
			bytes.Replace(orig, []byte("{\n"), []byte("{\n  \"x\": 1,\n"), 1),
			bytes.Replace(orig, []byte("\n}\n"), []byte(",\n  \"synthetic\": true\n}\n"), 1),
			bytes.ReplaceAll(orig, []byte("2026-11-29T12:00:00Z"), []byte("2026-11-29T12:00:00.5Z")),
			bytes.ReplaceAll(orig, []byte("2026-11-29T12:00:00Z"), []byte("2026-11-29T13:00:00+01:00")),
			bytes.ReplaceAll(orig, []byte(`"r1"`), []byte(`"r2"`)),
			bytes.ReplaceAll(orig, []byte(`"140"`), []byte(`"140.0"`)),
			bytes.ReplaceAll(orig, []byte(`91`), []byte(`91.0`)),
			bytes.ReplaceAll(orig, []byte(`"receipt.json"`), []byte(`"RECEIPT.JSON"`)),
			bytes.ReplaceAll(orig, []byte(`"result.json"`), []byte(`"\u0072esult.json"`)),
			[]byte("{}"), []byte("null"), []byte(""), []byte("[]"), []byte("{\"a\":1,\"a\":1}"),
		} {
			f.Add(uint8(mode), seed)
		}
	}

	f.Fuzz(func(t *testing.T, mode uint8, data []byte) {
		mode %= verifyModes
		m, result, receipt, _ := committedRun(t, files, digest)
		write := func(name string, b []byte) {
			if err := afero.WriteFile(m.fs, wsRoot+"/runs/r1/"+name, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		same := bytes.Equal(data, originals[mode])
		strict := jsonvaluetest.Check(data) == nil
		// allowed are the codes the oracle accepts; "" is a success.
		var allowed []string
		switch mode {
		case rawResult, reboundResult:
			write("result.json", data)
			if mode == reboundResult {
				rebound := bytes.Replace(receipt, []byte(testutil.SHA256Hex(result)), []byte(testutil.SHA256Hex(data)), 1)
				write("receipt.json", rebound)
				write("checksums.json", checksumsFile(rebound, data))
			}
			// The recomputation is compared byte for byte: only the very
			// bytes analyze wrote verify.
			allowed = []string{"INVALID_SAVED_RESULT", "RESULT_TAMPERED"}
			if same {
				allowed = []string{""}
			}
		case rawReceipt:
			write("receipt.json", data)
			allowed = []string{"INVALID_SAVED_RESULT", "RECEIPT_TAMPERED"}
			if same {
				allowed = []string{""}
			}
		case reboundReceipt:
			write("receipt.json", data)
			write("checksums.json", checksumsFile(data, result))
			switch may, must := judgeReceipt(data, receipt); {
			case must:
				allowed = []string{""}
			case may:
				allowed = append([]string{""}, verifyCodes...)
			default:
				allowed = verifyCodes
			}
		case rawChecksums:
			write("checksums.json", data)
			// checksums.json is not hashed anywhere: any strict JSON of
			// its value verifies.
			v, _ := jsonvaluetest.Decode(data)
			sums, _ := v.(map[string]any)
			rc, okRc := sums["receipt.json"].(string)
			rs, okRs := sums["result.json"].(string)
			switch {
			case len(sums) != 2 || !okRc || !okRs:
				allowed = []string{"INVALID_SAVED_RESULT"}
			case rc != testutil.SHA256Hex(receipt):
				allowed = []string{"INVALID_SAVED_RESULT", "RECEIPT_TAMPERED"}
			case rs != testutil.SHA256Hex(result):
				allowed = []string{"INVALID_SAVED_RESULT", "RESULT_TAMPERED"}
			default:
				allowed = []string{""}
			}
		}
		if !strict {
			// Check 2 comes before every binding: a saved file that is
			// not strict JSON is not a saved file.
			allowed = []string{"INVALID_SAVED_RESULT"}
		}
		before := memTree(t, m)
		r := m.run(verifyReq("v1", "r1"), "--workspace", wsRoot, "--output-dir", "runs")
		checkEnvelope(t, r)
		if !slices.Contains(allowed, r.code()) {
			t.Fatalf("mode %d: code %q, the oracle allows %q, for %q: %s", mode, r.code(), allowed, data, r.Raw)
		}
		if r.Body.RequestID == nil || *r.Body.RequestID != "v1" || r.Body.Tool == nil || *r.Body.Tool != "verify_result" {
			t.Fatalf("echoes: %s", r.Raw)
		}
		if after := memTree(t, m); !maps.Equal(before, after) {
			t.Fatalf("verify changed the workspace")
		}
	})
}
