//go:build unix

package contracts_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/adapters/engine"
	"github.com/metricproof/metricproof/adapters/stdio"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/internal/wire"
)

// runner runs the real program in this process, over real files.
type runner struct {
	t    *testing.T
	wire app.Wire
	// tmp is the test's own folder: the absolute path no output may show.
	tmp string
}

func newRunner(t *testing.T) *runner {
	return &runner{t: t, wire: wire.Real(engine.New()), tmp: t.TempDir()}
}

// with is the runner for the subtest t: the same program and folder,
// failing t.
func (r *runner) with(t *testing.T) *runner {
	c := *r
	c.t = t
	return &c
}

// answer is one response line and its exit status.
type answer struct {
	line []byte
	exit int
	resp map[string]any
}

func (a answer) code() string {
	e, _ := a.resp["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// call runs one tool call of the one-shot protocol.
func (r *runner) call(stdin string, args ...string) answer {
	r.t.Helper()
	var out bytes.Buffer
	exit := stdio.Run(context.Background(), args, strings.NewReader(stdin), &out, r.wire)
	line := out.Bytes()
	if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
		r.t.Fatalf("the answer is not one line: %q", line)
	}
	a := answer{line: bytes.TrimSuffix(line, []byte("\n")), exit: exit}
	if err := json.Unmarshal(a.line, &a.resp); err != nil {
		r.t.Fatalf("the answer is not a JSON object: %v", err)
	}
	return a
}

// ledger runs tool-runner ledger.
func (r *runner) ledger(args ...string) ([]byte, int) {
	var out bytes.Buffer
	exit := stdio.Ledger(args, &out, r.wire)
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), exit
}

// workspace copies the shipped fixture into a fresh folder under the
// test's, and applies the edits: a path to new content, or to "" to
// remove the file.
func (r *runner) workspace(name string, edits map[string]string) string {
	r.t.Helper()
	ws := filepath.Join(r.tmp, name)
	for f, data := range testutil.Fixture(r.t) {
		r.write(ws, f, string(data))
	}
	for f, text := range edits {
		if text == "" {
			if err := os.Remove(filepath.Join(ws, f)); err != nil {
				r.t.Fatal(err)
			}
			continue
		}
		r.write(ws, f, text)
	}
	return ws
}

func (r *runner) write(ws, rel, text string) {
	r.t.Helper()
	p := filepath.Join(ws, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// keys writes a fresh Ed25519 key pair as openssl would: the private key
// in PKCS#8 PEM, mode 0600, and its public key in SPKI PEM. It returns
// their paths.
func (r *runner) keys(name string) (private, public string) {
	r.t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		r.t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		r.t.Fatal(err)
	}
	spki, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		r.t.Fatal(err)
	}
	dir := filepath.Join(r.tmp, "keys")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		r.t.Fatal(err)
	}
	private, public = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".pub.pem")
	if err := os.WriteFile(private, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(public, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki}), 0o644); err != nil {
		r.t.Fatal(err)
	}
	return private, public
}

