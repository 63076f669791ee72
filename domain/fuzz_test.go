package domain_test

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/metricproof/metricproof/domain"
)

// The fuzz targets of this file check the package against oracles written
// here, independently of its code:
//
//   - FuzzParseSources: any bytes as one source never panic, fail only with
//     the package's own error types naming file, line and column, never echo
//     the data (but for a number's literal fix, a plain number that its
//     column accepts), and when accepted compute a well-formed, exactly
//     right result.
//   - FuzzCSVParsersKeepTheRules: each CSV parser (ParseTransactions,
//     ParseGroups, ParseCustomers) accepts exactly what passes the rules of
//     protocol §4, re-stated here on the raw bytes and, with regular
//     expressions and math/big, on the records encoding/csv reads; keeps
//     every field byte for byte (numbers by value: leading and trailing zeros
//     are not kept); and refuses with a file, line and column inside
//     the input's bounds.
//   - FuzzFirstFaultIsTheOneFaultMessage: whatever else a CSV source
//     holds, the first line of its message is the message of the same
//     bytes cut after the first fault's line, where no later fault can be;
//     the message lists at most 20 faults, one a line, then at most the
//     count of other lines that are not UTF-8 and the count of unlisted
//     faults; it names bytes that are not UTF-8 once; it stays under 4 KiB.
//   - FuzzFormatRate: the rate equals a math/big.Rat half-even rounding.
//
// Run one with, for example:
//
//	go test ./domain -run '^$' -fuzz '^FuzzParseSources$' -fuzztime 60s -fuzzminimizetime 2s

// fuzzSources are the choices of the source a fuzz input replaces; the other
// three stay the protocol §7 fixture.
var fuzzSources = []string{domain.TransactionsFile, domain.GroupsFile, domain.CustomersFile, domain.DefinitionsFile}

// fuzzHeaders are the headers of protocol §4, written out here rather than taken
// from the package.
var fuzzHeaders = map[string][]string{
	domain.TransactionsFile: {"transaction_id", "customer_id", "quantity", "unit_price", "discount"},
	domain.GroupsFile:       {"group_id", "successes", "eligible"},
	domain.CustomersFile:    {"customer_id", "segment"},
}

// Markers that seeds plant in every place a value can sit. None is a valid
// value anywhere, so each makes a fault; no message of the package may
// contain one, since they are in none of its fixed texts. Each is at least
// fuzzWindow bytes long, so the general check below catches them too.
var fuzzMarkers = []string{"/etc/passwd", "$SECRET$", "<script>", "s3cr3t!!"}

// fuzzWindow is the length of the byte sequences a message may share with
// the input outside the package's fixed texts: none.
const fuzzWindow = 8

