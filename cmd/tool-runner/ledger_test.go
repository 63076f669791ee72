//go:build unix

package main

// Real-process tests of the call ledger (protocol §11): one record per call,
// the chain under concurrent processes, every kind of tampering, kills and
// signals. Its place under the write boundary, a torn last line and its
// repair, and the "tool-runner ledger" command on any file are
// testdata/script's ledger_place, ledger_repair and ledger_any_file. The chain is always checked with the test's own SHA256 of each
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
			t.Parallel()
			is := is.New(t)
			ws := fixture(t) // its own, whose whole tree the refusals check; the same sources, so the same digest
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

// SIGKILL at any moment of an analyze of the maximum inputs (its reads,
// its writes, its commit, the append of its record) never leaves a ledger
// the next call cannot build on: one small write to an O_APPEND file lands
// whole or not at all. After every kill a normal call succeeds and is
// recorded; at the end the ledger verifies, and every call that answered
// is recorded in it.
func TestKillingACallAtAnyMomentLeavesALedgerTheNextCallBuildsOn(t *testing.T) {
	testutil.SkipUnlessLong(t)
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
// not be read), rather than IO_OR_NUMERIC_ERROR once the wait gives up.
// The signal comes once the runner waits in the kernel.
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
	waitsForFlock(t, p.cmd.Process.Pid, ledger) // in the wait, its handler long installed
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
