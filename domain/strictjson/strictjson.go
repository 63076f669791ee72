// Package strictjson parses exactly one JSON document (RFC 8259) under the
// strict rules of protocol 1.0, and compares documents as JSON values.
//
// # What it refuses
//
// Everything [encoding/json] refuses, and also what it silently accepts or
// repairs:
//
//   - bytes that are not valid UTF-8, anywhere (encoding/json replaces them);
//   - an escaped lone surrogate such as "\ud800" (it cannot be UTF-8);
//   - a duplicate key in any object at any depth, keys compared after
//     unescaping, so "a" and "\u0061" are the same key;
//   - anything but white space after the document (a second document);
//   - nesting deeper than [MaxDepth] levels, so hostile input cannot grow the
//     stack without bound.
//
// NaN, Infinity and -Infinity are not JSON, so they fail as bad literals.
//
// # What it keeps
//
// A parsed [Value] keeps object members in document order and numbers as their
// exact literal text, so no value is lost to a binary float. [Equal] and
// [Diff] compare numbers by exact decimal value ("80" equals "80.0" and
// "8e1"), and never equate a number with a boolean or a string.
//
// Error messages name a byte offset and a rule, never the document's content,
// so they are safe to show whatever the input held.
package strictjson

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects that Parse accepts.
const MaxDepth = 512

// Kind names the type of a JSON value.
type Kind uint8

// The six JSON kinds.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

// String returns the JSON name of the kind.
func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	case Object:
		return "object"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one parsed JSON value.
type Value struct {
	Kind Kind
	// Bool holds a boolean's value.
	Bool bool
	// Text holds a string's unescaped contents, or a number's literal text.
	Text string
	// Items holds an array's elements in order.
	Items []Value
	// Members holds an object's members in document order; keys are unique.
	Members []Member
}

// Member is one key and value of an object.
type Member struct {
	Key   string
	Value Value
}

// Get returns the member of an object named key.
func (v Value) Get(key string) (Value, bool) {
	for _, m := range v.Members {
		if m.Key == key {
			return m.Value, true
		}
	}
	return Value{}, false
}

// Error reports the first rule a document broke and the byte offset where
// it broke it.
type Error struct {
	Offset int
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s at byte %d", e.Reason, e.Offset)
}

// Parse parses data as exactly one strict JSON document.
func Parse(data []byte) (Value, error) {
	p := parser{data: data}
	p.skipSpace()
	if p.pos == len(p.data) {
		return Value{}, p.fail("empty input")
	}
	v, err := p.value(0)
	if err != nil {
		return Value{}, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return Value{}, p.fail("data after the JSON document")
	}
	return v, nil
}

type parser struct {
	data []byte
	pos  int
}

func (p *parser) fail(reason string) error {
	return &Error{Offset: p.pos, Reason: reason}
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (Value, error) {
	if p.pos == len(p.data) {
		return Value{}, p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str()
		return Value{Kind: String, Text: s}, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return Value{Kind: Bool, Bool: true}, p.literal("true")
	case c == 'f':
		return Value{Kind: Bool}, p.literal("false")
	case c == 'n':
		return Value{Kind: Null}, p.literal("null")
	}
	return Value{}, p.fail("unexpected character")
}

func (p *parser) literal(word string) error {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return p.fail("invalid literal")
	}
	p.pos += len(word)
	return nil
}

func (p *parser) object(depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, p.fail("nesting deeper than " + strconv.Itoa(MaxDepth) + " levels")
	}
	p.pos++ // '{'
	v := Value{Kind: Object, Members: []Member{}}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	var seen map[string]struct{}
	for {
		p.skipSpace()
		if p.pos == len(p.data) || p.data[p.pos] != '"' {
			return Value{}, p.fail("expected a string key")
		}
		keyAt := p.pos
		key, err := p.str()
		if err != nil {
			return Value{}, err
		}
		if duplicateKey(v.Members, &seen, key) {
			return Value{}, &Error{Offset: keyAt, Reason: "duplicate key"}
		}
		p.skipSpace()
		if p.pos == len(p.data) || p.data[p.pos] != ':' {
			return Value{}, p.fail("expected ':' after a key")
		}
		p.pos++
		p.skipSpace()
		val, err := p.value(depth)
		if err != nil {
			return Value{}, err
		}
		v.Members = append(v.Members, Member{Key: key, Value: val})
		p.skipSpace()
		if p.pos == len(p.data) {
			return Value{}, p.fail("unexpected end of input in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return v, nil
		default:
			return Value{}, p.fail("expected ',' or '}' in an object")
		}
	}
}

