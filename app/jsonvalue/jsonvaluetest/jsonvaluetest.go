// Package jsonvaluetest is an oracle for the strict JSON of protocol 1.0,
// written independently of [jsonvalue] so that tests can hold the two
// against each other, in the manner of net/http/httptest: it is imported by
// tests only.
//
// It leans on [encoding/json] for the grammar and adds, with its own code,
// what encoding/json accepts but the protocol refuses: invalid UTF-8, an
// escaped lone surrogate, a duplicate key at any depth (compared after
// unescaping) and nesting deeper than [MaxDepth]. Numbers are compared by
// exact decimal value with [math/big], never with apd or a float.
//
// [jsonvalue]: https://pkg.go.dev/github.com/metricproof/metricproof/app/jsonvalue
package jsonvaluetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects the protocol
// accepts (the README's "nesting deeper than 512 levels" is refused).
const MaxDepth = 512

// Reasons Check gives; tests compare them.
var (
	ErrGrammar       = errors.New("not JSON (encoding/json refuses it)")
	ErrUTF8          = errors.New("invalid UTF-8")
	ErrSurrogate     = errors.New("an escaped lone surrogate")
	ErrDuplicateKey  = errors.New("a duplicate key")
	ErrTooDeep       = errors.New("nesting deeper than 512 levels")
	errInternalState = errors.New("token stream out of step")
)

// Check returns nil when data is exactly one strict JSON document, else the
// first rule it finds broken (the order is not the protocol's).
func Check(data []byte) error {
	if !utf8.Valid(data) {
		return ErrUTF8
	}
	// json.Valid refuses an empty input, NaN and Infinity, a second
	// document, control characters in strings and every syntax error.
	if !json.Valid(data) {
		return ErrGrammar
	}
	if loneSurrogate(data) {
		return ErrSurrogate
	}
	return keysAndDepth(data)
}

// loneSurrogate scans the string escapes of a document json.Valid accepted
// and reports a \u escape of a surrogate that is not part of a pair.
func loneSurrogate(data []byte) bool {
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !inString {
			inString = c == '"'
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if data[i+1] != 'u' {
				i++ // a one-character escape
				continue
			}
			r := hex4(data[i+2 : i+6])
			i += 5
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return true // a low surrogate first
			case r >= 0xD800 && r <= 0xDBFF:
				if i+6 >= len(data) || data[i+1] != '\\' || data[i+2] != 'u' {
					return true
				}
				if low := hex4(data[i+3 : i+7]); low < 0xDC00 || low > 0xDFFF {
					return true
				}
				i += 6
			}
		}
	}
	return false
}

func hex4(b []byte) rune {
	n, err := strconv.ParseUint(string(b), 16, 32)
	if err != nil {
		panic("jsonvaluetest: json.Valid let a bad \\u escape through")
	}
	return rune(n)
}

// keysAndDepth walks the token stream, refusing a key seen twice in one
// object and nesting past MaxDepth.
func keysAndDepth(data []byte) error {
	type frame struct {
		object  bool
		keys    map[string]bool
		wantKey bool
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return ErrGrammar
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			key, ok := tok.(string)
			if !ok {
				return errInternalState
			}
			if stack[n-1].keys[key] {
				return ErrDuplicateKey
			}
			stack[n-1].keys[key] = true
			stack[n-1].wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) == MaxDepth {
				return ErrTooDeep
			}
			stack = append(stack, &frame{object: tok == json.Delim('{'), keys: map[string]bool{}, wantKey: true})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

// Decode checks data and decodes it as encoding/json does with UseNumber:
// map[string]any, []any, json.Number, string, bool and nil.
func Decode(data []byte) (any, error) {
	if err := Check(data); err != nil {
		return nil, err
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, ErrGrammar
	}
	return v, nil
}

// Equal reports whether two decoded values are the same JSON value: numbers
// by exact decimal value ("80" = "80.0" = "8e1" = "-0" = "0"), strings,
// booleans and null exactly, arrays item by item, objects key by key in any
// order. A number never equals a string or a boolean.
func Equal(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		return ok && NumbersEqual(string(x), string(y))
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !Equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.TypeOf(a) == reflect.TypeOf(b) && a == b
}

// Decimal is a JSON number's exact value: (-1)^Neg × Digits × 10^Exp, with
// Digits free of leading and trailing zeros; zero is Digits "" (and never
// negative).
type Decimal struct {
	Neg    bool
	Digits string
	Exp    *big.Int
}

// ParseNumber reads a JSON number literal exactly. The exponent may be of
// any size, so a hostile literal costs time linear in its length only.
func ParseNumber(lit string) (Decimal, bool) {
	var d Decimal
	s := lit
	if strings.HasPrefix(s, "-") {
		d.Neg = true
		s = s[1:]
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" || strings.Trim(intPart+frac, "0123456789") != "" {
		return Decimal{}, false
	}
	d.Exp = big.NewInt(0)
	if hasExp {
		if _, ok := d.Exp.SetString(strings.TrimPrefix(exp, "+"), 10); !ok {
			return Decimal{}, false
		}
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	d.Exp.Sub(d.Exp, big.NewInt(int64(len(frac))))
	trimmed := strings.TrimRight(digits, "0")
	d.Exp.Add(d.Exp, big.NewInt(int64(len(digits)-len(trimmed))))
	d.Digits = trimmed
	if d.Digits == "" {
		d.Neg = false
		d.Exp.SetInt64(0)
	}
	return d, true
}

// NumbersEqual compares two JSON number literals by exact decimal value.
func NumbersEqual(a, b string) bool {
	x, okX := ParseNumber(a)
	y, okY := ParseNumber(b)
	return okX && okY && x.Neg == y.Neg && x.Digits == y.Digits && x.Exp.Cmp(y.Exp) == 0
}
