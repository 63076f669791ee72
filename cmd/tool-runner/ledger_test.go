//go:build unix

package main

// Real-process tests of the call ledger (protocol §11): one record per call,
// its place under the write boundary, the chain under concurrent
// processes, every kind of tampering, kills, and the "tool-runner ledger"
// command. The chain is always checked with the test's own SHA256 of each
// line, never with the program's code.
//
// The same chain under 8 concurrent calls inside one MCP server is
// TestEightConcurrentMCPCallsMakeAnUnbrokenChain, beside the MCP tests.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/internal/testutil"
)

// zeros is the prev of the first record and the head of an empty ledger.
var zeros = strings.Repeat("0", 64)

// recordKeys are a record's keys in their order.
func recordKeys() []string {
	return []string{"seq", "prev", "time", "transport", "request_id", "tool", "input_sha256",
		"status", "code", "run_id", "result_sha256", "response_sha256", "engine_sha256"}
}

// orderedJSON decodes one JSON object, keeping its keys' order.
func orderedJSON(t *testing.T, text string) (keys []string, values map[string]any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %q", text)
	}
	values = map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("not a JSON object: %q: %v", text, err)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("not a JSON object: %q: %v", text, err)
		}
		keys = append(keys, tok.(string))
		values[tok.(string)] = v
	}
	return keys, values
}

// ledgerLines reads the ledger at path as its lines, each with its
// newline; nil when it does not exist.
func ledgerLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return splitLines(string(data))
}

// splitLines splits text into lines that keep their newline.
func splitLines(text string) []string {
	var lines []string
	for text != "" {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			return append(lines, text)
		}
		lines, text = append(lines, text[:i+1]), text[i+1:]
	}
	return lines
}

// record is one ledger line decoded.
type record map[string]any

// decodeRecord decodes a ledger line, checking that it is one line of
// compact JSON with exactly the keys of a record, in their order.
func decodeRecord(t *testing.T, line string) record {
	t.Helper()
	if !strings.HasSuffix(line, "\n") || strings.Count(line, "\n") != 1 {
		t.Fatalf("a record is one line ending in a newline: %q", line)
	}
	keys, values := orderedJSON(t, line)
	if !slices.Equal(keys, recordKeys()) {
		t.Fatalf("record keys %v, want %v", keys, recordKeys())
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(line[:len(line)-1])); err != nil || compact.String() != line[:len(line)-1] {
		t.Fatalf("record is not compact JSON: %q", line)
	}
	return record(values)
}

// seq is the record's seq as an integer.
func (r record) seq(t *testing.T) int64 {
	t.Helper()
	n, err := r["seq"].(json.Number).Int64()
	if err != nil {
		t.Fatalf("seq %v is not an integer", r["seq"])
	}
	return n
}

// checkChain checks lines as a whole ledger, with the test's own hashes:
// seq 1, 2, … and each prev the SHA256 of the line before it, newline
// included. It returns the records and the head.
func checkChain(t *testing.T, lines []string) ([]record, string) {
	t.Helper()
	head := zeros
	var recs []record
	for i, line := range lines {
		r := decodeRecord(t, line)
		if got := r.seq(t); got != int64(i+1) {
			t.Errorf("line %d carries seq %d", i+1, got)
		}
		if r["prev"] != head {
			t.Errorf("line %d: prev %v, the line before hashes to %s", i+1, r["prev"], head)
		}
		recs = append(recs, r)
		head = testutil.SHA256Hex([]byte(line))
	}
	return recs, head
}

// engineSHA256 is the SHA256 of the installed runner's bytes.
func engineSHA256(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(runnerPath(t))
	if err != nil {
		t.Fatal(err)
	}
	return testutil.SHA256Hex(data)
}

// responseSHA256 is the SHA256 of the response line without its newline.
func responseSHA256(o outcome) string {
	return testutil.SHA256Hex([]byte(strings.TrimSuffix(o.raw, "\n")))
}

// checkRecordOf checks the fields every record takes from its call: the
// transport, request_id and tool as in the response, the input's SHA256
// (nil: null), status and code as in the response, the response's SHA256
// and the engine's.
func checkRecordOf(t *testing.T, r record, o outcome, input *string) {
	t.Helper()
	is := is.New(t)
	tm, err := time.Parse(time.RFC3339Nano, r["time"].(string))
	is.NoErr(err)                                          // time is RFC 3339
	is.True(strings.HasSuffix(r["time"].(string), "Z"))    // in UTC
	is.Equal(tm.UTC().Format(time.RFC3339Nano), r["time"]) // in its canonical form
	is.Equal(r["transport"], "stdio")                      // transport
	is.Equal(r["request_id"], o.resp["request_id"])        // request_id as in the response
	is.Equal(r["tool"], o.resp["tool"])                    // tool as in the response
	is.Equal(r["status"], o.resp["status"])                // status as in the response
	is.Equal(r["response_sha256"], responseSHA256(o))      // the response line's own hash
	is.Equal(r["engine_sha256"], engineSHA256(t))          // the running binary's hash
	if input == nil {
		is.Equal(r["input_sha256"], nil) // input not all read
	} else {
		is.Equal(r["input_sha256"], testutil.SHA256Hex([]byte(*input))) // the stdin bytes' hash
	}
	if c := o.code(); c == "" {
		is.Equal(r["code"], nil)
	} else {
		is.Equal(r["code"], c)
	}
}

// answerWithoutInput runs the runner with its standard input left open
// and never written: it answers only if it decides without reading it.
func answerWithoutInput(t *testing.T, dir string, args ...string) outcome {
	t.Helper()
	p := startRunner(t, dir, args...)
	guard := time.AfterFunc(time.Minute, func() { _ = p.cmd.Process.Kill() }) // a hang guard only
	err := p.cmd.Wait()
	if !guard.Stop() {
		t.Fatalf("the runner waited for standard input: %s", p.stdout.String())
	}
	_ = p.stdin.Close()
	return answerOf(t, err, p.stdout.String(), p.stderr.String())
}

// ledgerCommand runs "tool-runner ledger" with args in ws, and checks its
// line: verified (exit 0), tampered (exit 1) or error (exit 2), keys in
// protocol §11's order.
func ledgerCommand(t *testing.T, ws string, args ...string) (values map[string]any, exit int) {
	t.Helper()
	o := call(t, ws, "", append([]string{"ledger"}, args...)...)
	keys, values := orderedJSON(t, o.raw)
	want := map[string][]string{
		"verified": {"ledger", "records", "head"},
		"tampered": {"ledger", "line", "code", "message"},
		"error":    {"ledger", "code", "message"},
	}[fmt.Sprint(values["ledger"])]
	wantExit := map[string]int{"verified": 0, "tampered": 1, "error": 2}[fmt.Sprint(values["ledger"])]
	if want == nil || !slices.Equal(keys, want) || o.exit != wantExit {
		t.Fatalf("tool-runner ledger printed %q, exit %d", o.raw, o.exit)
	}
	return values, o.exit
}

