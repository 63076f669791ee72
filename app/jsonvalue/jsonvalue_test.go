package jsonvalue_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/app/jsonvalue"
	"github.com/metricproof/metricproof/app/jsonvalue/jsonvaluetest"
)

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name, in, reason string
	}{
		{"empty", "", "empty input"},
		{"only space", " \n\t\r", "empty input"},
		{"NaN", `{"a":NaN}`, "unexpected character"},
		{"Infinity", `[Infinity]`, "unexpected character"},
		{"-Infinity", `[-Infinity]`, "invalid number"},
		{"second document", `{} {}`, "data after the JSON document"},
		{"trailing garbage", `{}x`, "data after the JSON document"},
		{"duplicate key at top", `{"a":1,"a":2}`, "duplicate key"},
		{"duplicate key deep", `{"a":[{"b":{"c":1,"c":1}}]}`, "duplicate key"},
		{"duplicate key after unescaping", `{"a":1,"\u0061":2}`, "duplicate key"},
		{"duplicate key in a large object", `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k3":3}`, "duplicate key"},
		{"invalid UTF-8 in a string", "[\"\xff\"]", "invalid UTF-8"},
		{"invalid UTF-8 outside a string", "[1]\xff", "data after the JSON document"},
		{"overlong encoding", "[\"\xc0\xaf\"]", "invalid UTF-8"},
		{"lone high surrogate", `["\ud800"]`, "lone high surrogate"},
		{"lone low surrogate", `["\udc00"]`, "lone low surrogate"},
		{"high surrogate then non-surrogate", `["\ud800\u0041"]`, "invalid surrogate pair"},
		{"control character", "[\"a\tb\"]", "control character in a string"},
		{"single quotes", `{'a':1}`, "expected a string key"},
		{"trailing comma", `[1,]`, "unexpected character"},
		{"leading zero", `[01]`, "expected ',' or ']' in an array"},
		{"plus sign", `[+1]`, "unexpected character"},
		{"bare point", `[1.]`, "invalid number"},
		{"bad escape", `["\x"]`, "invalid escape"},
		{"unterminated", `{"a":"b`, "unterminated string"},
		{"too deep", strings.Repeat("[", jsonvalue.MaxDepth+1) + strings.Repeat("]", jsonvalue.MaxDepth+1), "nesting deeper than 512 levels"},
		{"bad literal", `[tru]`, "invalid literal"},
		{"byte order mark", "\xEF\xBB\xBF{}", "unexpected character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			_, err := jsonvalue.Parse([]byte(tt.in))
			var e *jsonvalue.Error
			is.True(errors.As(err, &e))
			is.Equal(e.Reason, tt.reason)
		})
	}
}

func TestParseKeepsOrderAndLiterals(t *testing.T) {
	is := is.New(t)
	v, err := jsonvalue.Parse([]byte(` {"z":1.50,"a":[true,false,null,"\u00e9\ud83d\ude00"],"m":{}} `))
	is.NoErr(err)
	is.Equal(v.Kind, jsonvalue.Object)
	is.Equal(len(v.Members), 3)
	is.Equal(v.Members[0].Key, "z")
	is.Equal(v.Members[0].Value.Text, "1.50") // the literal, not a float
	a, ok := v.Get("a")
	is.True(ok)
	is.Equal(a.Items[3].Text, "é😀")
	_, ok = v.Get("missing")
	is.True(!ok)
	deep := strings.Repeat("[", jsonvalue.MaxDepth) + strings.Repeat("]", jsonvalue.MaxDepth)
	_, err = jsonvalue.Parse([]byte(deep))
	is.NoErr(err) // exactly MaxDepth levels is allowed
}

