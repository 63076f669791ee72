package domain

import "bytes"

// DefinitionID names the one metric-definition contract this engine
// implements.
const DefinitionID = "synthetic-v1"

// Contract is the synthetic-v1 metric-definition contract, byte for byte as
// the shipped contracts/metric-definitions.json holds it. A definitions file
// is accepted when it equals this text as a JSON value (key order and white
// space free, numbers by exact decimal value, true never 1); a semantic change
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

// DefinitionsMark refuses a definitions file that starts with a byte
// order mark, for the mark and with the fix the CSV sources get, rather
// than as JSON that does not parse; nil for any other file. The rest of the
// check, strict JSON equal as a JSON value to [Contract], is the app's:
// the domain reads no JSON.
func DefinitionsMark(data []byte) error {
	if bytes.HasPrefix(data, []byte(byteOrderMark)) {
		return &DefinitionsError{Reason: "starts with a byte order mark, which strict JSON refuses; " + fixBOM}
	}
	return nil
}
