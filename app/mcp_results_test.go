package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/cli"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/call"
	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/internal/testutil"
)

// Results sized for a model's context (protocol §9): over MCP the lists that
// grow with the data are cut to their first K items and the answer says
// which, under "truncated"; the one-shot protocol is unchanged. These run
// the call layer as the MCP transport does (Calls.Tool with the raw
// arguments), whose Answer.JSON is the tool result's text block and its
// structuredContent.

// maxAnswerBytes is protocol §9's bound on an MCP answer at the default K.
const maxAnswerBytes = 12 << 10

// mcpCalls is the call layer over a service opened as "tool-runner mcp
// args…" opens it, and the transport its calls arrive by.
type mcpCalls struct {
	svc   *app.Service
	calls *call.Calls
	t     call.Transport
}

// mcpService opens the service over m as "tool-runner mcp args…" does.
func (m *memWorkspace) mcpService(args ...string) mcpCalls {
	m.t.Helper()
	o, _, e := cli.Parse(cli.MCP, append([]string{"--workspace", wsRoot}, args...))
	if e != nil {
		m.t.Fatal(e)
	}
	s, err := app.Open(o.Options, m.wire)
	if err != nil {
		m.t.Fatal(err)
	}
	return mcpCalls{svc: s, calls: call.New(s), t: call.Transport{Name: "mcp", ListLimit: o.ListLimit}}
}

// mcpCall answers one MCP call of tool with the raw arguments.
func mcpCall(s mcpCalls, tool, args string) call.Answer {
	var data []byte
	if args != "" {
		data = []byte(args)
	}
	a := s.calls.Tool(context.Background(), s.t, nil, tool, data)
	a.Done()
	return a
}

// On the shipped fixture (5 contributions, duplicate C2, blockers
// missing_price [T4] and duplicate_customer_key [C2]), K decides exactly
// what is cut, and "truncated" names it in document order.
func TestMCPAnswersCutEachGrowingListToKAndSayWhichInOrder(t *testing.T) {
	for _, tt := range []struct {
		k         string
		truncated string
	}{
		{"0", `{"/result/revenue/contributions":5,"/result/customer_join/duplicate_keys":1,"/result/release/blockers/0/subjects":1,"/result/release/blockers/1/subjects":1}`},
		{"1", `{"/result/revenue/contributions":5}`},
		{"4", `{"/result/revenue/contributions":5}`},
		{"5", `{}`},
		{"1000", `{}`},
	} {
		t.Run("K="+tt.k, func(t *testing.T) {
			is := is.New(t)
			m := newMem(t, testutil.Fixture(t))
			s := m.mcpService("--output-dir", "runs", "--list-limit", tt.k)
			a := mcpCall(s, "analyze", `{"expected_source_digest":"`+m.digest()+`","run_id":"r1"}`)
			is.True(a.OK())
			is.True(bytes.HasSuffix(a.JSON, []byte(`,"truncated":`+tt.truncated+`}`))) // the tenth key, last
			k, _ := strconv.Atoi(tt.k)
			checkCut(t, a.JSON, m.read("runs/r1/result.json"), "/result", k)

			inspected := mcpCall(s, "inspect_inputs", "")
			var inspectWant string // the blockers' subjects only
			if k == 0 {
				inspectWant = `{"/result/release_blockers/0/subjects":1,"/result/release_blockers/1/subjects":1}`
			} else {
				inspectWant = `{}`
			}
			is.True(bytes.HasSuffix(inspected.JSON, []byte(`,"truncated":`+inspectWant+`}`)))
			oneShot := m.run(inspect("i1"), "--workspace", wsRoot, "--output-dir", "runs")
			checkCut(t, inspected.JSON, []byte(oneShot.Raw), "", k)
		})
	}
}

