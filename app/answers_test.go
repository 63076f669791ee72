package app_test

import (
	"fmt"
	"path"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/app/call"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/internal/testutil"
)

// Answers a model acts on (issue 25): each refusal says what it is and
// what to do, and its retryable is what the message asks. These hold the
// one-shot answer and the MCP answer of the same call side by side.

// A digest that is not the sources' digest now is STALE_CONTEXT, retryable
// (inspect again, pass the new digest), whether the sources changed since
// the inspection that returned it or it came from no inspection at all:
// the engine keeps no record of past inspections, so the message says
// both and the two answers are the same. It echoes neither digest: the
// current one would let a caller analyze sources it never inspected.
func TestADigestThatMatchesNoInspectionSaysSoAndIsRetryable(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	old := m.digest()
	m.write("data/groups.csv", "group_id,successes,eligible\nG1,1,2\n")
	current := m.digest()
	madeUp := strings.Repeat("0", 64)
	s := m.mcpService("--output-dir", "runs")
	var messages []string
	for _, digest := range []string{old, madeUp} {
		r := m.run(analyzeReq("r1", digest), "--workspace", wsRoot, "--output-dir", "runs")
		is.Equal(r.code(), "STALE_CONTEXT")
		is.True(r.Body.Error.Retryable) // inspect again and pass the new digest
		msg := r.Body.Error.Message
		is.True(strings.Contains(msg, "matches no inspection of the sources as they are now")) // not "stale": it may be made up
		is.True(strings.Contains(msg, "nothing was written"))
		is.True(strings.Contains(msg, "call inspect_inputs again and pass the source_digest it returns"))
		is.True(!strings.Contains(msg, current) && !strings.Contains(msg, digest)) // no digest echoed
		is.True(!m.exists("runs/r1"))
		messages = append(messages, msg)

		a := mcpCall(s, "analyze", `{"expected_source_digest":"`+digest+`","run_id":"r1"}`)
		is.Equal(string(a.Code), "STALE_CONTEXT")
		is.True(strings.Contains(string(a.JSON), `"retryable":true`))
		is.True(strings.Contains(string(a.JSON), msg)) // the same message over MCP
	}
	is.Equal(messages[0], messages[1]) // the engine cannot tell them apart, and does not pretend to
}

// body decodes the response object of an MCP answer.
func body(t *testing.T, a call.Answer) response {
	t.Helper()
	return decode(t, append(a.JSON, '\n'), 0)
}

// A run ID that names no run: the message says where run IDs come from
// and, over MCP, that resources/list lists the committed runs (over the
// one-shot protocol, that each run is a directory of the output directory
// named by its ID). Nothing else of the answer differs.
func TestAMissingRunSaysWhereTheRunsAre(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	for _, out := range []string{"runs", "never-made"} { // an output directory with runs, and none at all
		r := m.run(analyzeReq("r1", m.digest()), "--workspace", wsRoot, "--output-dir", "runs")
		is.True(r.code() == "" || r.code() == "OUTPUT_COLLISION")
		oneShot := m.run(verifyReq("v1", "nope"), "--workspace", wsRoot, "--output-dir", out)
		is.Equal(oneShot.code(), "MISSING_RESULT")
		msg := oneShot.Body.Error.Message
		is.True(strings.HasPrefix(msg, "there is no run nope in the output directory: check the run ID")) // what is wrong, then what to do
		is.True(strings.Contains(msg, "the request_id of the analyze that committed the run"))            // where run IDs come from
		is.True(strings.Contains(msg, "each run is a directory of the output directory"))                 // and where to look
		is.True(!strings.Contains(msg, "resources/list"))                                                 // no MCP in a one-shot answer

		a := body(t, mcpCall(m.mcpService("--output-dir", out), "verify_result", `{"run_id":"nope"}`))
		is.Equal(a.code(), "MISSING_RESULT")
		is.Equal(a.Body.Error.Message, msg+"; resources/list lists the committed runs") // over MCP, the list to look in
		is.True(!a.Body.Error.Retryable)
	}
}

// OUTPUT_COLLISION over MCP: the run ID was taken by an earlier run, so the
// answer's request_id is this call's own assigned ID, never the earlier
// run's (the tool description says request_id is the run ID to pass to
// verify_result, and a model verified the earlier run as its own); the
// message says the ID is taken and to analyze with another run_id or none.
// The ledger records the ID the answer carries. The one-shot answer keeps
// the request's own request_id, as protocol §2 says.
func TestACollisionOverMCPNamesNoRunAsItsOwn(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	digest := m.digest()
	s := m.mcpService("--output-dir", "runs", "--ledger", "calls.jsonl")
	is.True(mcpCall(s, "analyze", `{"expected_source_digest":"`+digest+`","run_id":"r1"}`).OK())
	before := m.tree()

	a := mcpCall(s, "analyze", `{"expected_source_digest":"`+digest+`","run_id":"r1"}`)
	r := body(t, a)
	is.Equal(r.code(), "OUTPUT_COLLISION")
	is.True(*r.Body.RequestID != "r1")     // not the earlier run's ID
	is.True(assignedID(*r.Body.RequestID)) // but this call's own
	is.True(!r.Body.Error.Retryable)       // the same call never succeeds
	msg := r.Body.Error.Message
	is.True(strings.HasPrefix(msg, "the run ID r1 is taken by an earlier run"))
	is.True(strings.Contains(msg, "call analyze again with another run_id, or with none to have one assigned"))
	is.True(strings.Contains(msg, "request_id is this call's own ID"))
	recs := m.memLedger("calls.jsonl")
	is.Equal(recs[len(recs)-1]["request_id"], *r.Body.RequestID) // the record names what the answer named
	is.Equal(recs[len(recs)-1]["run_id"], nil)
	after := m.tree()
	delete(before, wsRoot+"/calls.jsonl")
	delete(after, wsRoot+"/calls.jsonl")
	is.Equal(after, before) // nothing written but the record
	v := body(t, mcpCall(s, "verify_result", `{"run_id":"`+*r.Body.RequestID+`"}`))
	is.Equal(v.code(), "MISSING_RESULT") // the request_id names no run

	oneShot := m.run(analyzeReq("r1", digest), "--workspace", wsRoot, "--output-dir", "runs")
	is.Equal(oneShot.code(), "OUTPUT_COLLISION")
	is.Equal(*oneShot.Body.RequestID, "r1") // the one-shot request's own ID, echoed
}

