package call

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/app/protocol"
)

// What a tool call's refusal becomes for the model, code by code over the
// closed set: a fault of the sources gets the sentence first, MISSING_RESULT
// names resources/list, OUTPUT_COLLISION gets this call's own ID and its
// own message; every other code, and a success, is left byte for byte as
// the use case made it. Retryability never changes.
func TestEachCodeAsAModelReadsIt(t *testing.T) {
	for _, code := range protocol.Codes() {
		t.Run(string(code), func(t *testing.T) {
			is := is.New(t)
			heard := protocol.Call{ID: "r1", IDHeard: true, Tool: protocol.ToolAnalyze, ToolHeard: true}
			e := protocol.Errorf(code, "what happened: what to do")
			o := forModel(refused(heard, 10, e), func() string { return "20261201T073000Z-3f9a1c2e" })
			is.Equal(o.err.Code, code)
			is.Equal(o.err.Retryable, e.Retryable)
			switch code {
			case protocol.MissingInput, protocol.InputLimit, protocol.InvalidData, protocol.InvalidDefinitions:
				is.Equal(o.err.Message, sourcesSentence+"\nwhat happened: what to do")
				is.Equal(o.call.ID, "r1")
			case protocol.MissingResult:
				is.Equal(o.err.Message, "what happened: what to do; resources/list lists the committed runs")
				is.Equal(o.call.ID, "r1")
			case protocol.OutputCollision:
				is.Equal(o.call.ID, "20261201T073000Z-3f9a1c2e") // never the earlier run's
				is.True(strings.HasPrefix(o.err.Message, "the run ID r1 is taken by an earlier run"))
			default:
				is.Equal(o, refused(heard, 10, e)) // untouched
			}
		})
	}
	t.Run("success", func(t *testing.T) {
		is := is.New(t)
		o := outcome{call: protocol.Call{ID: "r1", IDHeard: true}, cut: 10, committed: "r1"}
		is.Equal(forModel(o, func() string { return "x" }), o)
	})
}

// protocol §9.5's bound holds for a fault of the sources with its sentence
// at the longest: a source's message is under 4 KiB (domain's
// TestTheLongestMessageStaysUnder4KiB), and the costliest bytes it can
// hold, quotes and line feeds, take two bytes each in JSON (HTML escaping
// is off, and it holds no other control character). With a 64-character
// call ID the answer stays within 12 KiB.
func TestASourceFaultWithItsSentenceFits12KiB(t *testing.T) {
	is := is.New(t)
	longest := strings.Repeat(`"`+"\n", 4095/2) + `"`
	is.Equal(len(longest), 4095)
	heard := protocol.Call{ID: strings.Repeat("r", 64), IDHeard: true, Tool: protocol.ToolInspect, ToolHeard: true}
	for _, code := range []protocol.Code{protocol.MissingInput, protocol.InputLimit, protocol.InvalidData, protocol.InvalidDefinitions} {
		a := forModel(refused(heard, 10, protocol.Errorf(code, "%s", longest)), nil).answer()
		is.True(len(a.JSON) <= 12<<10) // within protocol §9.5's bound
		t.Logf("%s: %d bytes (%.0f%% of 12 KiB)", code, len(a.JSON), 100*float64(len(a.JSON))/(12<<10))
	}
}