// duplicateKey reports whether key is already among members. Small objects
// are scanned; a map is built only once an object grows past a few keys.
func duplicateKey(members []Member, seen *map[string]struct{}, key string) bool {
	const scanLimit = 8
	if len(members) < scanLimit {
		for _, m := range members {
			if m.Key == key {
				return true
			}
		}
		return false
	}
	if *seen == nil {
		*seen = make(map[string]struct{}, 2*len(members))
		for _, m := range members {
			(*seen)[m.Key] = struct{}{}
		}
	}
	if _, ok := (*seen)[key]; ok {
		return true
	}
	(*seen)[key] = struct{}{}
	return false
}

func (p *parser) array(depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, p.fail("nesting deeper than " + strconv.Itoa(MaxDepth) + " levels")
	}
	p.pos++ // '['
	v := Value{Kind: Array, Items: []Value{}}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	for {
		p.skipSpace()
		item, err := p.value(depth)
		if err != nil {
			return Value{}, err
		}
		v.Items = append(v.Items, item)
		p.skipSpace()
		if p.pos == len(p.data) {
			return Value{}, p.fail("unexpected end of input in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return v, nil
		default:
			return Value{}, p.fail("expected ',' or ']' in an array")
		}
	}
}

// str parses a string starting at the opening quote and returns its
// unescaped contents.
func (p *parser) str() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	// Fast path: no escapes, only printable ASCII.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := string(p.data[start:p.pos])
			p.pos++
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		p.pos++
	}
	buf := append([]byte(nil), p.data[start:p.pos]...)
	for {
		if p.pos == len(p.data) {
			return "", p.fail("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(buf), nil
		case c < 0x20:
			return "", p.fail("control character in a string")
		case c == '\\':
			r, err := p.escape()
			if err != nil {
				return "", err
			}
			buf = utf8.AppendRune(buf, r)
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.fail("invalid UTF-8")
			}
			buf = append(buf, p.data[p.pos:p.pos+size]...)
			p.pos += size
		}
	}
}

// escape parses one escape sequence starting at the backslash.
func (p *parser) escape() (rune, error) {
	if p.pos+1 >= len(p.data) {
		return 0, p.fail("unterminated escape")
	}
	var r rune
	switch p.data[p.pos+1] {
	case '"', '\\', '/':
		r = rune(p.data[p.pos+1])
	case 'b':
		r = '\b'
	case 'f':
		r = '\f'
	case 'n':
		r = '\n'
	case 'r':
		r = '\r'
	case 't':
		r = '\t'
	case 'u':
		return p.unicode()
	default:
		return 0, p.fail("invalid escape")
	}
	p.pos += 2
	return r, nil
}

// unicode parses one \uXXXX escape, or a surrogate pair of them.
func (p *parser) unicode() (rune, error) {
	r1, err := p.hex4()
	if err != nil {
		return 0, err
	}
	if !utf16.IsSurrogate(r1) {
		return r1, nil
	}
	if r1 >= 0xDC00 {
		return 0, p.fail("lone low surrogate")
	}
	if p.pos+1 >= len(p.data) || p.data[p.pos] != '\\' || p.data[p.pos+1] != 'u' {
		return 0, p.fail("lone high surrogate")
	}
	r2, err := p.hex4()
	if err != nil {
		return 0, err
	}
	r := utf16.DecodeRune(r1, r2)
	if r == utf8.RuneError {
		return 0, p.fail("invalid surrogate pair")
	}
	return r, nil
}

// hex4 parses `\uXXXX` at p.pos and returns the code unit.
func (p *parser) hex4() (rune, error) {
	if len(p.data)-p.pos < 6 {
		return 0, p.fail("short \\u escape")
	}
	var r rune
	for _, c := range p.data[p.pos+2 : p.pos+6] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, p.fail("invalid \\u escape")
		}
		r = r<<4 | rune(d)
	}
	p.pos += 6
	return r, nil
}

