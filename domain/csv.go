package domain

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode/utf8"
)

// csvReader reads the strict CSV dialect of the sources (SPEC §4): RFC 4180
// quoting, LF or CRLF line ends (a lone CR is a fault), empty lines skipped,
// nothing trimmed, no byte order mark, valid UTF-8 only. No field a source
// may hold can contain a quote, a comma or a line break, so a quoted field
// that holds a line break is refused rather than spanning lines; that keeps
// every record on one physical line and every line number exact.
//
// The reader keeps one string copy of the file (a plain conversion, no
// unsafe); fields are substrings of it, so reading allocates little more.
//
// Most files hold no quote, no carriage return and no byte outside ASCII;
// for them every rule above but the field split is moot, and the reader
// takes a fast path that only finds commas and line feeds (plain).
type csvReader struct {
	file   string
	text   string
	pos    int
	line   int // 1-based line of the byte at pos
	fields []string
	plain  bool
}

func newCSVReader(file string, data []byte) *csvReader {
	return &csvReader{file: file, text: string(data), line: 1, plain: plainASCII(data)}
}

// plainASCII reports whether data holds no quote, no carriage return and
// no byte of 0x80 or above: CSV with nothing to unquote, no CRLF, and no
// UTF-8 to check.
func plainASCII(data []byte) bool {
	if bytes.IndexByte(data, '"') >= 0 || bytes.IndexByte(data, '\r') >= 0 {
		return false
	}
	i := 0
	for ; i+8 <= len(data); i += 8 {
		if binary.LittleEndian.Uint64(data[i:])&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(data); i++ {
		if data[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// nextPlain is next for a plainASCII file: the fields of the next
// nonempty line, split at commas.
func (r *csvReader) nextPlain() (fields []string, line int, ok bool, err error) {
	for r.pos < len(r.text) && r.text[r.pos] == '\n' {
		r.pos++
		r.line++
	}
	if r.pos == len(r.text) {
		return nil, r.line, false, nil
	}
	rest := r.text[r.pos:]
	end := strings.IndexByte(rest, '\n')
	if end < 0 {
		end = len(rest)
		r.pos = len(r.text)
	} else {
		r.pos += end + 1
	}
	row := rest[:end]
	line = r.line
	r.line++
	r.fields = r.fields[:0]
	for {
		comma := strings.IndexByte(row, ',')
		if comma < 0 {
			r.fields = append(r.fields, row)
			return r.fields, line, true, nil
		}
		r.fields = append(r.fields, row[:comma])
		row = row[comma+1:]
	}
}

func (r *csvReader) fault(column int, reason string) *DataError {
	return &DataError{File: r.file, Line: r.line, Column: column, Reason: reason}
}

// next reads the next nonempty record. It returns ok false at the end of
// the file. The returned slice is reused by the following call.
func (r *csvReader) next() (fields []string, line int, ok bool, err error) {
	if r.plain {
		return r.nextPlain()
	}
	if r.pos == 0 && len(r.text) >= 3 && r.text[:3] == "\xEF\xBB\xBF" {
		return nil, r.line, false, r.fault(1, "starts with a byte order mark; sources are UTF-8 without one")
	}
	for {
		if r.pos == len(r.text) {
			return nil, r.line, false, nil
		}
		switch r.text[r.pos] {
		case '\n':
			r.pos++
			r.line++
			continue
		case '\r':
			if r.pos+1 < len(r.text) && r.text[r.pos+1] == '\n' {
				r.pos += 2
				r.line++
				continue
			}
			return nil, r.line, false, r.fault(1, "carriage return without a line feed; lines end in LF or CRLF")
		}
		break
	}
	line = r.line
	r.fields = r.fields[:0]
	for {
		column := len(r.fields) + 1
		var field string
		if r.pos < len(r.text) && r.text[r.pos] == '"' {
			field, err = r.quoted(column)
		} else {
			field, err = r.unquoted(column)
		}
		if err != nil {
			return nil, line, false, err
		}
		r.fields = append(r.fields, field)
		if r.pos == len(r.text) {
			return r.fields, line, true, nil
		}
		switch r.text[r.pos] {
		case ',':
			r.pos++
		case '\n':
			r.pos++
			r.line++
			return r.fields, line, true, nil
		case '\r':
			if r.pos+1 < len(r.text) && r.text[r.pos+1] == '\n' {
				r.pos += 2
				r.line++
				return r.fields, line, true, nil
			}
			return nil, line, false, r.fault(column, "carriage return without a line feed; lines end in LF or CRLF")
		default:
			return nil, line, false, r.fault(column, "text after a closing quote")
		}
	}
}

func (r *csvReader) unquoted(column int) (string, error) {
	start := r.pos
	for r.pos < len(r.text) {
		c := r.text[r.pos]
		switch {
		case c == ',' || c == '\n' || c == '\r':
			return r.text[start:r.pos], nil
		case c == '"':
			return "", r.fault(column, "quote inside an unquoted field")
		case c >= utf8.RuneSelf:
			if err := r.rune(column); err != nil {
				return "", err
			}
		default:
			r.pos++
		}
	}
	return r.text[start:r.pos], nil
}

func (r *csvReader) quoted(column int) (string, error) {
	r.pos++ // opening quote
	start := r.pos
	var unescaped []byte // only when the field holds a doubled quote
	for {
		if r.pos == len(r.text) {
			return "", r.fault(column, "quoted field is not closed")
		}
		c := r.text[r.pos]
		switch {
		case c == '"':
			if r.pos+1 < len(r.text) && r.text[r.pos+1] == '"' {
				unescaped = append(unescaped, r.text[start:r.pos+1]...)
				r.pos += 2
				start = r.pos
				continue
			}
			field := r.text[start:r.pos]
			if unescaped != nil {
				field = string(append(unescaped, field...))
			}
			r.pos++
			return field, nil
		case c == '\n' || c == '\r':
			return "", r.fault(column, "line break inside a quoted field")
		case c >= utf8.RuneSelf:
			if err := r.rune(column); err != nil {
				return "", err
			}
		default:
			r.pos++
		}
	}
}

// rune steps over one multi-byte character, refusing invalid UTF-8.
func (r *csvReader) rune(column int) error {
	c, size := utf8.DecodeRuneInString(r.text[r.pos:])
	if c == utf8.RuneError && size <= 1 {
		return r.fault(column, "invalid UTF-8")
	}
	r.pos += size
	return nil
}