// holdLock takes the writer lock of ws/dir as another process would (a
// separate open file), and returns its release.
func (r *runner) holdLock(ws, dir string) func() {
	r.t.Helper()
	if err := os.MkdirAll(filepath.Join(ws, dir), 0o755); err != nil {
		r.t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(ws, dir, ".writer.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		r.t.Fatal(err)
	}
	return func() { _ = f.Close() }
}

func inspectRequest(id string) string {
	return fmt.Sprintf(`{"request_id":%q,"tool":"inspect_inputs","arguments":{}}`, id)
}

func analyzeRequest(id, digest string) string {
	return fmt.Sprintf(`{"request_id":%q,"tool":"analyze","arguments":{"expected_source_digest":%q}}`, id, digest)
}

func verifyRequest(id, run string) string {
	return fmt.Sprintf(`{"request_id":%q,"tool":"verify_result","arguments":{"run_id":%q}}`, id, run)
}

// digestOf inspects ws and returns its source digest.
func (r *runner) digestOf(ws string) string {
	r.t.Helper()
	a := r.call(inspectRequest("digest"), "--workspace", ws)
	result, _ := a.resp["result"].(map[string]any)
	d, _ := result["source_digest"].(string)
	if d == "" {
		r.t.Fatalf("inspect of %s failed: %s", filepath.Base(ws), a.line)
	}
	return d
}

// resultSchemas names the schema of each tool's result.
func resultSchemas() map[string]string {
	return map[string]string{protocol.ToolInspect: "inspect-result", protocol.ToolAnalyze: "analyze-result", protocol.ToolVerify: "verify-result"}
}

// checkAnswer validates a response line: the response schema, the
// tool's result schema, and no absolute path anywhere.
func (r *runner) checkAnswer(v validators, a answer) {
	r.t.Helper()
	if err := v.validate("response", a.line); err != nil {
		r.t.Errorf("response %s\n%v", a.line, err)
	}
	if tool, _ := a.resp["tool"].(string); a.resp["ok"] == true {
		result, _ := json.Marshal(a.resp["result"])
		if err := v.validate(resultSchemas()[tool], result); err != nil {
			r.t.Errorf("result of %s\n%v", tool, err)
		}
	}
	r.noAbsolutePath("response", a.line)
}

func (r *runner) noAbsolutePath(what string, data []byte) {
	r.t.Helper()
	if bytes.Contains(data, []byte(r.tmp)) || bytes.Contains(data, []byte(filepath.Dir(r.tmp))) {
		r.t.Errorf("%s shows an absolute path: %s", what, data)
	}
}

// checkRun validates every file of a committed run, and the statement
// inside a signed run's attestation. It returns the file names.
func (r *runner) checkRun(v validators, ws, dir, id string, resp map[string]any) []string {
	r.t.Helper()
	is := is.New(r.t)
	runDir := filepath.Join(ws, dir, id)
	entries, err := os.ReadDir(runDir)
	is.NoErr(err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	schemaOf := map[string]string{"result.json": "analyze-result", "receipt.json": "receipt", "checksums.json": "checksums", "attestation.json": "attestation"}
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(runDir, name))
		is.NoErr(err)
		schema, ok := schemaOf[name]
		if !ok {
			r.t.Errorf("run %s holds %s", id, name)
			continue
		}
		if err := v.validate(schema, data); err != nil {
			r.t.Errorf("%s of run %s\n%v", name, id, err)
		}
		r.noAbsolutePath(name, data)
		if name == "result.json" {
			var saved any
			is.NoErr(json.Unmarshal(data, &saved))
			is.Equal(saved, resp["result"]) // analyze's result is the value of result.json
		}
		if name == "attestation.json" {
			var env struct{ Payload string }
			is.NoErr(json.Unmarshal(data, &env))
			statement, err := base64.StdEncoding.DecodeString(env.Payload)
			is.NoErr(err)
			if err := v.validate("statement", statement); err != nil {
				r.t.Errorf("the statement of run %s\n%v", id, err)
			}
		}
	}
	return names
}

// step is one call of the scenario below, and what it must answer.
type step struct {
	name  string
	stdin string
	args  []string
	// code is the answer's code; "" for success.
	code string
	// before and after change the world around the call.
	before, after func(*runner)
	// run names the run a successful analyze committed, to check its files.
	run string
	// files are the run's files when run is set.
	files []string
}

