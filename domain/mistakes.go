package domain

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The common export mistakes of protocol §4 that a fault's message explains,
// with what to do: a byte order mark and a byte that is not UTF-8 (csv.go,
// fixBOM and fixUTF8); a header separated by semicolons or tabs, in
// another letter case, with spaces, or with a spreadsheet's empty columns
// (headerFault); an ID with spaces around it; and in a number, spaces
// around it, a currency symbol, thousands separators, a decimal comma or a
// percent sign. No message quotes a field's value: the fixes are fixed
// texts, but for the literal number a number's fix writes ("write
// 1250.00"), which is derived from the value's shape and holds only
// digits, at most one point and a quantity's '-'.

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

// numberProblem says what is wrong with s, a value the kind refused, and
// the literal fix when the value's shape shows what was meant: spaces
// around it, a currency symbol, thousands separators, a decimal comma, or
// (in a discount) a percent sign, each taken away or turned into plain
// notation, as "write 1250.00". The fix is written only when what is left
// is a valid value of the column: digits, at most one point and, in a
// quantity, a leading '-' (the checks of [numberKind.valid]). It
// echoes nothing else of the value. A blank discount gets "write 0"; a
// value no mistake explains, the kind's rule.
func numberProblem(s string, k numberKind) problem {
	rest := strings.TrimFunc(s, isSpace)
	if rest == "" {
		switch {
		case k == discountNumber && s == "":
			return problem{reason: "is blank", fix: "write 0 for no discount"}
		case k == discountNumber:
			return problem{reason: "holds only spaces", fix: "write 0 for no discount"}
		case k == priceNumber:
			return problem{reason: "holds only spaces", fix: "leave it empty when the price is unknown"}
		}
		return problem{reason: k.rule()}
	}
	var found []string // the mistakes, in the words of the reason
	if rest != s {
		found = append(found, "spaces around it")
	}
	rest, currency := withoutCurrency(rest)
	if currency {
		found = append(found, "a currency symbol")
	}
	percent := false
	if k == discountNumber {
		if r, ok := strings.CutSuffix(rest, "%"); ok {
			rest, percent = strings.TrimRightFunc(r, isSpace), true
		}
	}
	lit, alt, marks := withoutMarks(rest, k)
	found = append(found, marks...)
	if percent {
		found = append(found, "a percent sign")
		lit, alt = percentOf(lit), ""
	}
	reason := "has " + joinAnd(found)
	switch {
	case len(found) == 0 || lit == "":
		return problem{reason: k.rule()}
	case alt != "" && k.valid(lit) && k.valid(alt):
		return problem{reason: reason, fix: "write " + lit + " if it separates thousands, or " + alt + " if it is a decimal comma"}
	case alt != "" && k.valid(alt):
		lit = alt
	}
	switch {
	case k.valid(lit):
		return problem{reason: reason, fix: "write " + lit}
	case percent:
		return problem{reason: reason, fix: "a discount is a fraction from 0 to 1: write 10 % as 0.10"}
	}
	return problem{reason: k.rule()}
}

// valid reports whether s is a value the kind accepts, as the row's
// checks parse it.
func (k numberKind) valid(s string) bool {
	switch k {
	case quantityNumber:
		_, ok := parseQuantity(s)
		return ok
	case countNumber:
		_, ok := parseCount(s)
		return ok
	case priceNumber:
		_, ok := parseAmount(s)
		return ok
	}
	a, ok := parseAmount(s)
	return ok && a <= unitAmount
}

// withoutMarks turns s into plain notation when it is a number written
// with thousands separators or a decimal comma, and names what it took
// away; lit is "" when s is neither plain nor one of those. A comma
// before one group of three digits ("1,234") may be either: in an
// integer it separates thousands, in a discount (at most 1) it is the
// decimal mark, and in a price alt holds the decimal reading beside lit.
func withoutMarks(s string, k numberKind) (lit, alt string, marks []string) {
	if plainNumber(s) {
		return s, "", nil
	}
	comma := strings.Count(s, ",") == 1 && !strings.Contains(s, ".")
	decimal := strings.Replace(s, ",", ".", 1)
	if grouped, ok := withoutThousands(s); ok {
		// Grouped with one comma and no point, and no decimals: one comma
		// before three digits ("1,234").
		if !comma || strings.Contains(grouped, ".") {
			// "1.234,50": the decimal mark after the groups is a comma.
			if i := strings.LastIndexByte(s, ','); i >= 0 && strings.Contains(grouped, ".") && digitsOnly(s[i+1:]) {
				return grouped, "", []string{"thousands separators", "a decimal comma"}
			}
			return grouped, "", []string{"thousands separators"}
		}
		switch k {
		case quantityNumber, countNumber:
			return grouped, "", []string{"thousands separators"}
		case discountNumber:
			return decimal, "", []string{"a decimal comma"}
		}
		return grouped, decimal, []string{"a comma before three digits"}
	}
	if comma && plainNumber(decimal) {
		return decimal, "", []string{"a decimal comma"}
	}
	return "", "", nil
}

// percentOf writes n percent (n plain and nonnegative) as a fraction, the
// point moved two places left with the digits as written: "10" is
// "0.10", "12.5" is "0.125", "100" is "1.00". It returns "" for anything
// else.
func percentOf(n string) string {
	if n == "" || !plainNumber(n) || strings.HasPrefix(n, "-") {
		return ""
	}
	whole, frac, _ := strings.Cut(n, ".")
	digits, point := whole+frac, len(whole)-2
	for ; point < 1; point++ {
		digits = "0" + digits
	}
	w := strings.TrimLeft(digits[:point], "0")
	if w == "" {
		w = "0"
	}
	return w + "." + digits[point:]
}

// joinAnd joins words as a sentence lists them: "a, b and c".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// idProblem says what is wrong with s, a value that is not an ID: spaces
// around an ID are named as such (a spreadsheet cell with a space typed
// after it), anything else gets the rule.
func idProblem(s string) problem {
	if t := strings.TrimFunc(s, isSpace); t != s && ValidID(t) {
		return problem{reason: "has spaces around the ID", fix: "remove the spaces at either end"}
	}
	return problem{reason: notID}
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
