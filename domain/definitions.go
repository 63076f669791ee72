package domain

import (
	"bytes"

	"github.com/metricproof/metricproof/domain/strictjson"
)

// DefinitionID names the one metric-definition contract this engine
// implements.
const DefinitionID = "synthetic-v1"

// Contract is the synthetic-v1 metric-definition contract, byte for byte as
// the shipped contracts/metric-definitions.json holds it. A definitions file
// is accepted when it equals this text as a JSON value; a semantic change
// needs a new engine, not a new file.
const Contract = `{
  "definition_id": "synthetic-v1",
  "synthetic": true,
  "decimal": {"precision": 80, "rounding": "half_even"},
  "metrics": {
    "conversion": {"source": "data/groups.csv", "numerator": "successes", "denominator": "eligible", "method": "pooled_denominator", "rate_places": 12},
    "revenue": {"source": "data/transactions.csv", "formula": "quantity * unit_price * (1 - discount)", "units": "fictional_currency_units", "unknown_when": "unit_price is blank"},
    "customer_join": {"left": "data/transactions.csv", "right": "data/customers.csv", "key": "customer_id", "cardinality": "many_to_one", "joined_output": "not_produced"}
  },
  "release": {"blockers": ["missing_price", "duplicate_customer_key", "unmatched_customer_key", "no_eligible_population"], "human_approval": "not_granted"}
}
`

// DefinitionsError is a definitions file that is not strict JSON or not the
// synthetic-v1 contract: INVALID_DEFINITIONS on the wire.
type DefinitionsError struct {
	Reason string
}

func (e *DefinitionsError) Error() string {
	return DefinitionsFile + ": " + e.Reason
}

// CheckDefinitions accepts data only when it is strict JSON equal, as a JSON
// value, to [Contract]: key order and white space are free, numbers compare
// by exact decimal value (80 equals 80.0), and true never equals 1. A file
// that starts with a byte order mark is refused for the mark, with the fix.
func CheckDefinitions(data []byte) error {
	if bytes.HasPrefix(data, []byte(byteOrderMark)) {
		return &DefinitionsError{Reason: "starts with a byte order mark, which strict JSON refuses; " + fixBOM}
	}
	got, err := strictjson.Parse(data)
	if err != nil {
		return &DefinitionsError{Reason: "not strict JSON: " + err.Error()}
	}
	want, err := strictjson.Parse([]byte(Contract))
	if err != nil {
		return &DefinitionsError{Reason: "the built-in contract does not parse: " + err.Error()}
	}
	if path, same := strictjson.Diff(want, got); !same {
		return &DefinitionsError{Reason: "differs from the " + DefinitionID + " contract at " + path}
	}
	return nil
}
