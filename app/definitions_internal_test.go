package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/domain"
)

// The contract with its keys reordered, its white space changed and its
// numbers rewritten in other notations: still synthetic-v1.
const contractRewritten = `{"release":{"human_approval":"not_granted","blockers":["missing_price","duplicate_customer_key","unmatched_customer_key","no_eligible_population"]},
"metrics":{"customer_join":{"joined_output":"not_produced","cardinality":"many_to_one","key":"customer_id","right":"data/customers.csv","left":"data/transactions.csv"},
"revenue":{"unknown_when":"unit_price is blank","units":"fictional_currency_units","formula":"quantity * unit_price * (1 - discount)","source":"data/transactions.csv"},
"conversion":{"rate_places":12.000,"method":"pooled_denominator","denominator":"eligible","numerator":"successes","source":"data/groups.csv"}},
"decimal":{"rounding":"half_\u0065ven","precision":8e1},"synthetic":true,"definition_id":"synthetic-v1"}`

func TestDefinitionsEqualAsJSONValues(t *testing.T) {
	is := is.New(t)
	is.NoErr(checkDefinitions([]byte(domain.Contract)))
	is.NoErr(checkDefinitions([]byte(contractRewritten)))
	is.NoErr(checkDefinitions([]byte(strings.ReplaceAll(domain.Contract, `"precision": 80`, `"precision": 80.0`))))
	is.NoErr(checkDefinitions([]byte(strings.ReplaceAll(domain.Contract, `"precision": 80`, `"precision": 800E-1`))))
	// 80 followed by 100,010 zeros after the point: exactly 80, whatever
	// exponent range a decimal library would have.
	is.NoErr(checkDefinitions([]byte(strings.ReplaceAll(domain.Contract, `"precision": 80`, `"precision": 80.`+strings.Repeat("0", 100_010)))))
}

func TestDefinitionsThatDifferAreRefused(t *testing.T) {
	c := domain.Contract
	tests := []struct {
		name, data, where string
	}{
		{"true is not 1", strings.Replace(c, `"synthetic": true`, `"synthetic": 1`, 1), "at synthetic"},
		{"80 is not \"80\"", strings.Replace(c, `"precision": 80`, `"precision": "80"`, 1), "at decimal.precision"},
		{"a different number", strings.Replace(c, `"rate_places": 12`, `"rate_places": 12.0000001`, 1), "at metrics.conversion.rate_places"},
		{"another rounding", strings.Replace(c, `"half_even"`, `"half_up"`, 1), "at decimal.rounding"},
		{"blockers reordered", strings.Replace(c, `"missing_price", "duplicate_customer_key"`, `"duplicate_customer_key", "missing_price"`, 1), "at release.blockers.0"},
		{"a blocker missing", strings.Replace(c, `, "no_eligible_population"`, ``, 1), "at release.blockers"},
		{"an extra key", strings.Replace(c, `"synthetic": true,`, `"synthetic": true, "extra": 1,`, 1), "at $"},
		{"a key missing", strings.Replace(c, `"synthetic": true,`, ``, 1), "at synthetic"},
		{"another definition id", strings.Replace(c, `synthetic-v1`, `synthetic-v2`, 1), "at definition_id"},
		{"a duplicate key", strings.Replace(c, `"synthetic": true,`, `"synthetic": true, "synthetic": true,`, 1), "not strict JSON: duplicate key"},
		{"NaN", strings.Replace(c, `80`, `NaN`, 1), "not strict JSON"},
		{"two documents", c + "{}", "not strict JSON: data after the JSON document"},
		{"byte order mark", "\xEF\xBB\xBF" + c, ": starts with a byte order mark, which strict JSON refuses; save the file as UTF-8 without a byte order mark"},
		{"empty file", "", "not strict JSON: empty input"},
		{"an array", "[]", "at $"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			err := checkDefinitions([]byte(tt.data))
			var de *domain.DefinitionsError
			is.True(errors.As(err, &de))
			is.True(strings.HasPrefix(err.Error(), domain.DefinitionsFile+": ")) // names the file
			is.True(strings.Contains(err.Error(), tt.where))                     // and where it differs
		})
	}
}

// A definitions file with a byte order mark is refused for the mark, with
// the fix, and not as JSON that does not parse.
func TestADefinitionsFileWithAByteOrderMarkNamesTheMarkAndTheFix(t *testing.T) {
	is := is.New(t)
	err := checkDefinitions([]byte("\xEF\xBB\xBF" + domain.Contract))
	var de *domain.DefinitionsError
	is.True(errors.As(err, &de))
	is.Equal(err.Error(), "contracts/metric-definitions.json: starts with a byte order mark, which strict JSON refuses; save the file as UTF-8 without a byte order mark")
}
