//go:build unix

package contracts_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/metricproof/metricproof/adapters/engine"
	"github.com/metricproof/metricproof/adapters/landlock"
	"github.com/metricproof/metricproof/adapters/stdio"
	"github.com/metricproof/metricproof/ports"
)

// documents runs the program once over the fixture (inspect, a signed
// analyze, verify, refusals, all recorded in a ledger, and the ledger
// check) and returns one real document of each kind, by label.
func documents(t *testing.T) map[string][]byte {
	t.Helper()
	r := newRunner(t)
	ws := r.workspace("fixture", nil)
	digest := r.digestOf(ws)
	signing, _ := r.keys("operator")
	args := []string{"--workspace", ws, "--output-dir", "runs", "--ledger", "calls.jsonl", "--signing-key", signing}
	docs := map[string][]byte{
		"inspect request": []byte(inspectRequest("i1")),
		"analyze request": []byte(analyzeRequest("r1", digest)),
		"verify request":  []byte(verifyRequest("v1", "r1")),
	}
	docs["inspect response"] = r.call(inspectRequest("i1"), args...).line
	docs["analyze response"] = r.call(analyzeRequest("r1", digest), args...).line
	docs["error response"] = r.call(analyzeRequest("r1", digest), args...).line // a collision
	docs["verify response"] = r.call(verifyRequest("v1", "r1"), args...).line
	docs["refusal response"] = r.call("{", args...).line
	docs["stale response"] = r.call(analyzeRequest("r3", strings.Repeat("0", 64)), args...).line
	busy := r.holdLock(ws, "runs")
	docs["busy response"] = r.call(analyzeRequest("r2", digest), args...).line
	busy()
	for label, file := range map[string]string{"result": "result.json", "receipt": "receipt.json", "checksums": "checksums.json", "attestation": "attestation.json"} {
		data, err := os.ReadFile(filepath.Join(ws, "runs", "r1", file))
		if err != nil {
			t.Fatal(err)
		}
		docs[label] = data
	}
	var env struct{ Payload string }
	if err := json.Unmarshal(docs["attestation"], &env); err != nil {
		t.Fatal(err)
	}
	statement, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	docs["statement"] = statement
	ledger, err := os.ReadFile(filepath.Join(ws, "calls.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(ledger, []byte("\n"))
	docs["success record"] = lines[0]
	for _, line := range lines {
		if bytes.Contains(line, []byte(`"run_id":"r1"`)) {
			docs["commit record"] = line
		}
		if bytes.Contains(line, []byte(`"status":"error"`)) {
			docs["error record"] = line
		}
	}
	var version bytes.Buffer
	// What this kernel would enforce, without confining the test's process.
	kernel := func() (ports.Confinement, error) { return landlock.Kernel(false), nil }
	if stdio.Version(nil, &version, io.Discard, engine.New(), engine.Settings(), kernel) != 0 {
		t.Fatal("tool-runner version failed")
	}
	docs["version"] = bytes.TrimSuffix(version.Bytes(), []byte("\n"))
	docs["verified report"], _ = r.ledger("--workspace", ws, "--ledger", "calls.jsonl")
	r.write(ws, "bad.jsonl", "x\n")
	docs["tampered report"], _ = r.ledger("--workspace", ws, "--ledger", "bad.jsonl")
	docs["error report"], _ = r.ledger("--workspace", ws, "--ledger", "calls.jsonl", "--bogus")
	for label, data := range docs {
		if len(data) == 0 {
			t.Fatalf("no %s", label)
		}
	}
	return docs
}

// edit is one change to a document: set the value at path (adding the key
// when it is new, or the item when the index is one past the end), or
// delete it when del is set; then the edits of more, in order.
type edit struct {
	path  []any
	value any
	del   bool
	more  []edit
}

// then returns e followed by next: two keys that must agree, changed
// together.
func (e edit) then(next edit) edit {
	e.more = append(e.more, next)
	return e
}

// apply returns a changed copy of the JSON document data.
func (e edit) apply(t *testing.T, data []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	doc = e.at(t, doc, 0)
	for _, m := range e.more {
		doc = m.at(t, doc, 0)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// at applies the edit below node, where path[i:] leads, and returns the
// changed node.
func (e edit) at(t *testing.T, node any, i int) any {
	t.Helper()
	last := i == len(e.path)-1
	switch k := e.path[i].(type) {
	case string:
		m, ok := node.(map[string]any)
		if !ok {
			t.Fatalf("path %v: not an object at %d", e.path, i)
		}
		_, exists := m[k]
		switch {
		case last && e.del && !exists:
			t.Fatalf("path %v: nothing to delete", e.path)
		case last && e.del:
			delete(m, k)
		case last:
			m[k] = e.value
		case !exists:
			t.Fatalf("path %v: no key %q", e.path, k)
		default:
			m[k] = e.at(t, m[k], i+1)
		}
		return m
	case int:
		list, ok := node.([]any)
		switch {
		case !ok || k > len(list) || k == len(list) && !last:
			t.Fatalf("path %v: no item %d", e.path, k)
		case last && e.del:
			t.Fatalf("path %v: deleting items is not supported", e.path)
		case last && k == len(list):
			return append(list, e.value) // one more item
		case last:
			list[k] = e.value
		default:
			list[k] = e.at(t, list[k], i+1)
		}
		return list
	}
	t.Fatalf("path %v: step %d is neither a key nor an index", e.path, i)
	return nil
}

func set(value any, path ...any) edit { return edit{path: path, value: value} }
func del(path ...any) edit            { return edit{path: path, del: true} }

// TestSchemasRefuseDocumentsThatBreakThem takes real documents, which
// validate, and breaks each one way at a time: an extra key, a missing
// key, a bad digest, a wrong constant, a broken correlation. Each broken
// document must fail, as written and as derived, so no schema is
// vacuous.
func TestSchemasRefuseDocumentsThatBreakThem(t *testing.T) {
	v := compileAll(t, loadSchemas(t))
	docs := documents(t)
	bad := strings.Repeat("A", 64)
	tests := []struct {
		name, doc, schema string
		edit              edit
	}{
		// request
		{"request with an extra key", "analyze request", "request", set(1, "extra")},
		{"request without arguments", "analyze request", "request", del("arguments")},
		{"request with an unknown tool", "inspect request", "request", set("Inspect_inputs", "tool")},
		{"request with an invalid request_id", "inspect request", "request", set("-x", "request_id")},
		{"analyze with an uppercase digest", "analyze request", "request", set(bad, "arguments", "expected_source_digest")},
		{"analyze with an extra argument", "analyze request", "request", set("r9", "arguments", "run_id")},
		{"inspect with an argument", "inspect request", "request", set(1, "arguments", "x")},
		{"verify with the arguments of analyze", "verify request", "request", set(map[string]any{"expected_source_digest": strings.Repeat("0", 64)}, "arguments")},
		// response
		{"response with an extra key", "inspect response", "response", set(1, "extra")},
		{"response without artifacts", "analyze response", "response", del("artifacts")},
		{"response of another protocol", "inspect response", "response", set("1.1", "protocol_version")},
		{"response with an extra verification key", "verify response", "response", set("x", "verification", "extra")},
		{"response with a changed disclaimer", "verify response", "response", set("performed", "verification", "human_review")},
		{"success with an error", "inspect response", "response", set(map[string]any{"code": "INVALID_JSON", "message": "m", "retryable": false}, "error")},
		{"success with status error", "inspect response", "response", set("error", "status")},
		{"error with a result", "error response", "response", set(map[string]any{}, "result")},
		{"error with ok", "error response", "response", set(true, "ok")},
		{"error with an unknown code", "error response", "response", set("OOPS", "error", "code")},
		{"error with an extra key", "error response", "response", set(1, "error", "extra")},
		{"error without a message", "refusal response", "response", del("error", "message")},
		{"error retryable but not busy", "error response", "response", set(true, "error", "retryable")},
		{"busy but not retryable", "busy response", "response", set(false, "error", "retryable")},
		{"stale but not retryable", "stale response", "response", set(false, "error", "retryable")},
		{"cancelled but not CANCELLED", "error response", "response", set("cancelled", "status")},
		{"inspect answering analyze's result", "inspect response", "response", set("analyze", "tool")},
		{"analyze without artifacts", "analyze response", "response", set(map[string]any{}, "artifacts")},
		{"inspect with artifacts", "inspect response", "response", set(map[string]any{"result": "runs/r1/result.json", "receipt": "runs/r1/receipt.json", "checksums": "runs/r1/checksums.json"}, "artifacts")},
		{"artifacts with an absolute path", "analyze response", "response", set("/tmp/w/runs/r1/result.json", "artifacts", "result")},
		{"artifacts with an extra key", "analyze response", "response", set("runs/r1/x.json", "artifacts", "extra")},
		{"artifacts without checksums", "analyze response", "response", del("artifacts", "checksums")},
		{"request_id not an ID", "inspect response", "response", set("a b", "request_id")},
		// inspect-result
		{"inspect result with an extra key", "inspect response", "response", set(1, "result", "extra")},
		{"inspect result with a bad source digest", "inspect response", "response", set(bad, "result", "source_digest")},
		{"inspect result with a fifth source", "inspect response", "response", set(strings.Repeat("0", 64), "result", "sources", "data/x.csv")},
		{"inspect result without row counts", "inspect response", "response", del("result", "row_counts")},
		{"inspect result with negative rows", "inspect response", "response", set(-1, "result", "row_counts", "groups")},
		{"inspect result with an unknown blocker", "inspect response", "response", set("other", "result", "release_blockers", 0, "code")},
		// analyze-result
		{"result with an extra key", "result", "analyze-result", set(1, "extra")},
		{"result with an extra conversion key", "result", "analyze-result", set(1, "conversion", "extra")},
		{"result without a release", "result", "analyze-result", del("release")},
		{"result not synthetic", "result", "analyze-result", set(false, "synthetic")},
		{"rate with 11 places", "result", "analyze-result", set("0.82727272727", "conversion", "rate")},
		{"rate as a number", "result", "analyze-result", set(0.827272727273, "conversion", "rate")},
		{"money with a trailing zero", "result", "analyze-result", set("1.50", "revenue", "known_subtotal")},
		{"money negative zero", "result", "analyze-result", set("-0", "revenue", "contributions", 4, "net_revenue")},
		{"money as a number", "result", "analyze-result", set(180, "revenue", "contributions", 0, "net_revenue")},
		{"contribution with an extra key", "result", "analyze-result", set(1, "revenue", "contributions", 0, "extra")},
		{"release eligible with blockers", "result", "analyze-result", set(true, "release", "eligible")},
		{"release approved", "result", "analyze-result", set("granted", "release", "human_approval")},
		{"join eligible with a duplicate", "result", "analyze-result", set("eligible", "customer_join", "status")},
		{"join blocked without a key", "result", "analyze-result", set([]any{}, "customer_join", "duplicate_keys")},
		{"blocker without subjects", "result", "analyze-result", set([]any{}, "release", "blockers", 0, "subjects")},
		{"blocker without a message", "result", "analyze-result", del("release", "blockers", 1, "message")},
		{"rate null with an eligible population", "result", "analyze-result", set(nil, "conversion", "rate")},
		// verify-result
		{"verify result with an extra key", "verify response", "response", set(1, "result", "extra")},
		{"verify result not verified", "verify response", "response", set("ok", "result", "integrity")},
		{"verify result with checks out of order", "verify response", "response", set([]any{"run_present", "receipt_bound", "saved_files_valid", "result_bound", "signature_valid", "sources_unchanged", "engine_unchanged", "result_recomputed"}, "result", "checks")},
		{"verify result with a check missing", "verify response", "response", set([]any{"run_present", "saved_files_valid", "receipt_bound", "result_bound", "signature_valid", "sources_unchanged", "engine_unchanged"}, "result", "checks")},
		{"verify result without a run_id", "verify response", "response", del("result", "run_id")},
		// receipt
		{"receipt with an extra key", "receipt", "receipt", set(1, "extra")},
		{"receipt without build", "receipt", "receipt", del("build")},
		{"receipt with an uppercase engine digest", "receipt", "receipt", set(bad, "engine_sha256")},
		{"receipt with a local time", "receipt", "receipt", set("2026-12-01T09:27:03+01:00", "created_at")},
		{"receipt with a trailing zero in the time", "receipt", "receipt", set("2026-12-01T09:27:03.10Z", "created_at")},
		{"receipt with an extra build key", "receipt", "receipt", set("x", "build", "extra")},
		{"receipt with a source missing", "receipt", "receipt", del("sources", "data/groups.csv")},
		{"receipt with an extra signer key", "receipt", "receipt", set("x", "signer", "extra")},
		{"receipt signer without a public key", "receipt", "receipt", del("signer", "public_key")},
		{"receipt signer with an RSA-sized key", "receipt", "receipt", set(base64.StdEncoding.EncodeToString(make([]byte, 294)), "signer", "public_key")},
		{"receipt of another definition", "receipt", "receipt", set("synthetic-v2", "definition_id")},
		// checksums
		{"checksums with an extra key", "checksums", "checksums", set(strings.Repeat("0", 64), "attestation.json")},
		{"checksums without result.json", "checksums", "checksums", del("result.json")},
		{"checksums with a short digest", "checksums", "checksums", set("abc", "receipt.json")},
		// statement
		{"statement with an extra key", "statement", "statement", set(1, "extra")},
		{"statement of another type", "statement", "statement", set("https://in-toto.io/Statement/v0.1", "_type")},
		{"statement with a third subject", "statement", "statement", set(map[string]any{"name": "checksums.json", "digest": map[string]any{"sha256": strings.Repeat("0", 64)}}, "subject", 2)},
		{"statement subject with another digest", "statement", "statement", set(map[string]any{"sha512": strings.Repeat("0", 128)}, "subject", 0, "digest")},
		{"statement subject with an extra key", "statement", "statement", set(1, "subject", 1, "extra")},
		{"statement whose predicate is not a receipt", "statement", "statement", set(1, "predicate", "extra")},
		{"statement without a predicate type", "statement", "statement", del("predicateType")},
		{"statement whose predicate names no signer", "statement", "statement", del("predicate", "signer")},
		// attestation
		{"attestation with an extra key", "attestation", "attestation", set(1, "extra")},
		{"attestation with a bad payload", "attestation", "attestation", set("not base64!", "payload")},
		{"attestation of another type", "attestation", "attestation", set("application/json", "payloadType")},
		{"attestation with a second signature", "attestation", "attestation", set(map[string]any{"keyid": strings.Repeat("0", 64), "sig": strings.Repeat("A", 85) + "g=="}, "signatures", 1)},
		{"signature with an extra key", "attestation", "attestation", set(1, "signatures", 0, "extra")},
		{"signature with a short sig", "attestation", "attestation", set("AAAA", "signatures", 0, "sig")},
		// ledger-record
		{"record with an extra key", "success record", "ledger-record", set(1, "extra")},
		{"record without an engine", "success record", "ledger-record", del("engine_sha256")},
		{"record with seq 0", "success record", "ledger-record", set(0, "seq")},
		{"record with a bad prev", "success record", "ledger-record", set(bad, "prev")},
		{"record of another transport", "success record", "ledger-record", set("http", "transport")},
		{"record of a success with a code", "success record", "ledger-record", set("INVALID_JSON", "code")},
		{"record of an error without a code", "error record", "ledger-record", set(nil, "code")},
		{"record of a run without its result", "commit record", "ledger-record", set(nil, "result_sha256")},
		{"record of a result without its run", "commit record", "ledger-record", set(nil, "run_id")},
		{"record of a run that failed", "commit record", "ledger-record", set("error", "status")},
		{"record of a success without its input", "success record", "ledger-record", set(nil, "input_sha256")},
		// ledger-report
		{"verified report with an extra key", "verified report", "ledger-report", set(1, "extra")},
		{"verified report without a head", "verified report", "ledger-report", del("head")},
		{"tampered report with another code", "tampered report", "ledger-report", set("INVALID_JSON", "code")},
		{"tampered report at line 0", "tampered report", "ledger-report", set(0, "line")},
		{"error report with a line", "error report", "ledger-report", set(1, "line")},
		{"error report with an unknown code", "error report", "ledger-report", set("OOPS", "code")},
		{"report of another kind", "verified report", "ledger-report", set("unknown", "ledger")},
		// version
		{"version with an extra key", "version", "version", set(1, "extra")},
		{"version without settings", "version", "version", del("settings")},
		{"version without the build facts", "version", "version", del("vcs_modified")},
		{"version with an uppercase engine digest", "version", "version", set(bad, "engine_sha256")},
		{"version with a build block instead of the facts", "version", "version", set(map[string]any{}, "build")},
		{"version with a setting that is not a string", "version", "version", set(true, "settings", "-trimpath")},
		{"version with another setting that is not a string", "version", "version", set(1, "settings", "GOAMD64")},
		{"version without rebuildable", "version", "version", del("rebuildable")},
		{"version without its rebuild blockers", "version", "version", del("rebuild_blockers")},
		{"version rebuildable with a blocker", "version", "version", set([]any{"no_vcs_revision"}, "rebuild_blockers").then(set(true, "rebuildable"))},
		{"version not rebuildable without a blocker", "version", "version", set([]any{}, "rebuild_blockers").then(set(false, "rebuildable"))},
		{"version with an unknown rebuild blocker", "version", "version", set([]any{"no_luck"}, "rebuild_blockers")},
		{"version with a rebuild blocker twice", "version", "version", set([]any{"no_trimpath", "no_trimpath"}, "rebuild_blockers")},
		{"version with rebuildable as a string", "version", "version", set("false", "rebuildable")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			base, ok := docs[tt.doc]
			is.True(ok) // a real document to start from
			is.NoErr(v.validate(tt.schema, base))
			broken := tt.edit.apply(t, base)
			is.True(v.full[tt.schema].Validate(mustParse(t, broken)) != nil)    // the schema as written refuses it
			is.True(v.derived[tt.schema].Validate(mustParse(t, broken)) != nil) // and as derived
		})
	}
}

// mustParse reads a JSON document as the validator wants it.
func mustParse(t *testing.T, data []byte) any {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}