// number parses a number per RFC 8259 and keeps its literal text.
func (p *parser) number() (Value, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(p.data) && p.data[p.pos] == '0':
		p.pos++
	case p.pos < len(p.data) && p.data[p.pos] >= '1' && p.data[p.pos] <= '9':
		p.digits()
	default:
		return Value{}, p.fail("invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if p.digits() == 0 {
			return Value{}, p.fail("invalid number")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return Value{}, p.fail("invalid number")
		}
	}
	return Value{Kind: Number, Text: string(p.data[start:p.pos])}, nil
}

func (p *parser) digits() int {
	n := 0
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
		n++
	}
	return n
}

// Equal reports whether a and b are the same JSON value: objects with the same
// keys (in any order) and equal values, arrays equal item by item, strings
// equal after unescaping, numbers equal by exact decimal value.
func Equal(a, b Value) bool {
	_, same := Diff(a, b)
	return same
}

// Diff compares got against want as JSON values. When they differ it returns
// the path of the first difference, written with want's keys and indexes
// (such as "metrics.conversion.rate_places"), so the path never echoes text
// that only got holds. The path of the root is "$".
func Diff(want, got Value) (path string, same bool) {
	return diff(want, got, "$")
}

func diff(want, got Value, path string) (string, bool) {
	if want.Kind != got.Kind {
		return path, false
	}
	switch want.Kind {
	case Null:
		return "", true
	case Bool:
		if want.Bool != got.Bool {
			return path, false
		}
	case String:
		if want.Text != got.Text {
			return path, false
		}
	case Number:
		if !numbersEqual(want.Text, got.Text) {
			return path, false
		}
	case Array:
		for i, item := range want.Items {
			if i >= len(got.Items) {
				return join(path, strconv.Itoa(i)), false
			}
			if p, ok := diff(item, got.Items[i], join(path, strconv.Itoa(i))); !ok {
				return p, false
			}
		}
		if len(got.Items) != len(want.Items) {
			return path, false
		}
	case Object:
		for _, m := range want.Members {
			g, ok := got.Get(m.Key)
			if !ok {
				return join(path, m.Key), false
			}
			if p, ok := diff(m.Value, g, join(path, m.Key)); !ok {
				return p, false
			}
		}
		if len(got.Members) != len(want.Members) {
			return path, false
		}
	}
	return "", true
}

func join(path, part string) string {
	if path == "$" {
		return part
	}
	return path + "." + part
}

// numbersEqual compares two JSON number literals by exact decimal value,
// with no limit on their digits or exponents: each is brought to the one
// form sign × digits × 10^exponent whose digits have no leading or
// trailing zero, and the forms are compared. Every zero is the same zero,
// -0 included.
func numbersEqual(a, b string) bool {
	if a == b {
		return true
	}
	x, y := normalize(a), normalize(b)
	if x.digits == "" || y.digits == "" {
		return x.digits == y.digits // zero equals only zero
	}
	return x.negative == y.negative && x.digits == y.digits && x.exponent.Cmp(y.exponent) == 0
}

// decimal is a number literal in normal form: -?digits × 10^exponent, digits
// without a leading or trailing zero, empty for zero.
type decimal struct {
	negative bool
	digits   string
	exponent *big.Int
}

// normalize brings a literal that Parse accepted to its normal form. The
// exponent is a big.Int, so no literal is beyond its range.
func normalize(lit string) decimal {
	var d decimal
	if strings.HasPrefix(lit, "-") {
		d.negative, lit = true, lit[1:]
	}
	mantissa, exp, _ := strings.Cut(strings.ToLower(lit), "e")
	whole, frac, _ := strings.Cut(mantissa, ".")
	d.exponent = new(big.Int)
	if exp != "" {
		d.exponent.SetString(strings.TrimPrefix(exp, "+"), 10) // Parse checked the digits
	}
	// digits × 10^(exponent − len(frac)), then each trailing zero moved
	// into the exponent.
	digits := strings.TrimLeft(whole+frac, "0")
	trimmed := strings.TrimRight(digits, "0")
	shift := int64(len(digits)-len(trimmed)) - int64(len(frac))
	d.exponent.Add(d.exponent, big.NewInt(shift))
	d.digits = trimmed
	return d
}