// verifiedLedger runs "tool-runner ledger" and returns records and head,
// failing unless it answered verified.
func verifiedLedger(t *testing.T, ws, ledger string) (records int64, head string) {
	t.Helper()
	v, _ := ledgerCommand(t, ws, "--workspace", ws, "--ledger", ledger)
	if v["ledger"] != "verified" {
		t.Fatalf("the ledger does not verify: %v", v)
	}
	n, _ := v["records"].(json.Number).Int64()
	return n, v["head"].(string)
}

// Every kind of call, on one workspace, one after another: each leaves
// exactly one new line in the ledger, chained to the one before, whose
// fields are what the call saw and answered. Successes of the three tools,
// every family of refusal (request checks, context, output directory,
// sources, digest, lock, collision, missing run) and a cancellation.
func TestEveryKindOfCallIsRecordedOnce(t *testing.T) {
	ws := fixture(t)
	digest := digestOf(t, ws)
	overLimit := inspectRequest("big") + strings.Repeat(" ", 70_000)
	tests := []struct {
		name  string
		setup func(t *testing.T) (args []string) // extra options; cleans up after itself
		out   string                             // --output-dir: "runs" when empty, none when "-"
		stdin string
		id    any // the response's (and so the record's) request_id
		tool  any
		code  string // "" for success
		exit  int
		run   string // the run the call commits
	}{
		{name: "inspect succeeds", stdin: inspectRequest("i1"), id: "i1", tool: "inspect_inputs"},
		{name: "analyze commits", stdin: analyzeRequest("r1", digest), id: "r1", tool: "analyze", run: "r1"},
		{name: "verify succeeds", stdin: verifyRequest("v1", "r1"), id: "v1", tool: "verify_result"},
		{name: "empty input", stdin: "", id: nil, tool: nil, code: "INVALID_JSON", exit: 1},
		{name: "malformed JSON", stdin: `{"request_id":"j1",`, id: nil, tool: nil, code: "INVALID_JSON", exit: 1},
		{name: "a request without arguments", stdin: `{"request_id":"q1","tool":"inspect_inputs"}`, id: "q1", tool: nil, code: "INVALID_REQUEST", exit: 1},
		{name: "an unknown tool", stdin: `{"request_id":"u1","tool":"delete_everything","arguments":{}}`, id: "u1", tool: nil, code: "UNKNOWN_TOOL", exit: 1},
		{name: "a bad digest", stdin: `{"request_id":"a1","tool":"analyze","arguments":{"expected_source_digest":"xyz"}}`, id: "a1", tool: "analyze", code: "INVALID_ARGUMENTS", exit: 1},
		{name: "a request over the limit", stdin: overLimit, id: nil, tool: nil, code: "REQUEST_LIMIT", exit: 1},
		{name: "verify without an output directory", out: "-", stdin: verifyRequest("m1", "r1"), id: "m1", tool: "verify_result", code: "MISSING_CONTEXT", exit: 1},
		{name: "an output directory inside data", out: "data/runs", stdin: analyzeRequest("p1", digest), id: "p1", tool: "analyze", code: "PATH_BOUNDARY", exit: 1},
		{name: "an output directory that is a file", setup: func(t *testing.T) []string {
			writeFile(t, filepath.Join(ws, "report.txt"), []byte("a file\n"))
			t.Cleanup(func() { _ = os.Remove(filepath.Join(ws, "report.txt")) })
			return nil
		}, out: "report.txt", stdin: analyzeRequest("o1", digest), id: "o1", tool: "analyze", code: "INVALID_OUTPUT", exit: 1},
		{name: "a stale digest", stdin: analyzeRequest("s1", zeros), id: "s1", tool: "analyze", code: "STALE_CONTEXT", exit: 1},
		{name: "a missing source", setup: func(t *testing.T) []string {
			groups := filepath.Join(ws, "data", "groups.csv")
			if err := os.Rename(groups, groups+".away"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Rename(groups+".away", groups) })
			return nil
		}, stdin: inspectRequest("f1"), id: "f1", tool: "inspect_inputs", code: "MISSING_INPUT", exit: 1},
		{name: "a cancel marker", setup: func(t *testing.T) []string {
			writeFile(t, filepath.Join(ws, "stop"), nil)
			t.Cleanup(func() { _ = os.Remove(filepath.Join(ws, "stop")) })
			return []string{"--cancel-file", "stop"}
		}, stdin: analyzeRequest("c1", digest), id: "c1", tool: "analyze", code: "CANCELLED", exit: 3},
		{name: "a busy writer lock", setup: func(t *testing.T) []string {
			holder := startLockHolder(t, filepath.Join(ws, "runs", ".writer.lock"))
			t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
			return nil
		}, stdin: analyzeRequest("b1", digest), id: "b1", tool: "analyze", code: "OUTPUT_BUSY", exit: 1},
		{name: "a collision", stdin: analyzeRequest("r1", digest), id: "r1", tool: "analyze", code: "OUTPUT_COLLISION", exit: 1},
		{name: "a missing run", stdin: verifyRequest("v2", "nope"), id: "v2", tool: "verify_result", code: "MISSING_RESULT", exit: 1},
		{name: "analyze commits again", stdin: analyzeRequest("r2", digest), id: "r2", tool: "analyze", run: "r2"},
	}
	ledger := filepath.Join(ws, "ledger.jsonl")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			args := []string{"--workspace", ws, "--ledger", "ledger.jsonl"}
			switch tt.out {
			case "":
				args = append(args, "--output-dir", "runs")
			case "-":
			default:
				args = append(args, "--output-dir", tt.out)
			}
			if tt.setup != nil {
				args = append(args, tt.setup(t)...)
			}
			before := ledgerLines(t, ledger)
			o := call(t, ws, tt.stdin, args...)
			is.Equal(o.code(), tt.code)
			is.Equal(o.exit, tt.exit)
			is.Equal(o.resp["request_id"], tt.id)
			is.Equal(o.resp["tool"], tt.tool)

			after := ledgerLines(t, ledger)
			is.Equal(len(after), len(before)+1)                // exactly one new record
			is.True(slices.Equal(after[:len(before)], before)) // and nothing else changed
			recs, _ := checkChain(t, after)                    // chained to the one before
			r := recs[len(recs)-1]
			is.Equal(r.seq(t), int64(len(after)))
			input := &tt.stdin
			if tt.code == "REQUEST_LIMIT" {
				input = nil
			}
			checkRecordOf(t, r, o, input)
			if tt.run == "" {
				is.Equal(r["run_id"], nil)
				is.Equal(r["result_sha256"], nil)
				return
			}
			is.Equal(r["run_id"], tt.run)
			result, err := os.ReadFile(filepath.Join(ws, "runs", tt.run, "result.json"))
			is.NoErr(err)
			is.Equal(r["result_sha256"], testutil.SHA256Hex(result)) // the committed result.json's hash
		})
	}
	records, head := verifiedLedger(t, ws, "ledger.jsonl")
	lines := ledgerLines(t, ledger)
	is.New(t).Equal(records, int64(len(tests)))
	is.New(t).Equal(head, testutil.SHA256Hex([]byte(lines[len(lines)-1])))
}

