package call

import "github.com/metricproof/metricproof/app/protocol"

// A tool call's answer is read by a model (protocol §9.4), which acts on
// what it is told with no operator in between: forModel says over MCP what
// only MCP offers, and what only a person can do. The one-shot answer of
// the same failure is left as the use case made it.

// sourcesSentence begins every fault of the sources over MCP: the model
// cannot fix the operator's files and must not try (protocol §9.4).
const sourcesSentence = "The operator must fix the source files, which no tool call can change: " +
	"tell the user what follows, then call inspect_inputs again once they have."

// sourcesFault reports whether a failure of code c is the operator's
// sources' to fix: a file missing, too large or breaking a rule, or the
// contract not the shipped one.
func sourcesFault(c protocol.Code) bool {
	switch c {
	case protocol.MissingInput, protocol.InputLimit, protocol.InvalidData, protocol.InvalidDefinitions:
		return true
	}
	return false
}

// forModel is the outcome of a tool call as a model is to read it:
//   - a fault of the sources begins with sourcesSentence, on a line of its
//     own, so that the model hands the rest to the user;
//   - MISSING_RESULT names resources/list, where the committed runs are;
//   - OUTPUT_COLLISION carries this call's own assigned ID as request_id,
//     never the earlier run's, since a successful analyze's request_id is
//     the run to verify, and says to choose another run_id or none;
//     assign gives that ID.
func forModel(o outcome, assign func() string) outcome {
	e := o.err
	switch {
	case e == nil:
	case sourcesFault(e.Code):
		o.err = &protocol.Error{Code: e.Code, Message: sourcesSentence + "\n" + e.Message, Retryable: e.Retryable}
	case e.Code == protocol.MissingResult:
		o.err = e.Amended("; resources/list lists the committed runs")
	case e.Code == protocol.OutputCollision:
		taken := o.call.ID
		o.call.ID = assign()
		o.err = &protocol.Error{Code: e.Code, Retryable: e.Retryable, Message: "the run ID " + taken + " is taken by an earlier run " +
			"(or another entry of that name in the output directory), and existing evidence is never overwritten; nothing was written: " +
			"call analyze again with another run_id, or with none to have one assigned. This answer's request_id is this call's own ID, not a run's."}
	}
	return o
}
