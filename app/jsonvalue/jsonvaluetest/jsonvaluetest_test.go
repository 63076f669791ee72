package jsonvaluetest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/app/jsonvalue/jsonvaluetest"
)

// The oracle must refuse every rule on its own; otherwise a test built on it
// could not fail.
func TestCheckRefusesEachRule(t *testing.T) {
	tests := []struct {
		name, in string
		want     error
	}{
		{"empty", "", jsonvaluetest.ErrGrammar},
		{"NaN", `[NaN]`, jsonvaluetest.ErrGrammar},
		{"-Infinity", `[-Infinity]`, jsonvaluetest.ErrGrammar},
		{"a second document", `{} {}`, jsonvaluetest.ErrGrammar},
		{"invalid UTF-8 in a string", "[\"\xff\"]", jsonvaluetest.ErrUTF8},
		{"a lone high surrogate", `["\ud800"]`, jsonvaluetest.ErrSurrogate},
		{"a lone high surrogate at the end of a string", `["a\uD800","b"]`, jsonvaluetest.ErrSurrogate},
		{"a lone low surrogate", `["\udc00"]`, jsonvaluetest.ErrSurrogate},
		{"a high surrogate then a letter", `["\ud800\u0041"]`, jsonvaluetest.ErrSurrogate},
		{"a surrogate in a key", `{"\udfff":1}`, jsonvaluetest.ErrSurrogate},
		{"a duplicate key", `{"a":1,"a":2}`, jsonvaluetest.ErrDuplicateKey},
		{"a duplicate key after unescaping", `{"a":1,"\u0061":2}`, jsonvaluetest.ErrDuplicateKey},
		{"a duplicate key deep down", `[{"x":{"b":[],"c":{},"b":null}}]`, jsonvaluetest.ErrDuplicateKey},
		{"513 levels", strings.Repeat("[", 513) + strings.Repeat("]", 513), jsonvaluetest.ErrTooDeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.True(errors.Is(jsonvaluetest.Check([]byte(tt.in)), tt.want)) // the named rule
		})
	}
}

func TestCheckAccepts(t *testing.T) {
	for _, in := range []string{
		`{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`,
		`["\ud83d\ude00","\\ud800","\"\ud800\udc00"]`,
		`{"\\":"\/"}`,
		strings.Repeat("[", 512) + strings.Repeat("]", 512),
		"\t 0.5e-3 \r\n",
		`{"a":{},"b":{}}`,
	} {
		is := is.New(t)
		is.NoErr(jsonvaluetest.Check([]byte(in))) // strict JSON
	}
}

func TestNumbersCompareByExactValue(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{"80", "80.0", true},
		{"80", "8e1", true},
		{"80", "8E+1", true},
		{"80", "800e-1", true},
		{"80", "0.08e3", true},
		{"80", "8e01", true},
		{"0", "-0", true},
		{"0", "0e999999999999999999999", true},
		{"12", "1.2e1", true},
		{"1e999999999999999999999", "10e999999999999999999998", true},
		{"80", "81", false},
		{"80", "-80", false},
		{"80", "8", false},
		{"80", "0.8", false},
		{"1e999999999999999999999", "1e999999999999999999998", false},
		{"1", "1.0000000000000000000000000000001", false},
	}
	for _, tt := range tests {
		is := is.New(t)
		is.Equal(jsonvaluetest.NumbersEqual(tt.a, tt.b), tt.same) // tt.a against tt.b
		is.Equal(jsonvaluetest.NumbersEqual(tt.b, tt.a), tt.same) // and back
	}
}

func TestEqualComparesValuesNotTypes(t *testing.T) {
	decode := func(s string) any {
		v, err := jsonvaluetest.Decode([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		a, b string
		same bool
	}{
		{`{"a":[1,true,null,"x"],"b":{}}`, `{ "b" : {} , "a" : [1.0, true, null, "\u0078"] }`, true},
		{`{"a":1}`, `{"a":true}`, false},
		{`{"a":1}`, `{"a":"1"}`, false},
		{`{"a":null}`, `{}`, false},
		{`[1,2]`, `[2,1]`, false},
		{`[1,2]`, `[1,2,2]`, false},
		{`{"a":1}`, `{"a":1,"b":1}`, false},
		{`true`, `false`, false},
	}
	for _, tt := range tests {
		is := is.New(t)
		is.Equal(jsonvaluetest.Equal(decode(tt.a), decode(tt.b)), tt.same) // tt.a against tt.b
	}
}
