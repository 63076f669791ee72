package domain

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The common export mistakes of protocol §4 that a fault's message explains,
// with what to do: a byte order mark and a byte that is not UTF-8 (csv.go,
// fixBOM and fixUTF8), a header separated by semicolons or tabs, and in a
// number, thousands separators or a currency symbol. The fixes are fixed
// texts: no message quotes a field's value.

// problem is what is wrong with a value, and the fix when a common
// export mistake explains it.
type problem struct{ reason, fix string }

// separatorFix explains a header that does not match when its line (a
// byte order mark skipped) holds no comma but semicolons or tabs: a
// spreadsheet exported with another separator.
func separatorFix(line []byte, columns int) string {
	if columns < 2 || bytes.IndexByte(line, ',') >= 0 {
		return ""
	}
	semicolons, tabs := bytes.Count(line, []byte{';'}), bytes.Count(line, []byte{'\t'})
	switch {
	case semicolons > 0 && semicolons >= tabs:
		return "fields are separated by commas; this header uses semicolons"
	case tabs > 0:
		return "fields are separated by commas; this header uses tabs"
	}
	return ""
}

// numberKind is what a numeric column holds.
type numberKind int

const (
	quantityNumber numberKind = iota // a signed integer
	countNumber                      // a nonnegative integer
	priceNumber                      // a nonnegative decimal
	discountNumber                   // a decimal in [0, 1]
)

// rule is the generic reason of a value the kind refuses.
func (k numberKind) rule() string {
	switch k {
	case quantityNumber:
		return notSigned
	case countNumber:
		return notCount
	case priceNumber:
		return notPrice
	}
	return notDiscount
}

// example is the fixed value the fixes write.
func (k numberKind) example() string {
	if k == quantityNumber || k == countNumber {
		return "1234"
	}
	return "1234.50"
}

// numberProblem says what is wrong with s, a value the kind refused: a
// currency symbol or thousands separators when taking them away leaves a
// number in plain notation, else the kind's rule.
func numberProblem(s string, k numberKind) problem {
	rest, currency := withoutCurrency(s)
	rest, grouped := withoutThousands(rest)
	if !plainNumber(rest) {
		return problem{reason: k.rule()}
	}
	switch {
	case currency && grouped:
		return problem{reason: "has a currency symbol and thousands separators",
			fix: "write " + k.example() + " alone, without a currency symbol or thousands separators"}
	case currency:
		return problem{reason: "has a currency symbol", fix: "write the number alone, without a currency symbol"}
	case grouped:
		return problem{reason: "uses thousands separators", fix: "write " + k.example() + " without thousands separators"}
	}
	return problem{reason: k.rule()}
}

// plainNumber reports whether s is digits, optionally signed, with
// optional decimals after a point: what is left once a mistake is taken
// away, whatever the column's own bounds.
func plainNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	whole, frac, point := strings.Cut(s, ".")
	return digitsOnly(whole) && (!point || digitsOnly(frac))
}

func digitsOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// withoutCurrency takes away a currency symbol (Unicode's Sc: $, €, £,
// ¥, …) or a three-letter code (USD, EUR, …) before or after a number,
// and the spaces beside it.
func withoutCurrency(s string) (string, bool) {
	trimmed := strings.TrimFunc(s, func(r rune) bool { return unicode.Is(unicode.Sc, r) || isSpace(r) })
	switch {
	case trimmed != "" && trimmed != strings.TrimFunc(s, isSpace):
		return trimmed, true
	case len(s) > 4 && isCode(s[:3]) && s[3] == ' ':
		return strings.TrimFunc(s[4:], isSpace), true
	case len(s) > 4 && isCode(s[len(s)-3:]) && s[len(s)-4] == ' ':
		return strings.TrimFunc(s[:len(s)-4], isSpace), true
	}
	return s, false
}

// isCode reports whether s is three capital ASCII letters.
func isCode(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return len(s) == 3
}

// isSpace reports the spaces of exports: the space, no-break spaces, a
// tab.
func isSpace(r rune) bool { return r == ' ' || r == '\u00a0' || r == '\u202f' || r == '\t' }

// thousandsMarks are the separators spreadsheets group digits with: the
// comma, the point (where the comma is the decimal mark), spaces and the
// apostrophe.
const thousandsMarks = ",. \u00a0\u202f'"

// withoutThousands takes the thousands separators out of a number written
// in groups of three ("1,234.50", "1.234,50", "1 234", "1'234.5"), with a
// point for the decimal mark.
func withoutThousands(s string) (string, bool) {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	// The first separator after the leading digits is the grouping one.
	lead := 0
	for lead < len(s) && s[lead] >= '0' && s[lead] <= '9' {
		lead++
	}
	if lead == 0 || lead > 3 || lead == len(s) {
		return sign + s, false
	}
	sep, size := utf8.DecodeRuneInString(s[lead:])
	if !strings.ContainsRune(thousandsMarks, sep) {
		return sign + s, false
	}
	var b strings.Builder
	b.WriteString(sign + s[:lead])
	rest := s[lead:]
	groups := 0
	for strings.HasPrefix(rest, string(sep)) && len(rest) >= size+3 && digitsOnly(rest[size:size+3]) &&
		(len(rest) == size+3 || rest[size+3] < '0' || rest[size+3] > '9') {
		b.WriteString(rest[size : size+3])
		rest = rest[size+3:]
		groups++
	}
	if groups == 0 {
		return sign + s, false
	}
	switch {
	case rest == "":
	case (rest[0] == '.' || rest[0] == ',') && rune(rest[0]) != sep && digitsOnly(rest[1:]):
		b.WriteString("." + rest[1:])
	default:
		return sign + s, false
	}
	return b.String(), true
}

// labelProblem checks a segment: a label as a spreadsheet writes it,
// 1 to 64 code points of UTF-8, no control character (Unicode's Cc:
// U+0000–U+001F, U+007F–U+009F), no space at either end.
func labelProblem(s string) (problem, bool) {
	if s == "" {
		return problem{reason: "is blank; a segment is 1 to 64 characters"}, false
	}
	n := 0
	for i := 0; i < len(s); n++ {
		if c := s[i]; c >= 0x20 && c < 0x7f { // printable ASCII, most labels
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return problem{reason: reasonUTF8, fix: fixUTF8}, false
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
			return problem{reason: "holds a control character (a tab, a line break, …)"}, false
		}
		i += size
	}
	switch {
	case n > MaxLabelLength:
		return problem{reason: "is longer than 64 characters"}, false
	case s[0] == ' ' || s[len(s)-1] == ' ':
		return problem{reason: "begins or ends with a space", fix: "remove the spaces at either end"}, false
	}
	return problem{}, true
}

// MaxLabelLength is the longest segment label, in code points.
const MaxLabelLength = 64