// The answers the ledger cannot hold are not recorded: an option fault, a
// missing workspace, a ledger outside its boundary or not a file, and a
// damaged ledger. Each is decided before standard input is read (the
// runner answers with its input still open), carries a null request_id,
// and changes nothing in the workspace, the ledger included.
func TestAnswersTheLedgerCannotHoldLeaveEverythingUnchanged(t *testing.T) {
	tests := []struct {
		name string
		args func(ws string) []string
		code string
	}{
		{"an unknown option", func(ws string) []string { return []string{"--workspace", ws, "--ledger", "ledger.jsonl", "--bogus"} }, "INVALID_OPTIONS"},
		{"a signing key that does not exist", func(ws string) []string {
			return []string{"--workspace", ws, "--ledger", "ledger.jsonl", "--signing-key", "no-key.pem"}
		}, "INVALID_OPTIONS"},
		{"a missing workspace", func(ws string) []string {
			return []string{"--workspace", filepath.Join(ws, "nothing"), "--ledger", filepath.Join(ws, "ledger.jsonl")}
		}, "MISSING_WORKSPACE"},
		{"a ledger inside data", func(ws string) []string { return []string{"--workspace", ws, "--ledger", "data/ledger.jsonl"} }, "PATH_BOUNDARY"},
		{"a ledger outside the workspace", func(ws string) []string { return []string{"--workspace", ws, "--ledger", "../ledger.jsonl"} }, "PATH_BOUNDARY"},
		{"a ledger whose directory is missing", func(ws string) []string { return []string{"--workspace", ws, "--ledger", "nothing/ledger.jsonl"} }, "INVALID_OUTPUT"},
		{"a ledger that is a directory", func(ws string) []string { return []string{"--workspace", ws, "--ledger", "data/../audit"} }, "INVALID_OUTPUT"},
		{"a damaged ledger", func(ws string) []string { return []string{"--workspace", ws, "--ledger", "damaged.jsonl"} }, "LEDGER_TAMPERED"},
	}
	ws := fixture(t)
	analyze(t, ws, "runs", "r0")
	mustMkdir(t, filepath.Join(ws, "audit"))
	args := []string{"--workspace", ws, "--output-dir", "runs", "--ledger", "ledger.jsonl"}
	call(t, ws, inspectRequest("i1"), args...)
	good := ledgerLines(t, filepath.Join(ws, "ledger.jsonl"))
	writeFile(t, filepath.Join(ws, "damaged.jsonl"), []byte(good[0]+"garbage\n"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			before := snapshotTree(t, ws)
			o := answerWithoutInput(t, ws, append(tt.args(ws), "--output-dir", "runs")...)
			is.Equal(o.code(), tt.code)
			is.Equal(o.exit, 1)
			is.Equal(o.resp["request_id"], nil) // decided before standard input
			is.Equal(o.resp["tool"], nil)
			sameTree(t, before, snapshotTree(t, ws)) // nothing written, no record
		})
	}
}

// The ledger's place (protocol §11 and the write boundary of §6): inside the
// workspace after symlinks, clear of data, contracts, .git and the source
// folders, not the output directory nor below it, not inside a run, not
// the writer's lock file, in a directory that exists, and a regular file
// if it exists. Each refusal comes before standard input is read and
// writes nothing, inside the workspace or outside it.
func TestTheLedgerMustLieWithinItsBoundary(t *testing.T) {
	tests := []ledgerPlace{
		{"above the workspace", fixedLedger("../ledger.jsonl"), "PATH_BOUNDARY"},
		{"an absolute path outside", func(_ *testing.T, _, outside string) (string, string) {
			return filepath.Join(outside, "ledger.jsonl"), "runs"
		}, "PATH_BOUNDARY"},
		{"through a symlink leading outside", func(t *testing.T, ws, outside string) (string, string) {
			mustSymlink(t, outside, filepath.Join(ws, "away"))
			return "away/ledger.jsonl", "runs"
		}, "PATH_BOUNDARY"},
		{"a symlink to a file outside", func(t *testing.T, ws, outside string) (string, string) {
			writeFile(t, filepath.Join(outside, "ledger.jsonl"), nil)
			mustSymlink(t, filepath.Join(outside, "ledger.jsonl"), filepath.Join(ws, "ledger.jsonl"))
			return "ledger.jsonl", "runs"
		}, "PATH_BOUNDARY"},
		{"inside data", fixedLedger("data/ledger.jsonl"), "PATH_BOUNDARY"},
		{"inside contracts", fixedLedger("contracts/ledger.jsonl"), "PATH_BOUNDARY"},
		{"inside .git", func(t *testing.T, ws, _ string) (string, string) {
			mustMkdir(t, filepath.Join(ws, ".git"))
			return ".git/ledger.jsonl", "runs"
		}, "PATH_BOUNDARY"},
		{"inside cmd", fixedLedger("cmd/ledger.jsonl"), "PATH_BOUNDARY"},
		{"inside src", fixedLedger("src/ledger.jsonl"), "PATH_BOUNDARY"},
		{"data itself", fixedLedger("data"), "PATH_BOUNDARY"},
		{"through a symlink into data", func(t *testing.T, ws, _ string) (string, string) {
			mustSymlink(t, "data", filepath.Join(ws, "logs"))
			return "logs/ledger.jsonl", "runs"
		}, "PATH_BOUNDARY"},
		{"the workspace itself", fixedLedger("."), "PATH_BOUNDARY"},
		{"the output directory itself", fixedLedger("runs"), "PATH_BOUNDARY"},
		{"below the output directory", func(t *testing.T, ws, _ string) (string, string) {
			mustMkdir(t, filepath.Join(ws, "runs", "audit"))
			return "runs/audit/ledger.jsonl", "runs"
		}, "PATH_BOUNDARY"},
		{"below the output directory given through a symlink", func(t *testing.T, ws, _ string) (string, string) {
			mustMkdir(t, filepath.Join(ws, "runs", "audit"))
			mustSymlink(t, "runs", filepath.Join(ws, "out"))
			return "runs/audit/ledger.jsonl", "out"
		}, "PATH_BOUNDARY"},
		{"inside a run", func(t *testing.T, ws, _ string) (string, string) {
			return "runs/r0/ledger.jsonl", "other"
		}, "PATH_BOUNDARY"},
		{"the output directory's lock file", func(t *testing.T, ws, _ string) (string, string) {
			return "runs/.writer.lock", "runs"
		}, "PATH_BOUNDARY"},
		{"the output directory's lock file, the directory not made yet", func(t *testing.T, ws, _ string) (string, string) {
			return "new-runs/.writer.lock", "new-runs"
		}, "PATH_BOUNDARY"},
		{"another directory's writer lock file", func(t *testing.T, ws, _ string) (string, string) {
			return "runs/.writer.lock", "other"
		}, "PATH_BOUNDARY"},
		{"in a directory that does not exist", fixedLedger("audit/ledger.jsonl"), "INVALID_OUTPUT"},
		{"under a regular file", func(t *testing.T, ws, _ string) (string, string) {
			writeFile(t, filepath.Join(ws, "report.txt"), []byte("a file\n"))
			return "report.txt/ledger.jsonl", "runs"
		}, "INVALID_OUTPUT"},
		{"a directory", func(t *testing.T, ws, _ string) (string, string) {
			mustMkdir(t, filepath.Join(ws, "audit"))
			return "audit", "runs"
		}, "INVALID_OUTPUT"},
		{"a FIFO", func(t *testing.T, ws, _ string) (string, string) {
			is.New(t).NoErr(unix.Mkfifo(filepath.Join(ws, "ledger.jsonl"), 0o644))
			return "ledger.jsonl", "runs"
		}, "INVALID_OUTPUT"},
		{"a symlink to a directory", func(t *testing.T, ws, _ string) (string, string) {
			mustMkdir(t, filepath.Join(ws, "audit"))
			mustSymlink(t, "audit", filepath.Join(ws, "ledger.jsonl"))
			return "ledger.jsonl", "runs"
		}, "INVALID_OUTPUT"},
		{"a dangling symlink into a missing directory", func(t *testing.T, ws, _ string) (string, string) {
			mustSymlink(t, "nowhere/ledger.jsonl", filepath.Join(ws, "ledger.jsonl"))
			return "ledger.jsonl", "runs"
		}, "INVALID_OUTPUT"},
	}
	// A run file's name directly in the output directory (issue 15's
	// third repro: the first call created the ledger, and from then on its
	// directory looked like a run's, so every call was refused), whether
	// the output directory exists yet or not.
	for _, name := range []string{"result.json", "receipt.json", "checksums.json", "attestation.json"} {
		tests = append(tests,
			ledgerPlace{"named " + name + " in the output directory", fixedLedger("runs/" + name), "PATH_BOUNDARY"},
			ledgerPlace{"named " + name + " in an output directory not made yet", func(*testing.T, string, string) (string, string) {
				return "runsR/" + name, "runsR"
			}, "PATH_BOUNDARY"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ws := fixture(t)
			outside := t.TempDir()
			analyze(t, ws, "runs", "r0")
			ledger, out := tt.setup(t, ws, outside)
			beforeWS, beforeOutside := snapshotTree(t, ws), snapshotTree(t, outside)

			o := answerWithoutInput(t, ws, "--workspace", ws, "--output-dir", out, "--ledger", ledger)
			is.Equal(o.code(), tt.code)
			is.Equal(o.exit, 1)
			is.Equal(o.resp["request_id"], nil) // decided before standard input
			is.True(!strings.Contains(o.message(), ws))
			sameTree(t, beforeWS, snapshotTree(t, ws))
			sameTree(t, beforeOutside, snapshotTree(t, outside))
		})
	}
}