// assignedID reports whether id is an ID the server assigns:
// 20261201T073000Z-3f9a1c2e.
func assignedID(id string) bool {
	date, hex, ok := strings.Cut(id, "-")
	return ok && len(date) == len("20261201T073000Z") && strings.HasSuffix(date, "Z") && len(hex) == 8 &&
		strings.Trim(hex, "0123456789abcdef") == ""
}

// Every fault of the sources over MCP (INVALID_DATA, INPUT_LIMIT,
// MISSING_INPUT, INVALID_DEFINITIONS) begins with one sentence for the
// model: only the operator can fix the files, so tell the user; then the
// one-shot message, unchanged, on its own lines. Over the one-shot
// protocol nothing is added, and no other code gets the sentence.
func TestASourceFaultOverMCPTellsTheModelToHandItToTheUser(t *testing.T) {
	var many strings.Builder
	for i := range domain.MaxDataRows + 1 {
		fmt.Fprintf(&many, "T%d,C1,1,1.00,0\n", i)
	}
	tests := []struct {
		name, file, data string // written over the fixture; data "" removes the file
		code             string
	}{
		{"a header in another case", domain.TransactionsFile, "Transaction_ID,customer_id,quantity,unit_price,discount\nT1,C1,1,1.00,0\n", "INVALID_DATA"},
		{"a Latin-1 file", domain.CustomersFile, "customer_id,segment\nC1,caf\xe9\nC2,caf\xe9\n", "INVALID_DATA"},
		{"too many rows", domain.TransactionsFile, "transaction_id,customer_id,quantity,unit_price,discount\n" + many.String(), "INPUT_LIMIT"},
		{"a missing file", domain.GroupsFile, "", "MISSING_INPUT"},
		{"another contract", domain.DefinitionsFile, "{}", "INVALID_DEFINITIONS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			m := newMem(t, testutil.Fixture(t))
			if tt.data == "" {
				is.NoErr(m.fs.Remove(path.Join(wsRoot, tt.file)))
			} else {
				m.write(tt.file, tt.data)
			}
			oneShot := m.run(inspect("i1"), "--workspace", wsRoot)
			is.Equal(oneShot.code(), tt.code)
			is.True(!strings.HasPrefix(oneShot.Body.Error.Message, "The operator")) // nothing added to a one-shot answer
			s := m.mcpService("--output-dir", "runs")
			for _, c := range []struct{ tool, args string }{
				{"inspect_inputs", "{}"},
				{"analyze", `{"expected_source_digest":"` + strings.Repeat("0", 64) + `"}`},
			} {
				r := body(t, mcpCall(s, c.tool, c.args))
				is.Equal(r.code(), tt.code)
				is.Equal(r.Body.Error.Message, sourcesSentence+"\n"+oneShot.Body.Error.Message) // c.tool: the sentence, then the fault
				is.True(!r.Body.Error.Retryable)
			}
		})
	}
	t.Run("no other code", func(t *testing.T) {
		is := is.New(t)
		m := newMem(t, testutil.Fixture(t))
		s := m.mcpService("--output-dir", "runs")
		for _, c := range []struct{ tool, args string }{
			{"analyze", `{"expected_source_digest":"` + strings.Repeat("0", 64) + `"}`}, // STALE_CONTEXT
			{"analyze", `{"expected_source_digest":"x"}`},                               // INVALID_ARGUMENTS
			{"verify_result", `{"run_id":"nope"}`},                                      // MISSING_RESULT
		} {
			r := body(t, mcpCall(s, c.tool, c.args))
			is.True(r.code() != "")
			is.True(!strings.Contains(r.Body.Error.Message, sourcesSentence))
		}
	})
}

// sourcesSentence is the sentence a source fault begins with over MCP.
const sourcesSentence = "The operator must fix the source files, which no tool call can change: " +
	"tell the user what follows, then call inspect_inputs again once they have."

// ENGINE_CHANGED says what to do: verify with the engine that made the
// run, or rebuild that engine from the receipt with docs/rebuild.sh.
func TestAnotherEngineSaysHowToVerifyTheRun(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	r := m.run(analyzeReq("r1", m.digest()), "--workspace", wsRoot, "--output-dir", "runs")
	is.Equal(r.code(), "")
	other := fixedEngine()
	other.SHA256 = strings.Repeat("f", 64)
	m.engine = other
	v := m.run(verifyReq("v1", "r1"), "--workspace", wsRoot, "--output-dir", "runs")
	is.Equal(v.code(), "ENGINE_CHANGED")
	msg := v.Body.Error.Message
	is.True(strings.HasPrefix(msg, "the running engine is not the one that made run r1")) // what happened
	is.True(strings.Contains(msg, "verify the run with the engine that made it"))         // what to do
	is.True(strings.Contains(msg, "docs/rebuild.sh"))                                     // or how to get that engine back
	is.True(!v.Body.Error.Retryable)
}