// Every answer over MCP has "truncated", refusals and verify included, and
// no one-shot answer has it.
func TestTruncatedIsAlwaysThereOverMCPAndNeverInOneShot(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	s := m.mcpService("--output-dir", "runs")
	digest := m.digest()
	is.True(mcpCall(s, "analyze", `{"expected_source_digest":"`+digest+`","run_id":"r1"}`).OK())
	for _, c := range []struct{ tool, args string }{
		{"verify_result", `{"run_id":"r1"}`},
		{"verify_result", `{"run_id":"nope"}`},
		{"analyze", `{"expected_source_digest":"` + digest + `","run_id":"r1"}`},
		{"inspect_inputs", `{"x":1}`},
		{"inspect_inputs", `[`},
	} {
		a := mcpCall(s, c.tool, c.args)
		is.Equal(keysOf(t, a.JSON), []string{"protocol_version", "request_id", "ok", "status", "tool", "result", "error", "artifacts", "verification", "truncated"})
		is.True(bytes.HasSuffix(a.JSON, []byte(`,"truncated":{}}`))) // nothing to cut
	}
	for _, req := range []string{inspect("i1"), analyzeReq("r2", digest), verifyReq("v1", "r2"), "{"} {
		r := m.run(req, "--workspace", wsRoot, "--output-dir", "runs")
		is.True(!strings.Contains(r.Raw, `"truncated"`)) // one-shot: nine keys
		is.Equal(len(keysOf(t, []byte(r.Raw))), 9)
	}
}

// An analyze's answer names its run's files, in the order written, and a
// verify's the result it verified; refusals name none.
func TestAnswersNameTheRunFilesTheyAreAbout(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	s := m.mcpService("--output-dir", "runs")
	a := mcpCall(s, "analyze", `{"expected_source_digest":"`+m.digest()+`","run_id":"r1"}`)
	is.True(a.OK())
	var names []string
	for _, f := range a.Files {
		is.Equal(f.RunID, "r1")
		is.Equal(f.Size, len(m.read("runs/r1/"+f.Name))) // the size on disk
		names = append(names, f.Name)
	}
	is.Equal(names, []string{"result.json", "receipt.json", "checksums.json"})
	v := mcpCall(s, "verify_result", `{"run_id":"r1"}`)
	is.Equal(v.Files, []evidence.RunFile{{RunID: "r1", Name: "result.json", Size: len(m.read("runs/r1/result.json"))}})
	is.Equal(mcpCall(s, "verify_result", `{"run_id":"r2"}`).Files, nil)
	is.Equal(mcpCall(s, "analyze", `{"expected_source_digest":"`+m.digest()+`","run_id":"r1"}`).Files, nil) // collision
}

// keysOf returns the top-level keys of a JSON object, in order.
func keysOf(t testing.TB, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", data)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// orderedTruncated decodes an answer's "truncated", keeping its order.
func orderedTruncated(t testing.TB, answer []byte) (pointers []string, lengths map[string]int) {
	t.Helper()
	var body struct {
		Truncated json.RawMessage `json:"truncated"`
	}
	if err := json.Unmarshal(answer, &body); err != nil || body.Truncated == nil {
		t.Fatalf("no truncated in %s", answer)
	}
	dec := json.NewDecoder(bytes.NewReader(body.Truncated))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("truncated is not an object: %s", body.Truncated)
	}
	lengths = map[string]int{}
	for dec.More() {
		k, _ := dec.Token()
		v, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(string(v.(json.Number)))
		if err != nil {
			t.Fatalf("truncated[%s] is not an integer", k)
		}
		pointers = append(pointers, k.(string))
		lengths[k.(string)] = n
	}
	return pointers, lengths
}