// ledgerPlace is a place the ledger may not take, and the code of the
// refusal.
type ledgerPlace struct {
	name  string
	setup func(t *testing.T, ws, outside string) (ledger, out string)
	code  string
}

// fixedLedger is a ledger-place case that needs no setup, with --output-dir
// runs.
func fixedLedger(ledger string) func(*testing.T, string, string) (string, string) {
	return func(*testing.T, string, string) (string, string) { return ledger, "runs" }
}

// Places a ledger may take: beside the output directory, in it, in its
// parent, anywhere inside the workspace without one, given absolute or
// through symlinks that stay inside. The record lands in the file the path
// resolves to, and the output directory's runs still verify.
func TestTheLedgerMayLieAnywhereElseInTheWorkspace(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, ws string) (args []string, file string) // file: where the records land
	}{
		{"at the top", func(*testing.T, string) ([]string, string) {
			return []string{"--output-dir", "runs", "--ledger", "ledger.jsonl"}, "ledger.jsonl"
		}},
		{"in the output directory itself", func(t *testing.T, ws string) ([]string, string) {
			mustMkdir(t, filepath.Join(ws, "runs"))
			return []string{"--output-dir", "runs", "--ledger", "runs/ledger.jsonl"}, "runs/ledger.jsonl"
		}},
		{"in the output directory's parent", func(t *testing.T, ws string) ([]string, string) {
			mustMkdir(t, filepath.Join(ws, "runs"))
			return []string{"--output-dir", "runs/demo", "--ledger", "runs/ledger.jsonl"}, "runs/ledger.jsonl"
		}},
		{"in a folder of its own", func(t *testing.T, ws string) ([]string, string) {
			mustMkdir(t, filepath.Join(ws, "audit"))
			return []string{"--output-dir", "runs", "--ledger", "audit/calls.jsonl"}, "audit/calls.jsonl"
		}},
		{"as an absolute path", func(_ *testing.T, ws string) ([]string, string) {
			return []string{"--output-dir", "runs", "--ledger", filepath.Join(ws, "ledger.jsonl")}, "ledger.jsonl"
		}},
		{"through a symlinked folder", func(t *testing.T, ws string) ([]string, string) {
			mustMkdir(t, filepath.Join(ws, "audit"))
			mustSymlink(t, "audit", filepath.Join(ws, "logs"))
			return []string{"--output-dir", "runs", "--ledger", "logs/calls.jsonl"}, "audit/calls.jsonl"
		}},
		{"as a symlink to a file", func(t *testing.T, ws string) ([]string, string) {
			writeFile(t, filepath.Join(ws, "audit", "calls.jsonl"), nil)
			mustSymlink(t, "audit/calls.jsonl", filepath.Join(ws, "ledger.jsonl"))
			return []string{"--output-dir", "runs", "--ledger", "ledger.jsonl"}, "audit/calls.jsonl"
		}},
		{"without an output directory", func(*testing.T, string) ([]string, string) {
			return []string{"--ledger", "ledger.jsonl"}, "ledger.jsonl"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ws := fixture(t)
			digest := digestOf(t, ws)
			extra, file := tt.setup(t, ws)
			args := append([]string{"--workspace", ws}, extra...)
			req := analyzeRequest("r1", digest)
			if !slices.Contains(extra, "--output-dir") {
				req = inspectRequest("i1")
			}
			o := call(t, ws, req, args...)
			is.Equal(o.exit, 0)
			lines := ledgerLines(t, filepath.Join(ws, file))
			is.Equal(len(lines), 1) // the record is where the path leads
			recs, _ := checkChain(t, lines)
			checkRecordOf(t, recs[0], o, &req)
			if slices.Contains(extra, "--output-dir") {
				v := call(t, ws, verifyRequest("v1", "r1"), args...)
				is.Equal(v.exit, 0) // a ledger beside the runs is not taken for one
				is.Equal(len(ledgerLines(t, filepath.Join(ws, file))), 2)
			}
		})
	}
}

