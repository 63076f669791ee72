// Package jsonvalue reads exactly one JSON document (RFC 8259) under the
// strict rules of protocol 1.0, and compares documents as JSON values.
//
// # What it refuses
//
// The reading is JSON v2's [jsontext] with its default, strict options,
// which refuse what encoding/json silently accepts or repairs:
//
//   - bytes that are not valid UTF-8, anywhere;
//   - an escaped lone surrogate such as "\ud800" (it cannot be UTF-8);
//   - a duplicate name in any object at any depth, names compared after
//     unescaping, so "a" and "\u0061" are the same name;
//   - NaN, Infinity and -Infinity, which are not JSON.
//
// This package adds: anything but white space after the document, and
// nesting deeper than [MaxDepth] levels (jsontext allows 10,000).
//
// # What it keeps
//
// A parsed [Value] keeps object members in document order and numbers as their
// exact literal text, so no value is lost to a binary float. [Equal] and
// [Diff] compare numbers by exact decimal value ("80" equals "80.0" and
// "8e1"), and never equate a number with a boolean or a string.
//
// # Its messages
//
// An [Error] names a byte offset and a rule, never the document's content,
// so it is safe to show whatever the input held; jsontext's own messages
// quote the input. The rule and offset are the protocol's since 1.0 (the
// stdio answer to a request that is not strict JSON carries them), and
// jsontext reports other offsets and other words, so when jsontext refuses
// a document, [locate] reads it again by RFC 8259's grammar to name the
// first rule broken where 1.0 named it. testdata/compat.txt pins the
// answer for 6,929 inputs.
package jsonvalue

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
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
	start := skipSpace(data, 0)
	if start == len(data) {
		return Value{}, &Error{Offset: start, Reason: "empty input"}
	}
	b := builder{dec: jsontext.NewDecoder(bytes.NewBuffer(data)), data: data}
	v, err := b.value(0)
	if err == nil {
		if end := skipSpace(data, int(b.dec.InputOffset())); end != len(data) {
			return Value{}, &Error{Offset: end, Reason: "data after the JSON document"}
		}
		return v, nil
	}
	var e *Error
	if errors.As(err, &e) {
		return Value{}, e // a rule of this package's, at its place
	}
	if errors.Is(err, jsontext.ErrDuplicateName) {
		return Value{}, &Error{Offset: b.next(), Reason: "duplicate key"}
	}
	if e := locate(data); e != nil {
		return Value{}, e
	}
	// jsontext refused what the 1.0 grammar accepts: never seen (the
	// corpus pins it), and refused all the same, at jsontext's offset.
	var se *jsontext.SyntacticError
	offset := 0
	if errors.As(err, &se) {
		offset = int(se.ByteOffset)
	}
	return Value{}, &Error{Offset: offset, Reason: "invalid JSON"}
}

// builder builds the tree from jsontext's tokens.
type builder struct {
	dec  *jsontext.Decoder
	data []byte
	// last is the decoder's offset before the token being read.
	last int
}

// next is the offset of the token after the last one read: past white
// space and the ',' or ':' that jsontext reads with it.
func (b *builder) next() int {
	i := b.last
	for i < len(b.data) {
		switch b.data[i] {
		case ' ', '\t', '\n', '\r', ',', ':':
			i++
		default:
			return i
		}
	}
	return i
}

func (b *builder) token() (jsontext.Token, error) {
	b.last = int(b.dec.InputOffset())
	return b.dec.ReadToken()
}

func (b *builder) value(depth int) (Value, error) {
	b.last = int(b.dec.InputOffset())
	switch b.dec.PeekKind() {
	case '{', '[':
		if depth+1 > MaxDepth {
			return Value{}, &Error{Offset: b.next(), Reason: "nesting deeper than " + strconv.Itoa(MaxDepth) + " levels"}
		}
	}
	tok, err := b.token()
	if err != nil {
		return Value{}, err
	}
	switch tok.Kind() {
	case 'n':
		return Value{Kind: Null}, nil
	case 't':
		return Value{Kind: Bool, Bool: true}, nil
	case 'f':
		return Value{Kind: Bool}, nil
	case '"':
		return Value{Kind: String, Text: tok.String()}, nil
	case '0':
		return Value{Kind: Number, Text: tok.String()}, nil
	case '[':
		v := Value{Kind: Array, Items: []Value{}}
		for b.dec.PeekKind() != ']' {
			item, err := b.value(depth + 1)
			if err != nil {
				return Value{}, err
			}
			v.Items = append(v.Items, item)
		}
		if _, err := b.token(); err != nil {
			return Value{}, err
		}
		return v, nil
	case '{':
		v := Value{Kind: Object, Members: []Member{}}
		for b.dec.PeekKind() != '}' {
			name, err := b.token()
			if err != nil {
				return Value{}, err
			}
			key := name.String() // before the next read voids the token
			val, err := b.value(depth + 1)
			if err != nil {
				return Value{}, err
			}
			v.Members = append(v.Members, Member{Key: key, Value: val})
		}
		if _, err := b.token(); err != nil {
			return Value{}, err
		}
		return v, nil
	}
	return Value{}, fmt.Errorf("unexpected token kind %v", tok.Kind())
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}