// checkCut holds an MCP answer to the complete document it was cut from
// (full, the value at mount in the answer: the run's result.json at
// "/result", or the one-shot answer of the same call at ""): every list of
// call.CutLists holds at most k items; each one cut is its first k items
// and appears in truncated, in document order, with its full length; and,
// with the lists made whole again and truncated removed, the answer is the
// complete document (request_id aside: the call IDs differ).
func checkCut(t testing.TB, answer, full []byte, mount string, k int) {
	t.Helper()
	var mcp, whole map[string]any
	if err := json.Unmarshal(answer, &mcp); err != nil {
		t.Fatal(err)
	}
	var fullValue any
	if err := json.Unmarshal(full, &fullValue); err != nil {
		t.Fatal(err)
	}
	if mount == "" {
		whole = fullValue.(map[string]any)
	} else {
		whole = map[string]any{}
		for key, v := range mcp {
			whole[key] = v
		}
		whole[strings.TrimPrefix(mount, "/")] = fullValue
	}
	pointers, lengths := orderedTruncated(t, answer)
	var expected []string // the lists longer than k, in document order
	tool, _ := mcp["tool"].(string)
	for _, pattern := range call.CutLists(tool) {
		for _, pointer := range expand(whole, pattern) {
			list, _ := at(whole, pointer).([]any)
			got, _ := at(mcp, pointer).([]any)
			if len(got) > k {
				t.Errorf("%s holds %d items, more than K = %d", pointer, len(got), k)
			}
			if len(list) <= k {
				continue
			}
			expected = append(expected, pointer)
			if !equalJSON(got, list[:k]) {
				t.Errorf("%s is not the first %d items of the complete list", pointer, k)
			}
			if lengths[pointer] != len(list) {
				t.Errorf("truncated says %s had %d items; it has %d", pointer, lengths[pointer], len(list))
			}
			set(mcp, pointer, list) // whole again
		}
	}
	if !slices.Equal(pointers, expected) {
		t.Errorf("truncated names %q; the lists cut are %q, in this order", pointers, expected)
	}
	for _, key := range []string{"truncated", "request_id"} {
		delete(mcp, key)
		delete(whole, key)
	}
	if e, ok := mcp["error"].(map[string]any); ok { // a fault of the sources begins with a sentence for the model
		e["message"] = strings.TrimPrefix(e["message"].(string), sourcesSentence+"\n")
	}
	if !equalJSON(mcp, whole) {
		t.Errorf("made whole again, the MCP answer differs from the complete document:\n%s\n%s", answer, full)
	}
}

// expand lists the pointers a pattern of call.CutLists matches in doc.
func expand(doc any, pattern string) []string {
	before, after, ok := strings.Cut(pattern, "/"+call.AnyIndex)
	if !ok {
		if at(doc, pattern) == nil {
			return nil
		}
		return []string{pattern}
	}
	list, _ := at(doc, before).([]any)
	var out []string
	for i := range list {
		out = append(out, expand(doc, before+"/"+strconv.Itoa(i)+after)...)
	}
	return out
}

// at resolves an RFC 6901 pointer (no escapes needed here) in doc.
func at(doc any, pointer string) any {
	for _, part := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		switch v := doc.(type) {
		case map[string]any:
			doc = v[part]
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i >= len(v) {
				return nil
			}
			doc = v[i]
		default:
			return nil
		}
	}
	return doc
}