// TestEveryDocumentTheProgramWritesValidates runs the real program in
// this process over copies of the fixture: every refusal of protocol §2, every
// tool's success, signed runs, option and output faults, collisions, stale
// digests, a busy writer, a cancel, damaged runs, with every call recorded
// in a ledger; then checks the ledger in its three outcomes. Every response
// line, every saved file, every statement, every ledger record and every
// ledger report must validate against its schema, as written and as the
// MCP server derives it.
func TestEveryDocumentTheProgramWritesValidates(t *testing.T) {
	r := newRunner(t)
	v := compileAll(t, loadSchemas(t))
	ws := r.workspace("fixture", nil)
	digest := r.digestOf(ws)
	signing, trusted := r.keys("operator")
	_, stranger := r.keys("stranger")
	base := []string{"--workspace", ws, "--output-dir", "runs", "--ledger", "calls.jsonl"}
	with := func(extra ...string) []string { return append(slices.Clone(base), extra...) }
	other := r.workspace("other", nil)
	damage := func(run, file string, edit func([]byte) []byte) func(*runner) {
		return func(r *runner) {
			p := filepath.Join(ws, "runs", run, file)
			data, err := os.ReadFile(p)
			if err != nil {
				r.t.Fatal(err)
			}
			r.write(ws, "runs/"+run+"/"+file, string(edit(data)))
		}
	}
	var release func()
	steps := []step{
		// The three tools, unsigned.
		{name: "inspect", stdin: inspectRequest("i1"), args: base},
		{name: "inspect without an output directory", stdin: inspectRequest("i2"), args: []string{"--workspace", ws, "--ledger", "calls.jsonl"}},
		{name: "analyze", stdin: analyzeRequest("r1", digest), args: base, run: "r1", files: []string{"checksums.json", "receipt.json", "result.json"}},
		{name: "verify", stdin: verifyRequest("v1", "r1"), args: base},
		// Signed evidence.
		{name: "signed analyze", stdin: analyzeRequest("s1", digest), args: with("--signing-key", signing), run: "s1",
			files: []string{"attestation.json", "checksums.json", "receipt.json", "result.json"}},
		{name: "verify a signed run with its trusted key", stdin: verifyRequest("v2", "s1"), args: with("--trusted-key", trusted)},
		{name: "verify a signed run without a trusted key", stdin: verifyRequest("v3", "s1"), args: base},
		{name: "verify an unsigned run with a trusted key", stdin: verifyRequest("v4", "r1"), args: with("--trusted-key", trusted), code: "SIGNATURE_INVALID"},
		{name: "verify a signed run with another trusted key", stdin: verifyRequest("v5", "s1"), args: with("--trusted-key", stranger), code: "SIGNATURE_INVALID"},
		// Evidence faults.
		{name: "collision", stdin: analyzeRequest("r1", digest), args: base, code: "OUTPUT_COLLISION"},
		{name: "stale digest", stdin: analyzeRequest("r2", strings.Repeat("0", 64)), args: base, code: "STALE_CONTEXT"},
		{name: "busy writer", stdin: analyzeRequest("r3", digest), args: base, code: "OUTPUT_BUSY",
			before: func(r *runner) { release = r.holdLock(ws, "runs") }, after: func(r *runner) { release() }},
		{name: "cancel", stdin: analyzeRequest("r4", digest), args: with("--cancel-file", "stop"), code: "CANCELLED",
			before: func(r *runner) { r.write(ws, "stop", "") }, after: func(r *runner) { _ = os.Remove(filepath.Join(ws, "stop")) }},
		{name: "verify an unknown run", stdin: verifyRequest("v6", "nope"), args: base, code: "MISSING_RESULT"},
		{name: "analyze a run to damage", stdin: analyzeRequest("d1", digest), args: base, run: "d1", files: []string{"checksums.json", "receipt.json", "result.json"}},
		{name: "verify a run with an extra file", stdin: verifyRequest("v7", "d1"), args: base, code: "INVALID_SAVED_RESULT",
			before: func(r *runner) { r.write(ws, "runs/d1/extra", "x") }, after: func(r *runner) { _ = os.Remove(filepath.Join(ws, "runs", "d1", "extra")) }},
		{name: "verify a run with a changed result", stdin: verifyRequest("v8", "d1"), args: base, code: "RESULT_TAMPERED",
			before: damage("d1", "result.json", func(b []byte) []byte { return bytes.Replace(b, []byte(`"140"`), []byte(`"141"`), 1) })},
		{name: "analyze a second run to damage", stdin: analyzeRequest("d2", digest), args: base, run: "d2", files: []string{"checksums.json", "receipt.json", "result.json"}},
		{name: "verify a run with a changed receipt", stdin: verifyRequest("v9", "d2"), args: base, code: "RECEIPT_TAMPERED",
			before: damage("d2", "receipt.json", func(b []byte) []byte { return bytes.Replace(b, []byte(`"go_version"`), []byte(`"go_version" `), 1) })},
		// The request checks of protocol §2, in their order.
		{name: "request over the limit", stdin: strings.Repeat("x", protocol.RequestLimitChars+1), args: base, code: "REQUEST_LIMIT"},
		{name: "empty input", stdin: "", args: base, code: "INVALID_JSON"},
		{name: "malformed JSON", stdin: `{"request_id":`, args: base, code: "INVALID_JSON"},
		{name: "duplicate key", stdin: `{"request_id":"a","request_id":"b","tool":"inspect_inputs","arguments":{}}`, args: base, code: "INVALID_JSON"},
		{name: "NaN", stdin: `{"request_id":"a","tool":"inspect_inputs","arguments":{"x":NaN}}`, args: base, code: "INVALID_JSON"},
		{name: "second document", stdin: inspectRequest("a") + inspectRequest("b"), args: base, code: "INVALID_JSON"},
		{name: "top level an array", stdin: `[]`, args: base, code: "INVALID_REQUEST"},
		{name: "unknown top-level key", stdin: `{"request_id":"q1","tool":"inspect_inputs","arguments":{},"x":1}`, args: base, code: "INVALID_REQUEST"},
		{name: "missing arguments", stdin: `{"request_id":"q2","tool":"inspect_inputs"}`, args: base, code: "INVALID_REQUEST"},
		{name: "invalid request_id", stdin: `{"request_id":"-q","tool":"inspect_inputs","arguments":{}}`, args: base, code: "INVALID_REQUEST"},
		{name: "tool not a string", stdin: `{"request_id":"q3","tool":7,"arguments":{}}`, args: base, code: "INVALID_REQUEST"},
		{name: "arguments not an object", stdin: `{"request_id":"q4","tool":"analyze","arguments":[]}`, args: base, code: "INVALID_REQUEST"},
		{name: "unknown tool", stdin: `{"request_id":"q5","tool":"Analyze","arguments":{}}`, args: base, code: "UNKNOWN_TOOL"},
		{name: "unknown argument", stdin: `{"request_id":"q6","tool":"inspect_inputs","arguments":{"x":1}}`, args: base, code: "INVALID_ARGUMENTS"},
		{name: "missing argument", stdin: `{"request_id":"q7","tool":"analyze","arguments":{}}`, args: base, code: "INVALID_ARGUMENTS"},
		{name: "bad digest", stdin: analyzeRequest("q8", strings.Repeat("A", 64)), args: base, code: "INVALID_ARGUMENTS"},
		{name: "wrong argument type", stdin: `{"request_id":"q9","tool":"verify_result","arguments":{"run_id":1}}`, args: base, code: "INVALID_ARGUMENTS"},
		{name: "bad run_id", stdin: verifyRequest("q10", "a/b"), args: base, code: "INVALID_ARGUMENTS"},
		// Option, context and output faults.
		{name: "no output directory", stdin: analyzeRequest("o1", digest), args: []string{"--workspace", ws, "--ledger", "calls.jsonl"}, code: "MISSING_CONTEXT"},
		{name: "output directory in data", stdin: analyzeRequest("o2", digest), args: []string{"--workspace", ws, "--output-dir", "data/runs", "--ledger", "calls.jsonl"}, code: "PATH_BOUNDARY"},
		{name: "output directory a file", stdin: inspectRequest("o3"), args: []string{"--workspace", ws, "--output-dir", "data/groups.csv", "--ledger", "calls.jsonl"}, code: "INVALID_OUTPUT"},
		{name: "output directory over a file", stdin: verifyRequest("o4", "r1"), args: []string{"--workspace", ws, "--output-dir", "afile", "--ledger", "calls.jsonl"}, code: "INVALID_OUTPUT",
			before: func(r *runner) { r.write(ws, "afile", "x") }},
		{name: "unknown option", stdin: inspectRequest("o5"), args: with("--bogus", "x"), code: "INVALID_OPTIONS"},
		{name: "stray argument", stdin: inspectRequest("o6"), args: with("stray"), code: "INVALID_OPTIONS"},
		{name: "public key as the signing key", stdin: inspectRequest("o7"), args: with("--signing-key", trusted), code: "INVALID_OPTIONS"},
		{name: "no workspace", stdin: inspectRequest("o8"), args: []string{"--output-dir", "runs"}, code: "MISSING_WORKSPACE"},
		{name: "workspace missing", stdin: inspectRequest("o9"), args: []string{"--workspace", filepath.Join(r.tmp, "none")}, code: "MISSING_WORKSPACE"},
		{name: "ledger outside the workspace", stdin: inspectRequest("o10"), args: []string{"--workspace", ws, "--ledger", filepath.Join(r.tmp, "outside.jsonl")}, code: "PATH_BOUNDARY"},
		{name: "damaged ledger", stdin: inspectRequest("o11"), args: []string{"--workspace", ws, "--ledger", "damaged.jsonl"}, code: "LEDGER_TAMPERED",
			before: func(r *runner) { r.write(ws, "damaged.jsonl", "not a record\n") }},
		// Sources and engine changed since the run.
		{name: "stale sources", stdin: verifyRequest("w1", "r1"), args: []string{"--workspace", ws, "--output-dir", "runs", "--ledger", "calls.jsonl"}, code: "STALE_SOURCES",
			before: func(r *runner) { r.write(ws, "data/groups.csv", "group_id,successes,eligible\nG1,45,50\n") }},
		{name: "engine changed", stdin: verifyRequest("w2", "r1"), args: []string{"--workspace", other, "--output-dir", "runs"}, code: "ENGINE_CHANGED",
			before: func(r *runner) { r.forgeEngine(ws, other, "r1") }},
	}
	produced := map[string]bool{}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			is := is.New(t)
			r := r.with(t)
			if s.before != nil {
				s.before(r)
			}
			if s.after != nil {
				defer s.after(r)
			}
			a := r.call(s.stdin, s.args...)
			is.Equal(a.code(), s.code) // the call answered what this step is about
			r.checkAnswer(v, a)
			produced[a.code()] = true
			if s.run != "" {
				is.Equal(r.checkRun(v, ws, "runs", s.run, a.resp), s.files)
			}
		})
	}
	for _, code := range []string{"", "REQUEST_LIMIT", "INVALID_JSON", "INVALID_REQUEST", "UNKNOWN_TOOL", "INVALID_ARGUMENTS",
		"MISSING_CONTEXT", "INVALID_OPTIONS", "MISSING_WORKSPACE", "PATH_BOUNDARY", "INVALID_OUTPUT", "OUTPUT_COLLISION",
		"STALE_CONTEXT", "OUTPUT_BUSY", "CANCELLED", "SIGNATURE_INVALID", "LEDGER_TAMPERED", "MISSING_RESULT",
		"INVALID_SAVED_RESULT", "RESULT_TAMPERED", "RECEIPT_TAMPERED", "STALE_SOURCES", "ENGINE_CHANGED"} {
		is.New(t).True(produced[code]) // every kind of answer was produced and validated
	}

	t.Run("sources", func(t *testing.T) { r.with(t).checkSources(v) })
	t.Run("ledger", func(t *testing.T) {
		kinds := r.with(t).checkLedger(v, ws, "calls.jsonl")
		for _, k := range []string{"success", "error", "cancelled", "run", "unread"} {
			is.New(t).True(kinds[k]) // the ledger holds a record of each kind
		}
	})
}

