package app_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

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