var (
	moneyRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?$`)
	rateRE  = regexp.MustCompile(`^[01]\.[0-9]{12}$`)
)

// fuzzVocabulary is every fixed text a message may legitimately contain,
// longest first: file names, header names (plain and quoted), the reasons of
// the CSV and JSON rules, and the key paths of the definitions contract.
var fuzzVocabulary = func() []string {
	v := slices.Clone(fuzzSources)
	for _, h := range fuzzHeaders {
		for _, name := range h {
			v = append(v, name, strconv.Quote(name))
		}
		v = append(v, strings.Join(h, ","))
	}
	v = append(v,
		"starts with a byte order mark", "save the file as UTF-8 without a byte order mark",
		"starts with a byte order mark, which strict JSON refuses",
		"carriage return without a line feed; lines end in LF or CRLF",
		"text after a closing quote", "quote inside an unquoted field",
		"quoted field is not closed", "line break inside a quoted field",
		"holds a byte that is not UTF-8", "save the file as UTF-8 (Latin-1 and Windows-1252 exports are not)",
		"fields are separated by commas; this header uses semicolons",
		"fields are separated by commas; this header uses tabs",
		"has thousands separators", "has a currency symbol", "has a decimal comma", "has a percent sign",
		"has spaces around it", "spaces around it", "a currency symbol", "thousands separators", "a decimal comma",
		"a percent sign", "a comma before three digits",
		"if it separates thousands, or", "if it is a decimal comma",
		"is blank", "write 0 for no discount", "holds only spaces", "leave it empty when the price is unknown",
		"a discount is a fraction from 0 to 1: write 10 % as 0.10",
		"has spaces around the ID", "write the header as", "the names differ only in",
		"letter case and spaces", "letter case", "spaces", "header ends with", "empty columns", "empty column",
		"on every line (a spreadsheet's unused columns)", "delete the", "empty columns after", "empty column after",
		"the last field is empty: delete it (a spreadsheet's unused column)",
		"fields are empty: delete them (a spreadsheet's unused columns)", "the last",
		"the first line is the header: ", "more lines hold bytes that are not UTF-8", "more line holds bytes that are not UTF-8",
		"is blank; a segment is 1 to 64 characters", "is longer than 64 characters",
		"holds a control character (a tab, a line break, …)", "begins or ends with a space",
		"remove the spaces at either end", "more faults in", "more fault in",
		"no header row", "header is missing column",
		"header column must be", "header has more than", "columns",
		"fields; the header has", "field; the header has", "row has",
		"not an ID (1 to 64 ASCII letters, digits, '_' or '-', starting with a letter or digit)",
		"not a nonnegative integer (plain notation, 1 to 12 digits)",
		"not an integer (plain notation, optional '-', 1 to 12 digits)",
		"not a nonnegative decimal (plain notation, 1 to 12 integer and at most 6 fractional digits), or blank when unknown",
		"is data row 10001; a source holds at most 10000 data rows, so the rows after it were not checked",
		"repeats the transaction_id of line", "repeats the group_id of line",
		"not a decimal in [0, 1] (plain notation, at most 6 fractional digits)",
		"successes exceeds eligible",
		"is data row 10001; a source holds at most 10000 data rows",
		// the JSON reader and the definitions check
		"not strict JSON: ", " at byte ", "empty input", "data after the JSON document",
		"unexpected end of input in an object", "unexpected end of input in an array",
		"unexpected end of input", "unexpected character", "invalid literal", "expected a string key",
		"expected ':' after a key", "expected ',' or '}' in an object",
		"expected ',' or ']' in an array", "unterminated string",
		"control character in a string", "unterminated escape", "invalid escape",
		"lone low surrogate", "lone high surrogate", "invalid surrogate pair",
		`short \u escape`, `invalid \u escape`, "invalid number", "duplicate key",
		"nesting deeper than 512 levels",
		"differs from the synthetic-v1 contract at ",
	)
	var contract any
	if err := json.Unmarshal([]byte(domain.Contract), &contract); err != nil {
		panic(err)
	}
	// Paths are all a definitions message names of the contract; the root
	// "$" is too short to count as a fixed text.
	var walk func(val any, path string)
	walk = func(val any, path string) {
		v = append(v, path)
		join := func(part string) string {
			if path == "" {
				return part
			}
			return path + "." + part
		}
		switch val := val.(type) {
		case map[string]any:
			for k, m := range val {
				walk(m, join(k))
			}
		case []any:
			for i, item := range val {
				walk(item, join(strconv.Itoa(i)))
			}
		}
	}
	walk(contract, "")
	// Cutting out very short texts would cut quoted data apart too.
	v = slices.DeleteFunc(v, func(s string) bool { return len(s) < 4 })
	slices.SortFunc(v, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return slices.Compact(v)
}()

// assertQuotesNoData fails when msg contains a marker, or when what is left
// of msg once every fixed text is cut out of it shares a run of fuzzWindow
// bytes with data. What is left is the glue of the messages (": line 2,
// column 1 (", numbers, spaces), which no input holds unless a message
// quotes it.
func assertQuotesNoData(t *testing.T, msg string, data []byte) {
	t.Helper()
	for _, m := range fuzzMarkers {
		if strings.Contains(msg, m) {
			t.Fatalf("message quotes the marker %q: %s", m, msg)
		}
	}
	// A number's literal fix is derived from the value: cut it out, once
	// it is shown to be a number in plain notation and nothing else
	// (checkLiterals holds it to its column).
	msg = fuzzLiteralRE.ReplaceAllStringFunc(msg, func(m string) string {
		if lit := fuzzLiteralRE.FindStringSubmatch(m); !literalShapeRE.MatchString(lit[1] + lit[2]) {
			t.Fatalf("a literal fix that is not a plain number: %q in %s", m, msg)
		}
		return " "
	})
	rest := []string{msg}
	for _, fixed := range fuzzVocabulary {
		var next []string
		for _, r := range rest {
			next = append(next, strings.Split(r, fixed)...)
		}
		rest = next
	}
	for _, r := range rest {
		for i := 0; i+fuzzWindow <= len(r); i++ {
			if w := r[i : i+fuzzWindow]; bytes.Contains(data, []byte(w)) {
				t.Fatalf("message shares %q with the input outside its fixed texts: %s", w, msg)
			}
		}
	}
}

func FuzzParseSources(f *testing.F) {
	const (
		tx, gr, cu = 0, 1, 2
	)
	add := func(which uint8, s string) { f.Add(which, []byte(s)) }
	// The fixture and good edge cases.
	add(tx, fixtureTransactions)
	add(gr, fixtureGroups)
	add(cu, fixtureCustomers)
	add(tx, txHeader)
	add(tx, "\r\n\n"+strings.ReplaceAll(fixtureTransactions, "\n", "\r\n"))
	add(tx, txHeader+"\"T1\",C1,\"3\",\"\",\"0\"\nT2,C9,-999999999999,999999999999.999999,0.000001\nT3,C1,0,0,1")
	add(tx, txHeader+"T1,C1,999999999999,999999999999.999999,0\nT2,C1,-999999999999,999999999999.999999,0.999999\n")
	add(gr, grHeader+"G1,0,0\n")
	add(gr, grHeader+"G1,999999999999,999999999999\nG2,1,3\n")
	add(gr, grHeader+"G1,1,2000000000000\n")
	add(cu, cuHeader+strings.Repeat("c", 64)+",x_-\n")
	add(cu, cuHeader)
	// Faults, with markers planted wherever a value can sit.
	add(tx, "\xEF\xBB\xBF"+txHeader)
	add(tx, txHeader+"/etc/passwd,C1,1,1,0\n")
	add(tx, txHeader+"T1,C1,$SECRET$,1,0\n")
	add(tx, txHeader+"T1,C1,1,<script>,0\n")
	add(tx, txHeader+"T1,C1,1,1,s3cr3t!!\n")
	add(tx, txHeader+"T1,C1,1,1,0\nT1,/etc/passwd,1,1,0\n")
	add(tx, "transaction_id,customer_id,quantity,/etc/passwd,discount\n")
	add(tx, txHeader+"T1,C1,1,1e2,0\nT2,C1,1.0,1,0\nT3,C1,1,1,1.000001\n")
	add(gr, grHeader+"\"/etc/passwd\"x,1,2\n")
	add(gr, grHeader+"G1,1,2\r$SECRET$,1,2\n")
	add(gr, grHeader+"G1,3,2\n")
	add(gr, grHeader+"G1,-1,2\nG1,1,1\n")
	add(cu, cuHeader+"C1,\"/etc/passwd\n")
	add(cu, cuHeader+"C1,re\"$SECRET$\n")
	add(cu, cuHeader+"C1,\xff/etc/passwd\n")
	add(cu, cuHeader+"C1,\"a\"\"b\"\n")
	add(cu, "customer_id,segment,/etc/passwd\n")
	add(cu, "")
	// A marker in every column of a valid row, and in every header column.
	good := map[string][]string{
		domain.TransactionsFile: {"T1", "C1", "1", "1", "0"},
		domain.GroupsFile:       {"G1", "1", "2"},
		domain.CustomersFile:    {"C1", "retail"},
	}
	for which, file := range fuzzSources[:3] {
		h := fuzzHeaders[file]
		for col := range h {
			row := slices.Clone(good[file])
			row[col] = fuzzMarkers[col%len(fuzzMarkers)]
			add(uint8(which), strings.Join(h, ",")+"\n"+strings.Join(row, ",")+"\n")
			head := slices.Clone(h)
			head[col] = fuzzMarkers[col%len(fuzzMarkers)]
			add(uint8(which), strings.Join(head, ",")+"\n")
		}
	}
	// 10,001 rows: INPUT_LIMIT.
	add(cu, cuHeader+strings.Repeat("a,b\n", domain.MaxDataRows+1))

	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		file := fuzzSources[int(which)%3] // the definitions file is the app's
		files := fixtureFiles()
		files[file] = data
		in, err := domain.ParseSources(files)
		if err != nil {
			checkSourceError(t, file, data, err)
			return
		}
		checkResult(t, in)
	})
}

// fuzzLiteralRE finds what a number's literal fix writes ("write 12.50",
// and "or 1.250 if" beside it); literalShapeRE is what protocol §4 lets any
// number be: an optional '-', 1 to 12 digits, a point and 1 to 6 digits.
var (
	fuzzLiteralRE  = regexp.MustCompile(`write (-?[0-9.]+)(?:$|\n| if| for)|, or (-?[0-9.]+) if`)
	literalShapeRE = regexp.MustCompile(`^-?[0-9]{1,12}(\.[0-9]{1,6})?$`)
)

// checkLiterals holds every literal fix of a DataError to its column: the
// literal is a value the column accepts, by the oracle's own rules.
func checkLiterals(t *testing.T, file string, de *domain.DataError) {
	t.Helper()
	for _, f := range append([]domain.Fault{de.Fault}, de.More...) {
		if !strings.HasPrefix(f.Fix, "write ") || strings.HasPrefix(f.Fix, "write the header") {
			continue
		}
		for _, m := range fuzzLiteralRE.FindAllStringSubmatch(f.Fix, -1) {
			lit := m[1] + m[2]
			ok := false
			switch f.Field {
			case "quantity":
				ok = signedRE.MatchString(lit)
			case "successes", "eligible":
				ok = countRE.MatchString(lit)
			case "unit_price":
				ok = amountRE.MatchString(lit)
			case "discount":
				r, isRat := new(big.Rat).SetString(lit)
				ok = amountRE.MatchString(lit) && isRat && r.Cmp(big.NewRat(1, 1)) <= 0
			}
			if !ok {
				t.Fatalf("%s: the fix %q of %+v writes a value its column refuses", file, f.Fix, f)
			}
		}
	}
}

// checkSourceError holds every error of ParseSources to the rules of the
// package doc: its own type, file, line and column, and no quoted data.
func checkSourceError(t *testing.T, file string, data []byte, err error) {
	t.Helper()
	msg := err.Error()
	assertQuotesNoData(t, msg, data)
	if !strings.HasPrefix(msg, file+": ") {
		t.Fatalf("message does not start with the file %s: %s", file, msg)
	}
	if file == domain.DefinitionsFile {
		var de *domain.DefinitionsError
		if !errors.As(err, &de) {
			t.Fatalf("definitions error of type %T: %v", err, err)
		}
		return
	}
	lines := bytes.Count(data, []byte("\n")) + 1
	var de *domain.DataError
	var le *domain.LimitError
	switch {
	case errors.As(err, &de):
		if de.File != file || de.Line < 1 || de.Line > lines || de.Column < 1 {
			t.Fatalf("DataError %+v out of range for %s with %d lines", *de, file, lines)
		}
		checkPlace(t, file, data, err)
		checkLiterals(t, file, de)
		if de.Field != "" {
			h := fuzzHeaders[file]
			if de.Column > len(h) || h[de.Column-1] != de.Field {
				t.Fatalf("DataError %+v names a field that is not column %d of %v", *de, de.Column, h)
			}
		}
		prefix := fmt.Sprintf("%s: line %d, column %d", file, de.Line, de.Column)
		if !strings.HasPrefix(msg, prefix) {
			t.Fatalf("message %q does not start with %q", msg, prefix)
		}
	case errors.As(err, &le):
		if le.File != file || le.Line < domain.MaxDataRows+2 || le.Line > lines {
			t.Fatalf("LimitError %+v out of range for %s with %d lines", *le, file, lines)
		}
		if !strings.Contains(msg, fmt.Sprintf("line %d", le.Line)) {
			t.Fatalf("LimitError message without its line: %s", msg)
		}
	default:
		t.Fatalf("error of type %T: %v", err, err)
	}
}

// checkResult computes over accepted records and checks the result against
// math/big and a re-statement of protocol §5.
func checkResult(t *testing.T, in domain.Inputs) {
	t.Helper()
	r, err := domain.Compute(in, "digest")
	if err != nil {
		t.Fatalf("Compute on accepted sources: %v", err)
	}
	// Conversion.
	var successes, eligible int64
	for _, g := range in.Groups {
		successes += g.Successes
		eligible += g.Eligible
	}
	if r.Conversion.Successes != successes || r.Conversion.Eligible != eligible {
		t.Fatalf("conversion %d/%d, want %d/%d", r.Conversion.Successes, r.Conversion.Eligible, successes, eligible)
	}
	if eligible == 0 {
		if r.Conversion.Rate != nil {
			t.Fatalf("rate %q with eligible 0", *r.Conversion.Rate)
		}
	} else {
		if r.Conversion.Rate == nil || !rateRE.MatchString(*r.Conversion.Rate) {
			t.Fatalf("rate %s for %d/%d", str(r.Conversion.Rate), successes, eligible)
		}
		if want := rateOracle(successes, eligible); *r.Conversion.Rate != want {
			t.Fatalf("rate %s for %d/%d, want %s", *r.Conversion.Rate, successes, eligible, want)
		}
	}
	// Revenue.
	rev := r.Revenue
	if len(rev.Contributions) != len(in.Transactions) || rev.TotalRows != len(in.Transactions) ||
		rev.KnownRows < 0 || rev.KnownRows > rev.TotalRows {
		t.Fatalf("revenue rows: %d contributions, known %d, total %d, transactions %d",
			len(rev.Contributions), rev.KnownRows, rev.TotalRows, len(in.Transactions))
	}
	subtotal := new(big.Rat)
	known := 0
	var missing []string
	for i, tr := range in.Transactions {
		c := rev.Contributions[i]
		if c.TransactionID != tr.ID {
			t.Fatalf("contribution %d is %q, want %q", i, c.TransactionID, tr.ID)
		}
		if !tr.PriceKnown {
			missing = append(missing, tr.ID)
			if c.NetRevenue != nil {
				t.Fatalf("contribution %d has %q with a blank price", i, *c.NetRevenue)
			}
			continue
		}
		known++
		// quantity × unit_price × (1 − discount), in math/big.
		want := new(big.Rat).SetInt64(tr.Quantity)
		want.Mul(want, ratOf(t, tr.UnitPrice.String()))
		want.Mul(want, new(big.Rat).Sub(big.NewRat(1, 1), ratOf(t, tr.Discount.String())))
		subtotal.Add(subtotal, want)
		if c.NetRevenue == nil {
			t.Fatalf("contribution %d is null with a known price", i)
		}
		checkMoney(t, *c.NetRevenue, want)
	}
	if known != rev.KnownRows {
		t.Fatalf("known_rows %d, want %d", rev.KnownRows, known)
	}
	checkMoney(t, rev.KnownSubtotal, subtotal)
	if (rev.CompleteTotal == nil) != (known < len(in.Transactions)) {
		t.Fatalf("complete_total %s with %d of %d known", str(rev.CompleteTotal), known, len(in.Transactions))
	}
	if rev.CompleteTotal != nil && *rev.CompleteTotal != rev.KnownSubtotal {
		t.Fatalf("complete_total %s differs from known_subtotal %s", *rev.CompleteTotal, rev.KnownSubtotal)
	}
	// Customer join.
	count := map[string]int{}
	for _, c := range in.Customers {
		count[c.ID]++
	}
	dup := []string{}
	for id, n := range count {
		if n > 1 {
			dup = append(dup, id)
		}
	}
	unmatched := []string{}
	for _, tr := range in.Transactions {
		if count[tr.CustomerID] == 0 && !slices.Contains(unmatched, tr.CustomerID) {
			unmatched = append(unmatched, tr.CustomerID)
		}
	}
	slices.Sort(dup)
	slices.Sort(unmatched)
	j := r.CustomerJoin
	if !slices.Equal(j.DuplicateKeys, dup) || !slices.Equal(j.UnmatchedKeys, unmatched) {
		t.Fatalf("join duplicates %v unmatched %v, want %v and %v", j.DuplicateKeys, j.UnmatchedKeys, dup, unmatched)
	}
	blocked := len(dup) > 0 || len(unmatched) > 0
	if (j.Status == domain.JoinBlocked) != blocked || (j.Status != domain.JoinBlocked && j.Status != domain.JoinEligible) {
		t.Fatalf("join status %q with duplicates %v unmatched %v", j.Status, dup, unmatched)
	}
	// Release blockers, in their fixed order.
	type blocker struct {
		code     string
		subjects []string
	}
	var want []blocker
	if len(missing) > 0 {
		want = append(want, blocker{"missing_price", missing})
	}
	if len(dup) > 0 {
		want = append(want, blocker{"duplicate_customer_key", dup})
	}
	if len(unmatched) > 0 {
		want = append(want, blocker{"unmatched_customer_key", unmatched})
	}
	if eligible == 0 {
		want = append(want, blocker{"no_eligible_population", []string{}})
	}
	got := r.Release.Blockers
	if len(got) != len(want) || r.Release.Eligible != (len(want) == 0) || r.Release.HumanApproval != "not_granted" {
		t.Fatalf("release %+v, want blockers %v", r.Release, want)
	}
	for i := range want {
		if got[i].Code != want[i].code || !slices.Equal(got[i].Subjects, want[i].subjects) || got[i].Subjects == nil {
			t.Fatalf("blocker %d is %+v, want %v", i, got[i], want[i])
		}
	}
}

// ratOf reads a decimal's text, which big.Rat parses.
func ratOf(t *testing.T, text string) *big.Rat {
	t.Helper()
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		t.Fatalf("big.Rat cannot read %q", text)
	}
	return r
}

// checkMoney holds a money string to protocol §5: plain notation, no trailing
// fractional zeros, "0" for zero, and exactly the value want.
func checkMoney(t *testing.T, s string, want *big.Rat) {
	t.Helper()
	if !moneyRE.MatchString(s) || s == "-0" {
		t.Fatalf("money %q is not a plain decimal without trailing zeros", s)
	}
	got, ok := new(big.Rat).SetString(s)
	if !ok || got.Cmp(want) != 0 {
		t.Fatalf("money %q, want %s", s, want.FloatString(12))
	}
}

// rateOracle rounds successes/eligible to 12 places half-even by comparing
// the distances to the two neighbouring multiples of 10^-12 in math/big.Rat,
// and writes the result with Rat.FloatString, which is exact for it.
func rateOracle(successes, eligible int64) string {
	unit := new(big.Int).Exp(big.NewInt(10), big.NewInt(12), nil)
	scaled := new(big.Rat).SetFrac(big.NewInt(successes), big.NewInt(eligible))
	scaled.Mul(scaled, new(big.Rat).SetInt(unit))
	lo := new(big.Int).Quo(scaled.Num(), scaled.Denom()) // floor: both nonnegative
	hi := new(big.Int).Add(lo, big.NewInt(1))
	below := new(big.Rat).Sub(scaled, new(big.Rat).SetInt(lo))
	above := new(big.Rat).Sub(new(big.Rat).SetInt(hi), scaled)
	q := lo
	switch below.Cmp(above) {
	case 1:
		q = hi
	case 0:
		if lo.Bit(0) == 1 {
			q = hi
		}
	}
	return new(big.Rat).SetFrac(q, unit).FloatString(12)
}

func FuzzFormatRate(f *testing.F) {
	const twoE12 = 2_000_000_000_000
	for _, c := range [][2]int64{
		{91, 110}, {0, 0}, {0, 1}, {1, 1}, {1, 3}, {2, 3}, {1, 7}, {6, 7},
		{1, twoE12}, {3, twoE12}, {5, twoE12}, {twoE12 - 1, twoE12},
		{1, twoE12 + 1}, {1, twoE12 - 1},
		{9_999_999_999_999_999, 10_000_000_000_000_000}, {5_000_000_000_000_001, 10_000_000_000_000_000},
		{math.MaxInt64 - 1, math.MaxInt64}, {-1, -1},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, s, e int64) {
		// A nonnegative e is taken as it is, up to MaxInt64; a negative one
		// maps into [0, 10^16], the range valid sources produce (10,000
		// groups of at most 12 digits). successes is then reduced into
		// [0, eligible].
		eligible := e
		if e < 0 {
			eligible = int64(uint64(-(e + 1)) % (10_000_000_000_000_000 + 1))
		}
		successes := int64(uint64(s) % (uint64(eligible) + 1))
		got, err := domain.FormatRate(successes, eligible)
		if err != nil {
			t.Fatalf("FormatRate(%d, %d): %v", successes, eligible, err)
		}
		if eligible == 0 {
			if got != nil {
				t.Fatalf("FormatRate(0, 0) = %q, want nil", *got)
			}
			return
		}
		if got == nil {
			t.Fatalf("FormatRate(%d, %d) = nil", successes, eligible)
		}
		if want := rateOracle(successes, eligible); *got != want || !rateRE.MatchString(*got) {
			t.Fatalf("FormatRate(%d, %d) = %s, want %s", successes, eligible, *got, want)
		}
	})
}

// The oracle of FuzzCSVParsersKeepTheRules re-states protocol §4: first on the
// raw bytes, the one rule it cannot see in records (a CR not followed by
// LF, which encoding/csv reads into a field or drops before EOF), then on
// the records encoding/csv reads (Comma ',', no comment character,
// LazyQuotes false, TrimLeadingSpace false, FieldsPerRecord the header's
// count). The other rules stricter than encoding/csv (a line break inside
// quotes, invalid UTF-8, a byte order mark) end up inside a field, where no
// header name, ID or number of protocol §4 can hold them.
var (
	idRE     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
	countRE  = regexp.MustCompile(`^[0-9]{1,12}$`)
	signedRE = regexp.MustCompile(`^-?[0-9]{1,12}$`)
	amountRE = regexp.MustCompile(`^[0-9]{1,12}(\.[0-9]{1,6})?$`)
)

// isLabel re-states protocol §4's segment: 1 to 64 code points of valid
// UTF-8, none of Unicode category Cc, no U+0020 at either end.
func isLabel(s string) bool {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) < 1 || utf8.RuneCountInString(s) > 64 ||
		strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Cc, r) })
}

// oracleRecords returns the data records encoding/csv reads from data when
// they pass the rules of protocol §4 for file, or the reason they do not.
func oracleRecords(file string, data []byte) ([][]string, string) {
	for i, c := range data {
		if c == '\r' && (i+1 == len(data) || data[i+1] != '\n') {
			return nil, "CR without LF"
		}
	}
	header := fuzzHeaders[file]
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = len(header)
	records, err := r.ReadAll()
	if err != nil {
		return nil, "encoding/csv: " + err.Error()
	}
	if len(records) == 0 || !slices.Equal(records[0], header) {
		return nil, "header"
	}
	rows := records[1:]
	if len(rows) > domain.MaxDataRows {
		return nil, "row limit"
	}
	seen := map[string]bool{}
	for i, f := range rows {
		bad := func(what string) ([][]string, string) { return nil, fmt.Sprintf("data row %d: %s", i+1, what) }
		switch file {
		case domain.TransactionsFile:
			if !idRE.MatchString(f[0]) || seen[f[0]] || !idRE.MatchString(f[1]) {
				return bad("IDs")
			}
			seen[f[0]] = true
			if !signedRE.MatchString(f[2]) {
				return bad("quantity")
			}
			if f[3] != "" && !amountRE.MatchString(f[3]) {
				return bad("unit_price")
			}
			if d, ok := new(big.Rat).SetString(f[4]); !amountRE.MatchString(f[4]) || !ok || d.Cmp(big.NewRat(1, 1)) > 0 {
				return bad("discount")
			}
		case domain.GroupsFile:
			if !idRE.MatchString(f[0]) || seen[f[0]] {
				return bad("group_id")
			}
			seen[f[0]] = true
			if !countRE.MatchString(f[1]) || !countRE.MatchString(f[2]) {
				return bad("counts")
			}
			s, _ := strconv.ParseInt(f[1], 10, 64)
			e, _ := strconv.ParseInt(f[2], 10, 64)
			if s > e {
				return bad("successes exceeds eligible")
			}
		case domain.CustomersFile:
			if !idRE.MatchString(f[0]) {
				return bad("customer_id")
			}
			if !isLabel(f[1]) {
				return bad("segment")
			}
		}
	}
	return rows, ""
}

func FuzzCSVParsersKeepTheRules(f *testing.F) {
	add := func(which uint8, s string) { f.Add(which, []byte(s)) }
	add(0, fixtureTransactions)
	add(1, fixtureGroups)
	add(2, fixtureCustomers)
	add(0, txHeader+"\"T1\",C1,\"3\",\"\",\"0\"\r\n\r\nT2,C1,-007,0.5,1.000000")
	add(0, txHeader+"T1,C1,1,1,0\r")
	add(1, "\n\r\n"+grHeader+"\n\nG1,1,2\n\r\n\nG2,1,1\n\n")
	add(1, grHeader+"G1,1,2\rG2,1,2\n")
	add(2, "\"customer_id\",\"segment\"\n\"C1\",\"x\"\n")
	add(2, cuHeader+"C1,\"re\ntail\"\n")
	add(2, cuHeader+"C1,\"a\"\"b\"\n")
	add(2, cuHeader+"\"C1\"x,retail\n")
	add(2, "\xEF\xBB\xBF"+cuHeader)
	add(2, cuHeader+"C1\n")
	add(2, cuHeader+"C1,s,\n")
	add(2, cuHeader+strings.Repeat("c", 64)+",x_-\n")
	add(0, txHeader+"T1,C1,-000,007.50,0.000\nT2,C2,0012,0,1.0\nT3,C3,-0,000000000001.000001,0.100000\n")
	add(1, grHeader+"G1,000,0\nG2,0007,000000000010\n")
	add(0, txHeader+"T1,C1,1,1,0,\n")
	add(1, grHeader+"G1,1\n")
	add(2, "customer_id\n")

	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		file := fuzzSources[int(which)%3]
		want, why := oracleRecords(file, data)
		// Every field is compared byte for byte; a number, which the
		// records keep as a number, compares with its value written in
		// canonical form ("007.50" is 7.5).
		var got [][]string
		var err error
		switch file {
		case domain.TransactionsFile:
			var txs []domain.Transaction
			txs, err = domain.ParseTransactions(data)
			for _, tr := range txs {
				price := ""
				if tr.PriceKnown {
					price = tr.UnitPrice.String()
				}
				got = append(got, []string{tr.ID, tr.CustomerID, strconv.FormatInt(tr.Quantity, 10), price, tr.Discount.String()})
			}
			for _, w := range want {
				w[2], w[3], w[4] = canonicalNumber(w[2]), canonicalNumber(w[3]), canonicalNumber(w[4])
			}
		case domain.GroupsFile:
			var gs []domain.Group
			gs, err = domain.ParseGroups(data)
			for _, g := range gs {
				got = append(got, []string{g.ID, strconv.FormatInt(g.Successes, 10), strconv.FormatInt(g.Eligible, 10)})
			}
			for _, w := range want {
				w[1], w[2] = canonicalNumber(w[1]), canonicalNumber(w[2])
			}
		case domain.CustomersFile:
			var cs []domain.Customer
			cs, err = domain.ParseCustomers(data)
			for _, c := range cs {
				got = append(got, []string{c.ID, c.Segment})
			}
		}
		accepted := err == nil
		if accepted != (why == "") {
			t.Fatalf("%s: parser error %v, oracle refusal %q, for %q", file, err, why, data)
		}
		if accepted && (len(got) != len(want) || !slices.EqualFunc(got, want, slices.Equal[[]string])) {
			t.Fatalf("%s: parser read %q, the oracle %q", file, got, want)
		}
		if !accepted {
			checkPlace(t, file, data, err)
		}
	})
}

// canonicalNumber writes a plain number's value as the records keep it:
// leading zeros of the integer part, trailing zeros of the fraction, a
// trailing point and a minus sign before zero dropped ("007.50" is
// "7.5"); blank stays blank.
func canonicalNumber(s string) string {
	if s == "" {
		return s
	}
	neg := strings.HasPrefix(s, "-")
	intPart, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	intPart = strings.TrimLeft(intPart, "0")
	frac = strings.TrimRight(frac, "0")
	if intPart == "" {
		intPart = "0"
	}
	if neg && (intPart != "0" || frac != "") {
		intPart = "-" + intPart
	}
	if frac != "" {
		return intPart + "." + frac
	}
	return intPart
}

// checkPlace holds a refusal to the input's bounds: a DataError or a
// LimitError of this file, on a physical line the input has, at a column
// no further than one past the fields that line can hold (a missing
// column is named one past the last field).
func checkPlace(t *testing.T, file string, data []byte, err error) {
	t.Helper()
	lines := bytes.Split(data, []byte("\n"))
	var de *domain.DataError
	var le *domain.LimitError
	switch {
	case errors.As(err, &de):
		if de.File != file || len(de.More) > domain.MaxListedFaults-1 || de.Unlisted < 0 || (de.Unlisted > 0 && len(de.More) < domain.MaxListedFaults-1) {
			t.Fatalf("%+v: another file, or not the first 20 faults listed", *de)
		}
		all := append([]domain.Fault{de.Fault}, de.More...)
		for i, f := range all {
			if f.Line < 1 || f.Line > len(lines) || (i > 0 && f.Line < all[i-1].Line) {
				t.Fatalf("%+v: fault %d names a line outside the %d of the input, or out of order", *de, i, len(lines))
			}
			fields := bytes.Count(lines[f.Line-1], []byte(",")) + 1
			if (f.Column < 1 && (i == 0 || !strings.HasPrefix(f.Reason, "is data row"))) || f.Column > fields+1 {
				t.Fatalf("%+v: fault %d names a column outside the %d fields line %d can hold", *de, i, fields, f.Line)
			}
			if f.Field != "" && (f.Column > len(fuzzHeaders[file]) || fuzzHeaders[file][f.Column-1] != f.Field) {
				t.Fatalf("%+v: fault %d names a field that is not its column's", *de, i)
			}
		}
	case errors.As(err, &le):
		if le.File != file || le.Line < domain.MaxDataRows+2 || le.Line > len(lines) {
			t.Fatalf("%+v out of range for %d lines", *le, len(lines))
		}
	default:
		t.Fatalf("error of type %T: %v", err, err)
	}
	if !strings.HasPrefix(err.Error(), file+": line ") {
		t.Fatalf("message does not name the file and line: %v", err)
	}
}

// The two counts a message may end with.
var (
	moreFaultsRE  = regexp.MustCompile(`^and [0-9]+ more faults? in data/[a-z]+\.csv$`)
	moreNotUTF8RE = regexp.MustCompile(`^and ([0-9]+ more lines hold|1 more line holds) bytes that are not UTF-8 \(save the file as UTF-8\)$`)
)

func FuzzFirstFaultIsTheOneFaultMessage(f *testing.F) {
	add := func(which uint8, s string) { f.Add(which, []byte(s)) }
	add(0, "\xEF\xBB\xBFtransaction_id;customer_id;quantity;unit_price;discount\r\nT1;C1;2;100,00;0,10\r\n")
	add(0, txHeader+"T1,C1,2,\"1,234.50\",0\nT2,C2,1,$50.00,0\nT3,C3,1,50.00 €,0\n")
	add(2, cuHeader+"C1,retail\nC2,Gro\xdfhandel\n")
	add(0, txHeader+"T 1,C 1,x,$1,2\nT1,C1,1,1,0\nT1,C1,1,1,0\n")
	add(1, grHeader+strings.Repeat("G1,2,1\n", 25))
	add(2, cuHeader+"C1,re\"tail\nC\xff,x\r\nC2,\"x\"y\nC3,x\rC4\n\n-C5,x\n")
	add(2, cuHeader+"C 1,x\nC1,\"re\ntail\"\nC 2,x\n")
	add(1, "group_id\tsuccesses\teligible\nG1\t1\t2\n")
	add(2, cuHeader+"C 1,x\n"+strings.Repeat("C1,x\n", domain.MaxDataRows)+"C 2,x\n")
	// Issue 25's faults: a header in another case, a space after an ID, a
	// blank, a percent and a decimal-comma discount, a spreadsheet's empty
	// columns, a Latin-1 file.
	add(0, "Transaction_ID,Customer_ID,Quantity,Unit_Price,Discount\nT1,C1,1,1,0\n")
	add(0, txHeader+"T1 ,C1,1,1,\nT2,C1,1,1,10%\nT3,C1,1,\"12,50\",\"0,5\"\n")
	add(0, "transaction_id,customer_id,quantity,unit_price,discount,,\nT1,C1,1,1,0,,\n")
	add(0, txHeader+"T1,C1,1,1,0,,\nT2,C1,1,\"123456789012,123456\",0\n")
	add(2, cuHeader+strings.Repeat("C1,caf\xe9\nC 2,x\n", 30))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		file := fuzzSources[int(which)%3]
		files := fixtureFiles()
		files[file] = data
		_, err := domain.ParseSources(files)
		if err == nil {
			return
		}
		checkSourceError(t, file, data, err)
		msg := err.Error()
		lines := strings.Split(msg, "\n")
		if len(msg) >= 4096 || len(lines) > domain.MaxListedFaults+2 {
			t.Fatalf("a message of %d bytes in %d lines", len(msg), len(lines))
		}
		// Faults, one a line, then the count of the other lines that are
		// not UTF-8, then the count of unlisted faults.
		body := lines[1:]
		if n := len(body); n > 0 && moreFaultsRE.MatchString(body[n-1]) {
			body = body[:n-1]
		}
		if n := len(body); n > 0 && moreNotUTF8RE.MatchString(body[n-1]) {
			body = body[:n-1]
		}
		for i, l := range body {
			if !strings.HasPrefix(l, "line ") {
				t.Fatalf("line %d of the message is not a fault or a count: %q", i+2, l)
			}
		}
		// Bytes that are not UTF-8 are one fault of the file.
		if n := strings.Count(msg, "holds a byte that is not UTF-8"); n > 1 {
			t.Fatalf("%d faults for bytes that are not UTF-8 in one message: %s", n, msg)
		}
		var de *domain.DataError
		var le *domain.LimitError
		line := 0
		switch {
		case errors.As(err, &de):
			line = de.Line
		case errors.As(err, &le):
			line = le.Line
		}
		cut := data
		for i, n := 0, 0; i < len(data); i++ {
			if data[i] == '\n' {
				if n++; n == line {
					cut = data[:i+1]
					break
				}
			}
		}
		files[file] = cut
		_, one := domain.ParseSources(files)
		if one == nil {
			t.Fatalf("the bytes up to the first fault's line %d are accepted: %q", line, cut)
		}
		first, _, _ := strings.Cut(msg, "\n")
		alone, _, _ := strings.Cut(one.Error(), "\n")
		if first != alone {
			t.Fatalf("first line %q, but cut after line %d the message begins %q", first, line, alone)
		}
	})
}
