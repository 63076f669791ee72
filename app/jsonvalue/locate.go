package jsonvalue

import (
	"unicode/utf16"
	"unicode/utf8"
)

// locate reads data again by RFC 8259's grammar, building nothing, and
// returns the first rule it breaks, at the offset protocol 1.0 names, or
// nil when the grammar holds. It runs only once jsontext has refused data;
// duplicate names and depth are the builder's to report (the builder
// stops at the 513th level before jsontext reads past it, so a fault
// jsontext reports lies before any).
func locate(data []byte) *Error {
	l := locator{data: data}
	l.space()
	if e := l.value(); e != nil {
		return e
	}
	l.space()
	if l.pos != len(l.data) {
		return l.fail("data after the JSON document")
	}
	return nil
}

type locator struct {
	data []byte
	pos  int
}

func (l *locator) fail(reason string) *Error {
	return &Error{Offset: l.pos, Reason: reason}
}

func (l *locator) space() { l.pos = skipSpace(l.data, l.pos) }

// at reports whether the byte at the position is c.
func (l *locator) at(c byte) bool { return l.pos < len(l.data) && l.data[l.pos] == c }

func (l *locator) value() *Error {
	if l.pos == len(l.data) {
		return l.fail("unexpected end of input")
	}
	switch c := l.data[l.pos]; {
	case c == '{':
		return l.object()
	case c == '[':
		return l.array()
	case c == '"':
		return l.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return l.number()
	case c == 't':
		return l.literal("true")
	case c == 'f':
		return l.literal("false")
	case c == 'n':
		return l.literal("null")
	}
	return l.fail("unexpected character")
}

func (l *locator) literal(word string) *Error {
	if len(l.data)-l.pos < len(word) || string(l.data[l.pos:l.pos+len(word)]) != word {
		return l.fail("invalid literal")
	}
	l.pos += len(word)
	return nil
}

func (l *locator) object() *Error {
	l.pos++ // '{'
	l.space()
	if l.at('}') {
		l.pos++
		return nil
	}
	for {
		l.space()
		if !l.at('"') {
			return l.fail("expected a string key")
		}
		if e := l.str(); e != nil {
			return e
		}
		l.space()
		if !l.at(':') {
			return l.fail("expected ':' after a key")
		}
		l.pos++
		l.space()
		if e := l.value(); e != nil {
			return e
		}
		l.space()
		switch {
		case l.pos == len(l.data):
			return l.fail("unexpected end of input in an object")
		case l.at(','):
			l.pos++
		case l.at('}'):
			l.pos++
			return nil
		default:
			return l.fail("expected ',' or '}' in an object")
		}
	}
}

func (l *locator) array() *Error {
	l.pos++ // '['
	l.space()
	if l.at(']') {
		l.pos++
		return nil
	}
	for {
		l.space()
		if e := l.value(); e != nil {
			return e
		}
		l.space()
		switch {
		case l.pos == len(l.data):
			return l.fail("unexpected end of input in an array")
		case l.at(','):
			l.pos++
		case l.at(']'):
			l.pos++
			return nil
		default:
			return l.fail("expected ',' or ']' in an array")
		}
	}
}

// str reads a string from its opening quote.
func (l *locator) str() *Error {
	l.pos++ // opening quote
	for {
		if l.pos == len(l.data) {
			return l.fail("unterminated string")
		}
		c := l.data[l.pos]
		switch {
		case c == '"':
			l.pos++
			return nil
		case c < 0x20:
			return l.fail("control character in a string")
		case c == '\\':
			if e := l.escape(); e != nil {
				return e
			}
		case c < utf8.RuneSelf:
			l.pos++
		default:
			r, size := utf8.DecodeRune(l.data[l.pos:])
			if r == utf8.RuneError && size <= 1 {
				return l.fail("invalid UTF-8")
			}
			l.pos += size
		}
	}
}

// escape reads one escape sequence from its backslash.
func (l *locator) escape() *Error {
	if l.pos+1 >= len(l.data) {
		return l.fail("unterminated escape")
	}
	switch l.data[l.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		l.pos += 2
		return nil
	case 'u':
		return l.unicode()
	}
	return l.fail("invalid escape")
}

// unicode reads one \uXXXX escape, or a surrogate pair of them.
func (l *locator) unicode() *Error {
	r1, e := l.hex4()
	if e != nil {
		return e
	}
	if !utf16.IsSurrogate(r1) {
		return nil
	}
	if r1 >= 0xDC00 {
		return l.fail("lone low surrogate")
	}
	if l.pos+1 >= len(l.data) || l.data[l.pos] != '\\' || l.data[l.pos+1] != 'u' {
		return l.fail("lone high surrogate")
	}
	r2, e := l.hex4()
	if e != nil {
		return e
	}
	if utf16.DecodeRune(r1, r2) == utf8.RuneError {
		return l.fail("invalid surrogate pair")
	}
	return nil
}

// hex4 reads `\uXXXX` at the position and returns the code unit.
func (l *locator) hex4() (rune, *Error) {
	if len(l.data)-l.pos < 6 {
		return 0, l.fail("short \\u escape")
	}
	var r rune
	for _, c := range l.data[l.pos+2 : l.pos+6] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, l.fail("invalid \\u escape")
		}
		r = r<<4 | rune(d)
	}
	l.pos += 6
	return r, nil
}

// number reads a number by RFC 8259.
func (l *locator) number() *Error {
	if l.at('-') {
		l.pos++
	}
	switch {
	case l.at('0'):
		l.pos++
	case l.pos < len(l.data) && l.data[l.pos] >= '1' && l.data[l.pos] <= '9':
		l.digits()
	default:
		return l.fail("invalid number")
	}
	if l.at('.') {
		l.pos++
		if l.digits() == 0 {
			return l.fail("invalid number")
		}
	}
	if l.at('e') || l.at('E') {
		l.pos++
		if l.at('+') || l.at('-') {
			l.pos++
		}
		if l.digits() == 0 {
			return l.fail("invalid number")
		}
	}
	return nil
}

func (l *locator) digits() int {
	n := 0
	for l.pos < len(l.data) && l.data[l.pos] >= '0' && l.data[l.pos] <= '9' {
		l.pos++
		n++
	}
	return n
}
