package domain

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"unicode/utf8"
)

// The CSV dialect of the sources (protocol §4) is RFC 4180, which
// encoding/csv reads: quoting, LF or CRLF line ends, empty lines skipped,
// nothing trimmed. Four rules of protocol §4 are stricter than encoding/csv,
// which reads all of these into a field: a byte order mark, a carriage
// return without a line feed, bytes that are not UTF-8, and a quoted field
// holding a line break (no field a source may hold can contain one, so
// every record is one physical line and every line number exact). A
// records reader checks those beside encoding/csv, in scan order: the
// fault nearer the start of the line is the one reported, whether it is
// one of these four or one encoding/csv finds (a quote inside an unquoted
// field, text after a closing quote, a quoted field not closed).
//
// A byte order mark is reported by the table and skipped: encoding/csv
// reads the bytes after it. A quoted field holding a line break ends the
// reading of the file, as a quote never closed does (there it is one): past
// it, where fields begin is a guess. After any other fault the next line
// is read.
//
// Most files hold no quote and no carriage return, and are valid UTF-8;
// for them none of the four rules can fail, and nothing is checked beside
// encoding/csv (plain).

const byteOrderMark = "\xEF\xBB\xBF"

// Reasons of the structural faults, and the fixes that always apply.
const (
	reasonBOM        = "starts with a byte order mark"
	fixBOM           = "save the file as UTF-8 without a byte order mark"
	reasonLoneCR     = "carriage return without a line feed; lines end in LF or CRLF"
	reasonBreak      = "line break inside a quoted field"
	reasonUTF8       = "holds a byte that is not UTF-8"
	fixUTF8          = "save the file as UTF-8 (Latin-1 and Windows-1252 exports are not)"
	reasonBareQuote  = "quote inside an unquoted field"
	reasonAfterQuote = "text after a closing quote"
	reasonNotClosed  = "quoted field is not closed"
)

// records reads the records of one CSV source.
type records struct {
	data  []byte // after the byte order mark, if any
	r     *csv.Reader
	plain bool
	// bom is set when the file began with a byte order mark.
	bom bool
	// prev is the offset just past the previous record, and prevLine
	// the line there (counted only when the file is not plain: plain
	// records take their line from FieldPos); began is the offset the
	// last record's read began at.
	prev, prevLine, began int
}