// Eight processes started together, each with one call (inspections and
// analyzes of distinct runs), append to one ledger: eight records, seq
// 1..8 without a gap, each prev the test's own SHA256 of the line before,
// and each call's response recorded exactly once.
func TestConcurrentCallsFromEightProcessesMakeAnUnbrokenChain(t *testing.T) {
	const n = 8
	is := is.New(t)
	ws := fixture(t)
	digest := digestOf(t, ws)
	procs := make([]*runnerProc, n)
	reqs := make([]string, n)
	for i := range procs {
		reqs[i] = inspectRequest(fmt.Sprintf("i%d", i))
		if i%2 == 1 {
			reqs[i] = analyzeRequest(fmt.Sprintf("r%d", i), digest)
		}
		procs[i] = startRunner(t, ws, "--workspace", ws, "--output-dir", "runs", "--ledger", "ledger.jsonl")
	}
	for i, p := range procs { // everyone is waiting for input: release them together
		p.send(t, reqs[i])
	}
	responses := map[string]string{} // response SHA256 → input SHA256
	for i, p := range procs {
		o := p.finish(t)
		is.True(o.code() == "" || o.code() == "OUTPUT_BUSY") // success, or another analyze held the lock
		responses[responseSHA256(o)] = testutil.SHA256Hex([]byte(reqs[i]))
	}
	lines := ledgerLines(t, filepath.Join(ws, "ledger.jsonl"))
	is.Equal(len(lines), n)
	recs, head := checkChain(t, lines)
	for _, r := range recs {
		input, ok := responses[r["response_sha256"].(string)]
		is.True(ok)                        // a record of one of the calls
		is.Equal(r["input_sha256"], input) // of that call's input
		delete(responses, r["response_sha256"].(string))
	}
	is.Equal(len(responses), 0) // every call recorded, once
	records, gotHead := verifiedLedger(t, ws, "ledger.jsonl")
	is.Equal(records, int64(n))
	is.Equal(gotHead, head)
}

// tamperCase is one damage of a five-record ledger.
type tamperCase struct {
	name   string
	damage func(t *testing.T, lines []string) string // the damaged ledger
	// line is the first bad line "tool-runner ledger" names; 0 when the
	// damage leaves a well-formed chain (only a head kept elsewhere shows
	// it).
	line int
	// refused: the last line is damaged, so the next call answers
	// LEDGER_TAMPERED and runs nothing.
	refused bool
}

// replaceIn replaces the one occurrence of old in line with new.
func replaceIn(t *testing.T, line, old, new string) string {
	t.Helper()
	if strings.Count(line, old) != 1 {
		t.Fatalf("%q occurs %d times in %q", old, strings.Count(line, old), line)
	}
	return strings.Replace(line, old, new, 1)
}

// field returns the raw `"key":value` text of a record line.
func field(t *testing.T, line, key string) string {
	t.Helper()
	r := decodeRecord(t, line)
	v, err := json.Marshal(r[key])
	if err != nil {
		t.Fatal(err)
	}
	return `"` + key + `":` + string(v)
}

// forgedAfter is a well-formed record that chains onto line: seq one more,
// prev its SHA256, the rest copied from it.
func forgedAfter(t *testing.T, line string) string {
	t.Helper()
	r := decodeRecord(t, line)
	next := replaceIn(t, line, field(t, line, "seq"), fmt.Sprintf(`"seq":%d`, r.seq(t)+1))
	return replaceIn(t, next, field(t, line, "prev"), `"prev":"`+testutil.SHA256Hex([]byte(line))+`"`)
}

// otherTime is line with its time changed to another valid time.
func otherTime(t *testing.T, line string) string {
	t.Helper()
	return replaceIn(t, line, field(t, line, "time"), `"time":"2001-02-03T04:05:06.789Z"`)
}