// forgeEngine copies run id of ws into other, rewritten as if another
// engine had made it: a receipt naming another engine, with checksums
// that agree, so that only the engine check can fail.
func (r *runner) forgeEngine(ws, other, id string) {
	r.t.Helper()
	src, dst := filepath.Join(ws, "runs", id), filepath.Join(other, "runs", id)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		r.t.Fatal(err)
	}
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			r.t.Fatal(err)
		}
		return data
	}
	result := read("result.json")
	receipt := regexp.MustCompile(`"engine_sha256": "[0-9a-f]{64}"`).ReplaceAll(read("receipt.json"), []byte(`"engine_sha256": "`+strings.Repeat("e", 64)+`"`))
	checksums := fmt.Sprintf("{\n  \"receipt.json\": %q,\n  \"result.json\": %q\n}\n", testutil.SHA256Hex(receipt), testutil.SHA256Hex(result))
	for name, data := range map[string][]byte{"result.json": result, "receipt.json": receipt, "checksums.json": []byte(checksums)} {
		if err := os.WriteFile(filepath.Join(dst, name), data, 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

// checkSources validates what other sources make of every document:
// sources with every price known and one customer each (a releasable
// result), sources with no eligible population (a null rate), and
// sources the program refuses.
func (r *runner) checkSources(v validators) {
	tests := []struct {
		name  string
		edits map[string]string
		code  string
	}{
		{"releasable", map[string]string{
			"data/transactions.csv": "transaction_id,customer_id,quantity,unit_price,discount\nT1,C1,2,100.00,0.10\nT2,C2,-1,0.333333,0.5\nT3,C3,999999999999,999999999999.999999,0.000001\n",
			"data/customers.csv":    "customer_id,segment\nC1,retail\nC2,retail\nC3,wholesale\n",
			"data/groups.csv":       "group_id,successes,eligible\nG1,1,1\n",
		}, ""},
		{"no eligible population", map[string]string{
			"data/transactions.csv": "transaction_id,customer_id,quantity,unit_price,discount\n",
			"data/groups.csv":       "group_id,successes,eligible\nG1,0,0\n",
			"data/customers.csv":    "customer_id,segment\nC1,retail\nC1,online\n",
		}, ""},
		{"unmatched customers", map[string]string{
			"data/customers.csv": "customer_id,segment\nC1,retail\n",
		}, ""},
		{"invalid data", map[string]string{"data/groups.csv": "group_id,successes,eligible\nG1,5,4\n"}, "INVALID_DATA"},
		{"missing input", map[string]string{"data/customers.csv": ""}, "MISSING_INPUT"},
		{"invalid definitions", map[string]string{"contracts/metric-definitions.json": "{}\n"}, "INVALID_DEFINITIONS"},
		{"input limit", map[string]string{"data/customers.csv": "customer_id,segment\n" + strings.Repeat("C1,retail\n", 10_001)}, "INPUT_LIMIT"},
	}
	for _, tt := range tests {
		r.t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r := r.with(t)
			ws := r.workspace(strings.ReplaceAll(tt.name, " ", "-"), tt.edits)
			args := []string{"--workspace", ws, "--output-dir", "out", "--ledger", "calls.jsonl"}
			a := r.call(inspectRequest("i1"), args...)
			is.Equal(a.code(), tt.code)
			r.checkAnswer(v, a)
			if tt.code != "" {
				return
			}
			result := a.resp["result"].(map[string]any)
			a = r.call(analyzeRequest("run-1", result["source_digest"].(string)), args...)
			is.Equal(a.code(), "")
			r.checkAnswer(v, a)
			r.checkRun(v, ws, "out", "run-1", a.resp)
			a = r.call(verifyRequest("v1", "run-1"), args...)
			is.Equal(a.code(), "")
			r.checkAnswer(v, a)
			is.True(r.checkLedger(v, ws, "calls.jsonl")["run"])
		})
	}
}