func TestEqual(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, true},
		{`80`, `80.0`, true},
		{`80`, `8e1`, true},
		{`0`, `-0`, true},
		{`1e999999999999`, `1e999999999999`, true},
		{`1e999999999999`, `2e999999999999`, false},
		{`80`, `800e-1`, true},
		{`80`, `0.08E+3`, true},
		{`-0`, `0.000e-7`, true},
		{`0`, `0e999999999999999999999999`, true},
		{`-1`, `1`, false},
		{`0.1`, `1e-1`, true},
		{`12`, `12.0000001`, false},
		// Past any fixed exponent range: compared exactly all the same.
		{`80`, `80.` + strings.Repeat("0", 100_010), true},
		{`80.` + strings.Repeat("0", 100_010) + `1`, `80`, false},
		{`1e99999999999999999999999`, `10e99999999999999999999998`, true},
		{`1e99999999999999999999999`, `1e99999999999999999999998`, false},
		{`1e-99999999999999999999999`, `0.1e-99999999999999999999998`, true},
		{`1e-99999999999999999999999`, `0`, false},
		{`0.` + strings.Repeat("0", 100_010) + `8e100013`, `800`, true},
		{`true`, `1`, false},
		{`"1"`, `1`, false},
		{`null`, `false`, false},
		{`[1,2]`, `[2,1]`, false},
		{`[1,2]`, `[1,2,3]`, false},
		{`{"a":1}`, `{"a":1,"b":1}`, false},
		{`{"a":1,"c":1}`, `{"a":1,"b":1}`, false},
		{`"é"`, `"\u00e9"`, true},
	}
	for _, tt := range tests {
		t.Run(brief(tt.a)+" vs "+brief(tt.b), func(t *testing.T) {
			is := is.New(t)
			a, err := jsonvalue.Parse([]byte(tt.a))
			is.NoErr(err)
			b, err := jsonvalue.Parse([]byte(tt.b))
			is.NoErr(err)
			is.Equal(jsonvalue.Equal(a, b), tt.same) // tt.a vs tt.b
			is.Equal(jsonvalue.Equal(b, a), tt.same) // symmetric
		})
	}
}

// brief shortens a literal for a subtest's name.
func brief(s string) string {
	if len(s) > 24 {
		return fmt.Sprintf("%s…(%d bytes)", s[:12], len(s))
	}
	return s
}

// FuzzParse checks the parser against the independent oracle of
// jsonvaluetest (encoding/json plus its own checks): both accept exactly the
// same documents, what is accepted decodes to encoding/json's value, and a
// refusal names an offset inside the input and one of the package's rules.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"request_id":"i1","tool":"inspect_inputs","arguments":{}}`,
		`{"a":[1,-0.5e+3,"x\u00e9\"",true,false,null],"b":{"c":{}}}`,
		`{"a":1,"a":2}`, `["\ud83d\ude00"]`, `["\ud800"]`, `[NaN]`, `{} {}`, "[\"\xff\"]", `[1e400]`,
		`["\ud800\u0041"]`, `["a\udc00"]`, `{"a":1,"\u0061":2}`, `{"\ud83d\ude00":1,"\ud83d\ude01":2}`,
		strings.Repeat("[", 512) + strings.Repeat("]", 512), strings.Repeat("[", 513) + strings.Repeat("]", 513),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := jsonvalue.Parse(data)
		// The oracle is independent code: encoding/json's grammar plus its
		// own checks for UTF-8, surrogates, duplicate keys and depth.
		if oracle := jsonvaluetest.Check(data); (err == nil) != (oracle == nil) {
			t.Fatalf("jsonvalue says %v, the oracle %v, for %q", err, oracle, data)
		}
		if err == nil {
			var want any
			d := json.NewDecoder(bytes.NewReader(data))
			d.UseNumber()
			if err := d.Decode(&want); err != nil {
				t.Fatalf("encoding/json cannot decode %q: %v", data, err)
			}
			if got := plain(v); !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded %q as %#v, encoding/json as %#v", data, got, want)
			}
			if !jsonvalue.Equal(v, v) {
				t.Fatalf("value not equal to itself: %q", data)
			}
			return
		}
		var e *jsonvalue.Error
		if !errors.As(err, &e) || e.Offset < 0 || e.Offset > len(data) {
			t.Fatalf("error %v has no offset inside the input", err)
		}
		if !slices.Contains(reasons, e.Reason) {
			t.Fatalf("error %v names no rule of the package's", err)
		}
	})
}

// reasons are every rule Parse names.
var reasons = []string{"empty input", "data after the JSON document", "unexpected end of input", "unexpected character",
	"invalid literal", "nesting deeper than 512 levels", "expected a string key", "duplicate key", "expected ':' after a key",
	"unexpected end of input in an object", "expected ',' or '}' in an object", "unexpected end of input in an array",
	"expected ',' or ']' in an array", "unterminated string", "control character in a string", "invalid UTF-8",
	"unterminated escape", "invalid escape", "lone low surrogate", "lone high surrogate", "invalid surrogate pair",
	"short \\u escape", "invalid \\u escape", "invalid number"}

// plain converts a Value to what encoding/json decodes with UseNumber.
func plain(v jsonvalue.Value) any {
	switch v.Kind {
	case jsonvalue.Bool:
		return v.Bool
	case jsonvalue.Number:
		return json.Number(v.Text)
	case jsonvalue.String:
		return v.Text
	case jsonvalue.Array:
		out := make([]any, len(v.Items))
		for i, item := range v.Items {
			out[i] = plain(item)
		}
		return out
	case jsonvalue.Object:
		out := make(map[string]any, len(v.Members))
		for _, m := range v.Members {
			out[m.Key] = plain(m.Value)
		}
		return out
	}
	return nil
}