func tamperCases() []tamperCase {
	join := func(lines ...string) string { return strings.Join(lines, "") }
	without := func(lines []string, i int) []string { return slices.Delete(slices.Clone(lines), i, i+1) }
	with := func(lines []string, i int, line string) []string { return slices.Insert(slices.Clone(lines), i, line) }
	swapped := func(lines []string, i, j int) []string {
		l := slices.Clone(lines)
		l[i], l[j] = l[j], l[i]
		return l
	}
	set := func(lines []string, i int, line string) []string {
		l := slices.Clone(lines)
		l[i] = line
		return l
	}
	return []tamperCase{
		{"a field of a record edited", func(t *testing.T, l []string) string { return join(set(l, 1, otherTime(t, l[1]))...) }, 3, false},
		{"a digest of a record edited", func(t *testing.T, l []string) string {
			old := field(t, l[1], "response_sha256")
			return join(set(l, 1, replaceIn(t, l[1], old, old[:len(old)-2]+flipHex(old[len(old)-2])+`"`))...)
		}, 3, false},
		{"a record's seq made a string", func(t *testing.T, l []string) string {
			return join(set(l, 1, replaceIn(t, l[1], `"seq":2,`, `"seq":"2",`))...)
		}, 2, false},
		{"a record's keys reordered", func(t *testing.T, l []string) string {
			seq, prev := field(t, l[1], "seq"), field(t, l[1], "prev")
			return join(set(l, 1, replaceIn(t, l[1], seq+","+prev, prev+","+seq))...)
		}, 2, false},
		{"a record padded with a space", func(t *testing.T, l []string) string {
			return join(set(l, 1, replaceIn(t, l[1], `"seq":2,`, `"seq": 2,`))...)
		}, 2, false},
		{"a record given an extra key", func(t *testing.T, l []string) string {
			return join(set(l, 1, strings.TrimSuffix(l[1], "}\n")+`,"note":"x"}`+"\n")...)
		}, 2, false},
		{"a byte of a record made invalid UTF-8", func(t *testing.T, l []string) string {
			return join(set(l, 1, replaceIn(t, l[1], `"transport":"stdio"`, "\"transport\":\"std\xffo\""))...)
		}, 2, false},
		{"the first record deleted", func(t *testing.T, l []string) string { return join(without(l, 0)...) }, 1, false},
		{"a record deleted", func(t *testing.T, l []string) string { return join(without(l, 1)...) }, 2, false},
		{"a copy of a record inserted", func(t *testing.T, l []string) string { return join(with(l, 2, l[1])...) }, 3, false},
		{"a forged record chained in", func(t *testing.T, l []string) string { return join(with(l, 2, forgedAfter(t, l[1]))...) }, 4, false},
		{"a blank line inserted", func(t *testing.T, l []string) string { return join(with(l, 2, "\n")...) }, 3, false},
		{"a garbage line inserted", func(t *testing.T, l []string) string { return join(with(l, 2, "garbage\n")...) }, 3, false},
		{"a line of 1 MiB inserted", func(t *testing.T, l []string) string {
			return join(with(l, 2, strings.Repeat("x", 1<<20)+"\n")...)
		}, 3, false},
		{"two records swapped", func(t *testing.T, l []string) string { return join(swapped(l, 1, 2)...) }, 2, false},
		{"the last two records swapped", func(t *testing.T, l []string) string { return join(swapped(l, 3, 4)...) }, 4, false},
		{"the last record's seq edited", func(t *testing.T, l []string) string {
			return join(set(l, 4, replaceIn(t, l[4], `"seq":5,`, `"seq":7,`))...)
		}, 5, false},
		{"the last record appended twice", func(t *testing.T, l []string) string { return join(append(slices.Clone(l), l[4])...) }, 6, false},
		{"cut mid-line", func(t *testing.T, l []string) string { return join(l[:4]...) + l[4][:len(l[4])/2] }, 5, true},
		{"cut mid-line further up", func(t *testing.T, l []string) string { return join(l[:2]...) + l[2][:len(l[2])/2] }, 3, true},
		{"the last newline cut", func(t *testing.T, l []string) string { s := join(l...); return s[:len(s)-1] }, 5, true},
		{"garbage appended", func(t *testing.T, l []string) string { return join(l...) + "garbage\n" }, 6, true},
		{"garbage appended without a newline", func(t *testing.T, l []string) string { return join(l...) + "garbage" }, 6, true},
		{"NUL bytes appended", func(t *testing.T, l []string) string { return join(l...) + "\x00\x00\x00\x00" }, 6, true},
		{"an empty line appended", func(t *testing.T, l []string) string { return join(l...) + "\n" }, 6, true},
		{"the last record made malformed", func(t *testing.T, l []string) string {
			return join(set(l, 4, replaceIn(t, l[4], `"status":"success","code":null`, `"status":"error","code":null`))...)
		}, 5, true},
		{"the last record given a bad digest", func(t *testing.T, l []string) string {
			old := field(t, l[4], "engine_sha256")
			return join(set(l, 4, replaceIn(t, l[4], old, `"engine_sha256":"`+strings.Repeat("Z", 64)+`"`))...)
		}, 5, true},
		{"the last record given a run it did not commit", func(t *testing.T, l []string) string {
			edited := replaceIn(t, l[4], `"run_id":null,"result_sha256":null`, `"run_id":"i2","result_sha256":"`+zeros+`"`)
			return join(set(l, 4, edited)...)
		}, 5, true},
		{"the last record edited in form", func(t *testing.T, l []string) string { return join(set(l, 4, otherTime(t, l[4]))...) }, 0, false},
		{"the last record removed", func(t *testing.T, l []string) string { return join(l[:4]...) }, 0, false},
	}
}

// flipHex is another lowercase hex digit than c.
func flipHex(c byte) string {
	if c == '0' {
		return "1"
	}
	return "0"
}

// Each tampering of a five-record ledger, one at a time, in the manner of
// git's fsck tests: "tool-runner ledger" names the first bad line (exit
// 1, LEDGER_TAMPERED). When the last line is damaged, the next call
// answers LEDGER_TAMPERED before reading its input (request_id null, exit
// 1), runs nothing and writes nothing anywhere in the workspace. Damage
// further up is not a call's to find (its cost must not grow with the
// ledger): the call runs and appends onto the last line, and the ledger
// command still names the damage. Damage that keeps the chain well formed
// (an edited or removed last record) verifies, with a head that differs
// from the one kept before: only that kept head shows it.
func TestLedgerNamesEachTamperingAtItsLine(t *testing.T) {
	ws := fixture(t)
	digest := digestOf(t, ws)
	base := []string{"--workspace", ws, "--output-dir", "runs", "--ledger", "ledger.jsonl"}
	for _, req := range []string{inspectRequest("i1"), analyzeRequest("r1", digest), verifyRequest("v1", "r1"), analyzeRequest("r1", digest), inspectRequest("i2")} {
		call(t, ws, req, base...)
	}
	good := ledgerLines(t, filepath.Join(ws, "ledger.jsonl"))
	is.New(t).Equal(len(good), 5)
	_, keptHead := checkChain(t, good)
	if r := decodeRecord(t, good[4]); r["status"] != "success" || r["code"] != nil {
		t.Fatalf("the fifth record should be a success: %s", good[4])
	}

	for i, tc := range tamperCases() {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			name := fmt.Sprintf("tampered-%02d.jsonl", i)
			damaged := tc.damage(t, good)
			writeFile(t, filepath.Join(ws, name), []byte(damaged))

			v, exit := ledgerCommand(t, ws, "--workspace", ws, "--ledger", name)
			if tc.line == 0 {
				is.Equal(v["ledger"], "verified") // the chain cannot show it
				is.True(v["head"] != keptHead)    // a head kept elsewhere does
			} else {
				is.Equal(exit, 1)
				is.Equal(v["ledger"], "tampered")
				is.Equal(v["line"], json.Number(fmt.Sprint(tc.line))) // the first bad line
				is.Equal(v["code"], "LEDGER_TAMPERED")
				is.True(v["message"] != "")
			}

			args := []string{"--workspace", ws, "--output-dir", "runs-" + name, "--ledger", name}
			if tc.refused {
				before := snapshotTree(t, ws)
				o := answerWithoutInput(t, ws, args...)
				is.Equal(o.code(), "LEDGER_TAMPERED")
				is.Equal(o.exit, 1)
				is.Equal(o.resp["request_id"], nil)
				is.Equal(o.resp["tool"], nil)
				is.True(strings.Contains(o.message(), "tool-runner ledger")) // says what to do next
				sameTree(t, before, snapshotTree(t, ws))                     // nothing run, nothing written

				o = call(t, ws, analyzeRequest("r2", digest), args...) // with a request waiting, the same
				is.Equal(o.code(), "LEDGER_TAMPERED")
				sameTree(t, before, snapshotTree(t, ws))
				return
			}
			req := analyzeRequest("r2", digest)
			o := call(t, ws, req, args...)
			is.Equal(o.exit, 0) // the call ran
			after := ledgerLines(t, filepath.Join(ws, name))
			is.Equal(strings.Join(after[:len(after)-1], ""), damaged) // and appended, nothing else
			r := decodeRecord(t, after[len(after)-1])
			last := after[len(after)-2]
			is.Equal(r.seq(t), decodeRecord(t, last).seq(t)+1) // building on the last line
			is.Equal(r["prev"], testutil.SHA256Hex([]byte(last)))
			checkRecordOf(t, r, o, &req)
			v, _ = ledgerCommand(t, ws, "--workspace", ws, "--ledger", name)
			if tc.line != 0 {
				is.Equal(v["line"], json.Number(fmt.Sprint(tc.line))) // still named by the ledger command
			} else {
				is.Equal(v["ledger"], "verified")
			}
		})
	}
}