// set replaces the value at pointer in doc.
func set(doc any, pointer string, value any) {
	i := strings.LastIndex(pointer, "/")
	switch parent := at(doc, pointer[:i]).(type) {
	case map[string]any:
		parent[pointer[i+1:]] = value
	case []any:
		n, _ := strconv.Atoi(pointer[i+1:])
		parent[n] = value
	}
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// dataset are the parameters of one generated set of sources within protocol
// §8: at most 10,000 data rows and 1 MiB a file, IDs of idLen characters.
type dataset struct {
	seed uint64
	rows int
	// idLen is the length of every transaction and customer ID, 2–64.
	idLen int
	// blank, unmatched, duplicate: one row in that many has a blank price,
	// an unknown customer, a customer listed twice (0: none).
	blank, unmatched, duplicate int
	// wide rows carry 12-digit quantities and prices with 6 decimals, the
	// longest money strings; noEligible makes every group's eligible 0.
	wide, noEligible bool
	// fault: 0 none; 1 a bad quantity on every row (INVALID_DATA, its
	// longest message); 2 the 10,001st row (INPUT_LIMIT).
	fault int
}

// sources writes the dataset's three CSVs, stopping short of 1 MiB, and
// the shipped contract.
func (d dataset) sources(t testing.TB) map[string][]byte {
	r := rand.New(rand.NewPCG(d.seed, 7))
	id := func(prefix byte, n int) string {
		s := strconv.Itoa(n)
		return string(prefix) + strings.Repeat("0", max(d.idLen-1-len(s), 0)) + s
	}
	var tx, cu, gr bytes.Buffer
	tx.WriteString("transaction_id,customer_id,quantity,unit_price,discount\n")
	cu.WriteString("customer_id,segment\n")
	gr.WriteString("group_id,successes,eligible\n")
	every := func(n, i int) bool { return n > 0 && i%n == 0 }
	limit := domain.MaxDataRows
	if d.fault == 2 {
		limit++
	}
	for i := range min(d.rows, limit) {
		customer := id('C', i/3)
		if every(d.unmatched, i) {
			customer = id('U', i)
		}
		qty, price, discount := strconv.Itoa(1+r.IntN(20)), fmt.Sprintf("%d.%02d", r.IntN(1000), r.IntN(100)), "0"
		if d.wide {
			qty = strconv.FormatInt(r.Int64N(1e12)-5e11, 10)
			price = fmt.Sprintf("%d.%06d", 1e11+r.Int64N(9e11), r.IntN(1e6))
			discount = fmt.Sprintf("0.%06d", 1+r.IntN(999998))
		}
		if every(d.blank, i+1) {
			price = ""
		}
		if d.fault == 1 {
			qty = "x"
		}
		row := id('T', i) + "," + customer + "," + qty + "," + price + "," + discount + "\n"
		if tx.Len()+len(row) > domain.MaxSourceBytes && d.fault != 2 {
			break
		}
		tx.WriteString(row)
	}
	for i := range min(d.rows, domain.MaxDataRows) {
		row := id('C', i) + ",s" + strconv.Itoa(i%5) + "\n"
		if every(d.duplicate, i+1) {
			row += row
		}
		if cu.Len()+len(row) > domain.MaxSourceBytes || bytes.Count(cu.Bytes(), []byte{'\n'})+bytes.Count([]byte(row), []byte{'\n'}) > domain.MaxDataRows+1 {
			break
		}
		cu.WriteString(row)
		eligible := 50 + r.IntN(50)
		if d.noEligible {
			eligible = 0
		}
		fmt.Fprintf(&gr, "%s,%d,%d\n", id('G', i), min(r.IntN(60), eligible), eligible)
	}
	files := testutil.Fixture(t)
	files[domain.TransactionsFile], files[domain.CustomersFile], files[domain.GroupsFile] = tx.Bytes(), cu.Bytes(), gr.Bytes()
	return files
}

// checkDataset runs every tool and outcome over MCP on the dataset with
// K = k, and holds each answer to the checks of protocol §9: at the default K
// at most 12 KiB compact; every cut item where "truncated" says (analyze's
// in the run's saved result.json, inspect's in the one-shot answer of the
// same sources). It returns the largest answer.
func checkDataset(t testing.TB, d dataset, k int) int {
	t.Helper()
	m := newMem(t, d.sources(t))
	s := m.mcpService("--output-dir", "runs", "--list-limit", strconv.Itoa(k))
	largest := 0
	answer := func(tool, args string) call.Answer {
		a := mcpCall(s, tool, args)
		largest = max(largest, len(a.JSON))
		if k == cli.DefaultListLimit && len(a.JSON) > maxAnswerBytes {
			t.Errorf("%s %s: %d bytes, over %d", tool, args, len(a.JSON), maxAnswerBytes)
		}
		return a
	}
	inspected := answer("inspect_inputs", "{}")
	oneShot := m.run(inspect("i1"), "--workspace", wsRoot, "--output-dir", "runs")
	if inspected.OK() != oneShot.Body.OK {
		t.Fatalf("inspect over MCP and one-shot disagree: %s\n%s", inspected.JSON, oneShot.Raw)
	}
	if !inspected.OK() {
		checkCut(t, inspected.JSON, []byte(oneShot.Raw), "", k)
		answer("analyze", `{"expected_source_digest":"`+strings.Repeat("0", 64)+`"}`)
		return largest
	}
	checkCut(t, inspected.JSON, []byte(oneShot.Raw), "", k)
	var res struct {
		SourceDigest string `json:"source_digest"`
	}
	_ = json.Unmarshal(oneShot.Body.Result, &res)
	runID := strings.Repeat("r", 64)
	analyzed := answer("analyze", `{"expected_source_digest":"`+res.SourceDigest+`","run_id":"`+runID+`"}`)
	if !analyzed.OK() {
		t.Fatalf("analyze: %s", analyzed.JSON)
	}
	checkCut(t, analyzed.JSON, m.read("runs/"+runID+"/result.json"), "/result", k)
	for _, c := range []struct{ tool, args string }{
		{"analyze", `{"expected_source_digest":"` + res.SourceDigest + `","run_id":"` + runID + `"}`}, // collision
		{"analyze", `{"expected_source_digest":"` + strings.Repeat("0", 64) + `"}`},                   // stale
		{"analyze", `{"expected_source_digest":"` + res.SourceDigest + `","extra":1}`},                // a bad argument
		{"verify_result", `{"run_id":"` + runID + `"}`},
		{"verify_result", `{"run_id":"` + strings.Repeat("m", 64) + `"}`}, // missing
	} {
		a := answer(c.tool, c.args)
		if pointers, _ := orderedTruncated(t, a.JSON); len(pointers) > 0 {
			t.Errorf("%s %s cut %q: it has no list to cut", c.tool, c.args, pointers)
		}
	}
	return largest
}

// The worst cases of protocol §8 for the size of an answer: 64-character IDs,
// every list as long as 1 MiB allows, the longest money strings in the
// first rows, every blocker, the longest refusal messages.
func worstCases() []dataset {
	return []dataset{
		{seed: 1, rows: 10_000, idLen: 64, blank: 1, unmatched: 1, duplicate: 1, noEligible: true},
		{seed: 2, rows: 10_000, idLen: 64, blank: 2, unmatched: 1, duplicate: 2, wide: true, noEligible: true},
		{seed: 3, rows: 10_000, idLen: 40, blank: 97, unmatched: 89, duplicate: 50, wide: true},
		{seed: 4, rows: 10_000, idLen: 64, fault: 1},
		{seed: 5, rows: 10_001, idLen: 2, fault: 2},
		{seed: 6, rows: 3, idLen: 2},
	}
}

// protocol §9 at §8's worst: with the default K, every MCP answer of every
// tool and outcome is at most 12 KiB compact, and every cut item is where
// truncated says. (FuzzMCPAnswersFitAndCutWhereTheySay explores further.)
func TestMCPAnswersAtTheWorstCasesFit12KiB(t *testing.T) {
	if testing.Short() {
		t.Skip("ten thousand rows, six times")
	}
	for _, d := range worstCases() {
		t.Run(fmt.Sprintf("%+v", d), func(t *testing.T) {
			largest := checkDataset(t, d, cli.DefaultListLimit)
			t.Logf("largest answer: %d bytes (%.0f%% of 12 KiB)", largest, 100*float64(largest)/maxAnswerBytes)
		})
	}
}

// FuzzMCPAnswersFitAndCutWhereTheySay generates data sets within protocol §8
// from its arguments and checks every tool and outcome over MCP at the
// default K (at most 12 KiB) and at the fuzzed K (every cut item where
// truncated says).
//
//	go test ./app -run '^$' -fuzz '^FuzzMCPAnswersFitAndCutWhereTheySay$' -fuzztime 1m
func FuzzMCPAnswersFitAndCutWhereTheySay(f *testing.F) {
	for _, d := range worstCases() {
		f.Add(d.seed, uint16(d.rows), uint8(d.idLen), uint8(d.blank), uint8(d.unmatched), uint8(d.duplicate), d.wide, d.noEligible, uint8(d.fault), uint16(10))
	}
	f.Add(uint64(9), uint16(300), uint8(64), uint8(3), uint8(5), uint8(7), true, false, uint8(0), uint16(0))
	f.Add(uint64(10), uint16(2000), uint8(16), uint8(1), uint8(1), uint8(1), false, false, uint8(0), uint16(1000))
	f.Fuzz(func(t *testing.T, seed uint64, rows uint16, idLen, blank, unmatched, duplicate uint8, wide, noEligible bool, fault uint8, k uint16) {
		d := dataset{seed: seed, rows: int(rows) % (domain.MaxDataRows + 2), idLen: 2 + int(idLen)%63,
			blank: int(blank), unmatched: int(unmatched), duplicate: int(duplicate), wide: wide, noEligible: noEligible, fault: int(fault) % 3}
		checkDataset(t, d, cli.DefaultListLimit)
		if kk := int(k) % (cli.MaxListLimit + 1); kk != cli.DefaultListLimit {
			checkDataset(t, d, kk)
		}
	})
}