func newRecords(data []byte) *records {
	bom := bytes.HasPrefix(data, []byte(byteOrderMark))
	if bom {
		data = data[len(byteOrderMark):]
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1 // the table counts fields, to name the column
	r.ReuseRecord = true
	return &records{data: data, r: r, plain: plainFile(data), bom: bom, prevLine: 1}
}

// lastLine returns the bytes of the line the last record began on,
// without its line end.
func (rs *records) lastLine() []byte {
	line := rs.data[skipEmptyLines(rs.data, rs.began):]
	if nl := bytes.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	return bytes.TrimSuffix(line, []byte{'\r'})
}

// plainFile reports whether none of the four rules can fail in data (a
// byte order mark already skipped): it holds no quote and no carriage
// return and is valid UTF-8. (utf8.Valid runs 8 bytes at a time over
// ASCII.)
func plainFile(data []byte) bool {
	return bytes.IndexByte(data, '"') < 0 && bytes.IndexByte(data, '\r') < 0 && utf8.Valid(data)
}

// next reads the next nonempty record: its fields and its line. A record
// that breaks a rule of the CSV dialect comes back as a fault, without
// fields. done is set at the end of the input, and with a fault that ends
// the reading (a quote not closed on its line). The returned slice is
// reused by the following call.
func (rs *records) next() (fields []string, line int, fault *Fault, done bool) {
	rs.began = rs.prev
	fields, err := rs.r.Read()
	if err == io.EOF {
		if rs.plain {
			return nil, 1 + bytes.Count(rs.data, []byte{'\n'}), nil, true
		}
		// Only empty lines are left, and perhaps a carriage return that
		// encoding/csv drops at the end of the input.
		end := rs.prevLine + bytes.Count(rs.data[rs.prev:], []byte{'\n'})
		if i := len(rs.data) - 1; i >= rs.prev && rs.data[i] == '\r' {
			return nil, end, &Fault{Line: end, Column: 1, Reason: reasonLoneCR}, true
		}
		return nil, end, nil, true
	}
	// encoding/csv returns its *ParseError itself, unwrapped; a type
	// assertion, unlike errors.As, keeps pe off the heap on every record.
	pe, _ := err.(*csv.ParseError)
	if err != nil && pe == nil {
		// Reading a bytes.Reader cannot fail otherwise.
		return nil, rs.prevLine, &Fault{Line: rs.prevLine, Column: 1, Reason: err.Error()}, true
	}
	off := int(rs.r.InputOffset())
	if pe != nil {
		line = pe.StartLine
	} else {
		line, _ = rs.r.FieldPos(0)
	}
	if rs.plain { // encoding/csv refuses nothing in a plain file
		rs.prev = off
		return fields, line, nil, false
	}
	start := skipEmptyLines(rs.data, rs.prev)
	rs.prevLine += bytes.Count(rs.data[rs.prev:off], []byte{'\n'})
	rs.prev = off
	last := rs.prevLine // the line of the record's last byte
	if rs.data[off-1] == '\n' {
		last--
	}
	if pe == nil && !suspect(rs.data[start:off], last > line) {
		return fields, line, nil, false
	}
	// A fault on this record's first line: find the first in scan order.
	first := rs.data[start:]
	if nl := bytes.IndexByte(first, '\n'); nl >= 0 {
		first = first[:nl+1]
	}
	stop, after := len(first), false // how far the own checks may look
	if pe != nil && pe.Line == pe.StartLine {
		switch {
		case errors.Is(pe.Err, csv.ErrBareQuote):
			stop = pe.Column - 1 // the quote
		case errors.Is(pe.Err, csv.ErrQuote):
			stop, after = pe.Column, true // the byte after a closing quote, or the end
		}
	}
	column, reason := scanLine(first, stop, after)
	if reason == "" && pe != nil {
		switch {
		case errors.Is(pe.Err, csv.ErrBareQuote):
			reason = reasonBareQuote
		case start+stop >= len(rs.data):
			reason = reasonNotClosed
		default:
			reason = reasonAfterQuote
		}
	}
	switch reason {
	case "": // suspect was wrong: nothing to report
		return fields, line, nil, false
	case reasonUTF8:
		return nil, line, &Fault{Line: line, Column: column, Reason: reason, Fix: fixUTF8}, false
	}
	ends := reason == reasonBreak || reason == reasonNotClosed
	return nil, line, &Fault{Line: line, Column: column, Reason: reason}, ends
}

// skipEmptyLines returns the offset of the first byte at or after i that
// does not begin an empty line (LF or CRLF), as encoding/csv skips them.
func skipEmptyLines(data []byte, i int) int {
	for {
		switch {
		case i < len(data) && data[i] == '\n':
			i++
		case i+1 < len(data) && data[i] == '\r' && data[i+1] == '\n':
			i += 2
		default:
			return i
		}
	}
}

// suspect reports whether a record read by encoding/csv (rest: its bytes
// from its first one) may break one of the rules of protocol §4 that
// encoding/csv does not check: spans when it spans more than one line.
func suspect(rest []byte, spans bool) bool {
	if spans || !utf8.Valid(rest) {
		return true
	}
	for i := 0; ; i++ {
		j := bytes.IndexByte(rest[i:], '\r')
		if j < 0 {
			return false
		}
		i += j
		if i+1 == len(rest) || rest[i+1] != '\n' {
			return true
		}
	}
}

// scanLine finds the first fault of the three rules left (the byte order
// mark is skipped before) on the first line of
// a record (line, with its '\n' when it has one), in scan order, and the
// field it is in: it tracks quoting as encoding/csv does on a line that
// encoding/csv read without fault up to stop. Bytes before stop are
// checked; when after is set, the byte at stop follows a closing quote,
// and only a carriage return there is a fault of its own (encoding/csv
// calls anything else there text after a closing quote). The returned
// column is the field number at stop when no fault comes first.
func scanLine(line []byte, stop int, after bool) (column int, reason string) {
	column = 1
	quoted := false
	for i := 0; i < len(line) && (i < stop || (after && i == stop)); {
		c := line[i]
		if i == stop && c != '\r' {
			break
		}
		switch {
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			column++
		case c == '\n':
			if quoted {
				return column, reasonBreak
			}
		case c == '\r':
			switch {
			case quoted:
				return column, reasonBreak
			case i+1 == len(line) || line[i+1] != '\n':
				return column, reasonLoneCR
			}
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(line[i:])
			if r == utf8.RuneError && size <= 1 {
				return column, reasonUTF8
			}
			i += size
			continue
		}
		i++
	}
	return column, ""
}