// A torn last line (no trailing newline: only a crash of the machine
// leaves one) stops every call with LEDGER_TAMPERED until the operator
// repairs it as README says: look at the last line, save a copy, cut the
// file back to its last newline. Then calls go on, and the ledger
// verifies.
func TestATornLastLineIsRefusedUntilRepairedAsReadmeSays(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	ledger := filepath.Join(ws, "ledger.jsonl")
	args := []string{"--workspace", ws, "--ledger", "ledger.jsonl"}
	for i := range 3 {
		call(t, ws, inspectRequest(fmt.Sprintf("i%d", i)), args...)
	}
	good := ledgerLines(t, ledger)
	torn := good[2][:len(good[2])-7]
	writeFile(t, ledger, []byte(good[0]+good[1]+torn))

	o := call(t, ws, inspectRequest("i3"), args...)
	is.Equal(o.code(), "LEDGER_TAMPERED")
	is.True(strings.Contains(o.message(), "README"))
	v, _ := ledgerCommand(t, ws, "--workspace", ws, "--ledger", "ledger.jsonl")
	is.Equal(v["line"], json.Number("3"))
	is.True(strings.Contains(v["message"].(string), "README"))

	// The repair of README: the ledger command names line K, the last;
	// keep a copy; truncate to the bytes of lines 1..K-1
	// (head -n K-1 | wc -c).
	k, err := v["line"].(json.Number).Int64()
	is.NoErr(err)
	data, err := os.ReadFile(ledger)
	is.NoErr(err)
	writeFile(t, ledger+".damaged", data)
	is.NoErr(os.Truncate(ledger, int64(len(strings.Join(splitLines(string(data))[:k-1], "")))))

	o = call(t, ws, inspectRequest("i3"), args...)
	is.Equal(o.exit, 0)
	records, head := verifiedLedger(t, ws, "ledger.jsonl")
	is.Equal(records, int64(3)) // two whole records, and the new one
	lines := ledgerLines(t, ledger)
	is.Equal(head, testutil.SHA256Hex([]byte(lines[2])))
	is.Equal(lines[:2], good[:2])
}

// SIGKILL at any moment of an analyze of the maximum inputs (its reads,
// its writes, its commit, the append of its record) never leaves a ledger
// the next call cannot build on: one small write to an O_APPEND file lands
// whole or not at all. After every kill a normal call succeeds and is
// recorded; at the end the ledger verifies, and every call that answered
// is recorded in it.
func TestKillingACallAtAnyMomentLeavesALedgerTheNextCallBuildsOn(t *testing.T) {
	is := is.New(t)
	ws := maxFixture(t)
	ledger := filepath.Join(ws, "ledger.jsonl")
	digest := digestOf(t, ws)
	args := []string{"--workspace", ws, "--output-dir", "runs", "--ledger", "ledger.jsonl"}

	// How long one analyze with its record takes here.
	full := medianAnalyze(t, ws, digest, args)

	// Half the attempts sweep evenly from 0 to 1.2 times that; the other
	// half sweep again, finely, across the stretch where the sweep saw the
	// outcome turn from "not recorded" to "recorded", which holds the
	// commit and the append.
	attempts := 40
	if testing.Short() {
		attempts = 12
	}
	coarse := attempts / 2
	answered := map[string]bool{} // response SHA256 of every call that answered
	var unrecorded, committedUnrecorded, killedRecorded, finished int
	lastUnrecorded, firstRecorded := time.Duration(0), time.Duration(float64(full)*1.2)
	attempt := func(i int, delay time.Duration) {
		id := fmt.Sprintf("kill-%02d", i)
		before := len(ledgerLines(t, ledger))
		signaled, _, _ := runKilledAfter(t, ws, analyzeRequest(id, digest), delay, args...)
		grew := len(ledgerLines(t, ledger)) - before
		_, err := os.Lstat(filepath.Join(ws, "runs", id))
		committed := err == nil
		is.True(grew == 0 || grew == 1) // at most its own record
		switch {
		case !signaled:
			finished++
			is.Equal(grew, 1) // a call that ran to its end is recorded
		case grew == 1:
			killedRecorded++
		case committed:
			committedUnrecorded++ // killed between its commit and its append
		default:
			unrecorded++
		}
		if i < coarse {
			if grew == 1 {
				firstRecorded = min(firstRecorded, delay)
			} else {
				lastUnrecorded = max(lastUnrecorded, delay)
			}
		}
		// The next call builds on whatever the kill left.
		o := call(t, ws, inspectRequest(fmt.Sprintf("after-%02d", i)), args...)
		is.Equal(o.exit, 0)
		answered[responseSHA256(o)] = true
	}
	for i := range coarse {
		attempt(i, time.Duration(float64(full)*1.2*float64(i)/float64(coarse-1)))
	}
	lo, hi := min(lastUnrecorded, firstRecorded), max(lastUnrecorded, firstRecorded)
	for i := coarse; i < attempts; i++ {
		attempt(i, lo+time.Duration(float64(hi-lo)*float64(i-coarse)/float64(attempts-coarse-1)))
	}
	t.Logf("%d kills, at 0..%v then %v..%v: %d before any commit or record, %d after the commit and before the record, %d after the record, %d ran to the end",
		attempts, time.Duration(float64(full)*1.2), lo, hi, unrecorded, committedUnrecorded, killedRecorded, finished)
	if !testing.Short() {
		// The sweep reached both sides of the record.
		is.True(unrecorded > 0)
		is.True(killedRecorded+finished > 0)
	}

	lines := ledgerLines(t, ledger)
	recs, head := checkChain(t, lines)
	for _, r := range recs {
		delete(answered, r["response_sha256"].(string))
	}
	is.Equal(len(answered), 0) // every answered call is recorded
	is.Equal(len(lines), 5+finished+killedRecorded+attempts)
	records, gotHead := verifiedLedger(t, ws, "ledger.jsonl")
	is.Equal(records, int64(len(lines)))
	is.Equal(gotHead, head)
}