// checkLedger validates every record of the ledger ws/name and the
// ledger check's three reports: verified, tampered (on a copy with one
// record changed) and error. It returns the kinds of record it saw: each
// status, "run" for a commit, "unread" for an input not read whole.
func (r *runner) checkLedger(v validators, ws, name string) map[string]bool {
	r.t.Helper()
	is := is.New(r.t)
	data, err := os.ReadFile(filepath.Join(ws, name))
	is.NoErr(err)
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	is.True(len(lines) >= 3) // the calls were recorded
	kinds := map[string]bool{}
	for i, line := range lines {
		if err := v.validate("ledger-record", []byte(line)); err != nil {
			r.t.Errorf("ledger line %d %s\n%v", i+1, line, err)
		}
		r.noAbsolutePath("ledger record", []byte(line))
		var rec struct {
			Status      string
			RunID       *string `json:"run_id"`
			InputSHA256 *string `json:"input_sha256"`
		}
		is.NoErr(json.Unmarshal([]byte(line), &rec))
		kinds[rec.Status] = true
		kinds["run"] = kinds["run"] || rec.RunID != nil
		kinds["unread"] = kinds["unread"] || rec.InputSHA256 == nil
	}

	report, exit := r.ledger("--workspace", ws, "--ledger", name)
	is.Equal(exit, 0)
	is.True(bytes.HasPrefix(report, []byte(`{"ledger":"verified"`)))
	if err := v.validate("ledger-report", report); err != nil {
		r.t.Errorf("ledger report %s\n%v", report, err)
	}

	tampered := strings.Join(lines, "")
	tampered = strings.Replace(tampered, `"seq":1,`, `"seq":1 ,`, 1)
	r.write(ws, "tampered-"+name, tampered)
	report, exit = r.ledger("--workspace", ws, "--ledger", "tampered-"+name)
	is.Equal(exit, 1)
	is.True(bytes.HasPrefix(report, []byte(`{"ledger":"tampered"`)))
	if err := v.validate("ledger-report", report); err != nil {
		r.t.Errorf("ledger report %s\n%v", report, err)
	}
	r.noAbsolutePath("ledger report", report)

	for _, args := range [][]string{
		{"--workspace", ws},
		{"--workspace", ws, "--ledger", name, "--bogus"},
		{"--workspace", filepath.Join(r.tmp, "none"), "--ledger", name},
		{"--workspace", ws, "--ledger", filepath.Join(r.tmp, "outside.jsonl")},
		{"--workspace", ws, "--ledger", "no-such.jsonl"},
	} {
		report, exit := r.ledger(args...)
		is.Equal(exit, 2)
		is.True(bytes.HasPrefix(report, []byte(`{"ledger":"error"`)))
		if err := v.validate("ledger-report", report); err != nil {
			r.t.Errorf("ledger report %s\n%v", report, err)
		}
		r.noAbsolutePath("ledger report", report)
	}
	return kinds
}