// The must-show of issue 9: ten calls of mixed outcomes on a fresh
// workspace give ten records with a valid chain, and "tool-runner ledger"
// prints verified, records 10, and the head the test computes itself.
// The same ten calls without --ledger give byte-identical responses and
// exit statuses, and leave no ledger anywhere.
func TestTenCallsOfMixedOutcomesMakeTenChainedRecords(t *testing.T) {
	is := is.New(t)
	withLedger, without := fixture(t), fixture(t)
	digest := digestOf(t, withLedger)
	calls := []struct {
		stdin string
		extra []string
	}{
		{inspectRequest("i1"), nil},
		{analyzeRequest("r1", digest), nil},
		{verifyRequest("v1", "r1"), nil},
		{analyzeRequest("r1", digest), nil},                       // OUTPUT_COLLISION
		{analyzeRequest("r2", zeros), nil},                        // STALE_CONTEXT
		{verifyRequest("v2", "nope"), nil},                        // MISSING_RESULT
		{`{"request_id":"x1",`, nil},                              // INVALID_JSON
		{`{"request_id":"x2","tool":"rm","arguments":{}}`, nil},   // UNKNOWN_TOOL
		{inspectRequest("c1"), []string{"--cancel-file", "stop"}}, // CANCELLED
		{analyzeRequest("r3", digest), nil},
	}
	var codes []string
	var responses []string
	for _, ws := range []string{withLedger, without} {
		writeFile(t, filepath.Join(ws, "stop"), nil) // the marker of the cancelled call
		for i, c := range calls {
			args := append([]string{"--workspace", ws, "--output-dir", "runs"}, c.extra...)
			if ws == withLedger {
				args = append(args, "--ledger", "ledger.jsonl")
			}
			o := call(t, ws, c.stdin, args...)
			line := fmt.Sprintf("%d %s", o.exit, o.raw)
			if ws == withLedger {
				codes = append(codes, o.code())
				responses = append(responses, line)
			} else {
				is.Equal(line, responses[i]) // the same answer without --ledger
			}
		}
	}
	t.Logf("codes: %q", codes)
	is.Equal(codes, []string{"", "", "", "OUTPUT_COLLISION", "STALE_CONTEXT", "MISSING_RESULT", "INVALID_JSON", "UNKNOWN_TOOL", "CANCELLED", ""})

	lines := ledgerLines(t, filepath.Join(withLedger, "ledger.jsonl"))
	is.Equal(len(lines), 10)
	recs, head := checkChain(t, lines)
	for i, r := range recs {
		is.Equal(r["response_sha256"], testutil.SHA256Hex([]byte(strings.TrimSuffix(strings.SplitN(responses[i], " ", 2)[1], "\n"))))
	}
	records, gotHead := verifiedLedger(t, withLedger, "ledger.jsonl")
	is.Equal(records, int64(10))
	is.Equal(gotHead, head) // the head is the test's own SHA256 of the last line

	// Without --ledger, the workspace holds exactly what it holds with one,
	// but the ledger.
	paths := func(ws string) []string {
		var names []string
		for name := range snapshotTree(t, ws) {
			names = append(names, name)
		}
		slices.Sort(names)
		return names
	}
	is.Equal(paths(without), slices.DeleteFunc(paths(withLedger), func(n string) bool { return n == "ledger.jsonl" }))
}

// A SIGINT while the ledger's pre-check waits for another process's lock
// cancels the call at once, as a signal before the request does: CANCELLED
// (exit 3), nothing run, nothing written, not recorded (the ledger could
// not be read), rather than IO_OR_NUMERIC_ERROR after the whole 10 s wait.
// The signal may come before the wait begins or during it; either way the
// answer is the same.
func TestASignalDuringTheLedgerPreCheckCancelsIt(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	ledger := filepath.Join(ws, "ledger.jsonl")
	writeFile(t, ledger, nil)
	holder, err := os.Open(ledger)
	is.NoErr(err)
	defer holder.Close()
	is.NoErr(unix.Flock(int(holder.Fd()), unix.LOCK_EX)) // another process's append, as the runner sees it
	before := snapshotTree(t, ws)
	p := startRunner(t, ws, "--workspace", ws, "--ledger", "ledger.jsonl")
	time.Sleep(200 * time.Millisecond) // let it reach the wait, most likely; not needed for the answer
	is.NoErr(p.cmd.Process.Signal(os.Interrupt))
	o := p.finish(t)
	is.Equal(o.exit, 3)
	is.Equal(o.code(), "CANCELLED")
	is.Equal(snapshotTree(t, ws), before) // nothing written, no record
}

// A ledger under a run file's name directly in the output directory is
// refused at the start of "tool-runner mcp" too (PATH_BOUNDARY on
// standard error, exit 2), before anything is written; before issue 15 the
// server's first call created it and refused everything after.
func TestMCPRefusesALedgerNamedLikeARunFileAtStart(t *testing.T) {
	for _, name := range []string{"result.json", "receipt.json", "checksums.json", "attestation.json", ".writer.lock"} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			ws := fixture(t)
			mustMkdir(t, filepath.Join(ws, "runsR"))
			before := snapshotTree(t, ws)
			cmd := exec.Command(runnerPath(t), "mcp", "--workspace", ws, "--output-dir", "runsR", "--ledger", "runsR/"+name)
			cmd.Dir = ws
			cmd.Stdin = strings.NewReader(initialize("2025-06-18") + "\n")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			is.True(ok)
			is.Equal(ee.ExitCode(), 2)
			is.Equal(stdout.String(), "")
			is.True(strings.HasPrefix(stderr.String(), "PATH_BOUNDARY: "))
			is.True(!strings.Contains(stderr.String(), ws))
			sameTree(t, before, snapshotTree(t, ws)) // nothing written
		})
	}
}

// "tool-runner ledger" checks any file (protocol §11): one an earlier version
// made under a run file's name in the output directory (whose directory
// then looks like a run's because of the ledger itself), a file named
// .writer.lock, a ledger inside a run directory. It changes nothing, not
// even a mode that a tool call would set to 0600.
func TestTheLedgerCommandChecksAnyFile(t *testing.T) {
	ws := fixture(t)
	args := []string{"--workspace", ws, "--output-dir", "runs", "--ledger", "ledger.jsonl"}
	for i := range 3 {
		call(t, ws, inspectRequest(fmt.Sprintf("i%d", i)), args...)
	}
	good, err := os.ReadFile(filepath.Join(ws, "ledger.jsonl"))
	is.New(t).NoErr(err)
	analyze(t, ws, "runs", "r0")
	for _, rel := range []string{"runsR/result.json", "runsR/receipt.json", "runsR/checksums.json", "runsR/attestation.json", "runs/.writer.lock", "runs/r0/result.json", "runs/r0/ledger.jsonl"} {
		t.Run(rel, func(t *testing.T) {
			is := is.New(t)
			target := filepath.Join(ws, rel)
			if rel != "runs/r0/result.json" {
				writeFile(t, target, good)
				t.Cleanup(func() { _ = os.Remove(target) })
			}
			is.NoErr(os.Chmod(target, 0o644))
			before := snapshotTree(t, ws)
			v, exit := ledgerCommand(t, ws, "--workspace", ws, "--ledger", rel)
			if rel == "runs/r0/result.json" {
				is.Equal(exit, 1) // a run's result is checked, and is no ledger
				is.Equal(v["ledger"], "tampered")
				is.Equal(v["line"], json.Number("1"))
			} else {
				is.Equal(exit, 0)
				is.Equal(v["records"], json.Number("3"))
			}
			sameTree(t, before, snapshotTree(t, ws)) // nothing written, no mode changed
		})
	}
}
