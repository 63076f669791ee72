package domain_test

import (
	"encoding/csv"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/domain"
)

// parseOne parses data as file, the other three sources the fixture's.
func parseOne(file, data string) error {
	files := fixtureFiles()
	files[file] = []byte(data)
	_, err := domain.ParseSources(files)
	return err
}

// dataError parses data as file and returns the DataError it must give.
func dataError(t *testing.T, file, data string) *domain.DataError {
	t.Helper()
	err := parseOne(file, data)
	var de *domain.DataError
	if !errors.As(err, &de) {
		t.Fatalf("%q: %v, not a DataError", data, err)
	}
	return de
}

// Every export mistake protocol §4 names is named where it is, with its fix:
// the first fault's place, field, reason and fix. A number's fix writes the
// literal value the shape of the cell shows was meant.
func TestEachExportMistakeIsNamedWithItsFix(t *testing.T) {
	const (
		bom        = "\xEF\xBB\xBF"
		fixBOM     = "save the file as UTF-8 without a byte order mark"
		semicolons = "fields are separated by commas; this header uses semicolons"
		tabs       = "fields are separated by commas; this header uses tabs"
		fixUTF8    = "save the file as UTF-8 (Latin-1 and Windows-1252 exports are not)"
		notUTF8    = "holds a byte that is not UTF-8"
		txWrite    = "write the header as transaction_id,customer_id,quantity,unit_price,discount"
		grWrite    = "write the header as group_id,successes,eligible"
		cuWrite    = "write the header as customer_id,segment"
		thousands  = "has thousands separators"
		currency   = "has a currency symbol"
		comma      = "has a decimal comma"
		percent    = "has a percent sign"
		spaces     = "has spaces around it"
		idSpaces   = "has spaces around the ID"
		trimFix    = "remove the spaces at either end"
	)
	tests := []struct {
		name, file, data   string
		line, column       int
		field, reason, fix string
	}{
		{"a byte order mark before a good header", domain.TransactionsFile, bom + fixtureTransactions, 1, 1, "", "starts with a byte order mark", fixBOM},
		{"a semicolon-separated header", domain.CustomersFile, "customer_id;segment\nC1;retail\n", 1, 1, "", `header column must be "customer_id"`, semicolons + "; " + cuWrite},
		{"a quoted semicolon-separated header", domain.CustomersFile, "\"customer_id\";\"segment\"\n", 1, 1, "", "text after a closing quote", semicolons + "; " + cuWrite},
		{"a tab-separated header", domain.GroupsFile, "group_id\tsuccesses\teligible\nG1\t1\t2\n", 1, 1, "", `header column must be "group_id"`, tabs + "; " + grWrite},
		{"a header in another letter case", domain.TransactionsFile, "Transaction_ID,Customer_ID,Quantity,Unit_Price,Discount\n", 1, 1, "", `header column must be "transaction_id"`,
			"the names differ only in letter case; " + txWrite},
		{"a header with spaces for underscores and after commas", domain.TransactionsFile, "transaction id, customer id, quantity, unit price, discount\n", 1, 1, "", `header column must be "transaction_id"`,
			"the names differ only in spaces; " + txWrite},
		{"a header as a person titles it", domain.GroupsFile, "group_id,Successes ,Eligible\n", 1, 2, "", `header column must be "successes"`,
			"the names differ only in letter case and spaces; " + grWrite},
		{"a header with another name", domain.GroupsFile, "group_id,wins,eligible\n", 1, 2, "", `header column must be "successes"`, grWrite},
		{"a header missing a column", domain.GroupsFile, "group_id,successes\n", 1, 3, "", `header is missing column "eligible"`, grWrite},
		{"a header with a column too many", domain.CustomersFile, "customer_id,segment,region\n", 1, 3, "", "header has more than 2 columns", cuWrite},
		{"a spreadsheet's empty columns", domain.TransactionsFile, "transaction_id,customer_id,quantity,unit_price,discount,,\nT1,C1,1,1,0,,\n", 1, 6, "", "header ends with 2 empty columns",
			"delete the 2 empty columns after discount on every line (a spreadsheet's unused columns); " + txWrite},
		{"one empty column in another case", domain.CustomersFile, "Customer_ID,Segment,\n", 1, 1, "", `header column must be "customer_id"`,
			"the names differ only in letter case; delete the 1 empty column after segment on every line (a spreadsheet's unused columns); " + cuWrite},
		{"no header row", domain.GroupsFile, "\n\n", 3, 1, "", "no header row", "the first line is the header: group_id,successes,eligible"},
		{"a row with a spreadsheet's empty fields", domain.CustomersFile, cuHeader + "C1,retail,,\n", 2, 3, "", "row has 4 fields; the header has 2",
			"the last 2 fields are empty: delete them (a spreadsheet's unused columns)"},
		{"a row with one empty field too many", domain.CustomersFile, cuHeader + "C1,retail,\n", 2, 3, "", "row has 3 fields; the header has 2",
			"the last field is empty: delete it (a spreadsheet's unused column)"},
		{"a row with a field too many", domain.CustomersFile, cuHeader + "C1,retail,x\n", 2, 3, "", "row has 3 fields; the header has 2", ""},
		{"a transaction ID with a space after it", domain.TransactionsFile, txHeader + "T1 ,C1,1,1,0\n", 2, 1, "transaction_id", idSpaces, trimFix},
		{"a customer ID with a no-break space before it", domain.CustomersFile, cuHeader + "\u00a0C1,retail\n", 2, 1, "customer_id", idSpaces, trimFix},
		{"a group ID with a tab after it", domain.GroupsFile, grHeader + "G1\t,1,2\n", 2, 1, "group_id", idSpaces, trimFix},
		{"an ID with a space inside", domain.GroupsFile, grHeader + "G 1,1,2\n", 2, 1, "group_id",
			"not an ID (1 to 64 ASCII letters, digits, '_' or '-', starting with a letter or digit)", ""},
		{"a price with a thousands comma", domain.TransactionsFile, txHeader + "T1,C1,1,\"1,234.50\",0\n", 2, 4, "unit_price", thousands, "write 1234.50"},
		{"a price with thousands points and a decimal comma", domain.TransactionsFile, txHeader + "T1,C1,1,\"1.234,50\",0\n", 2, 4, "unit_price", "has thousands separators and a decimal comma", "write 1234.50"},
		{"a price grouped by spaces with a decimal comma", domain.TransactionsFile, txHeader + "T1,C1,1,\"1 234,5\",0\n", 2, 4, "unit_price", "has thousands separators and a decimal comma", "write 1234.5"},
		{"a German price", domain.TransactionsFile, txHeader + "T1,C1,1,\"1.250,00 €\",0\n", 2, 4, "unit_price", "has a currency symbol, thousands separators and a decimal comma", "write 1250.00"},
		{"a price grouped by spaces", domain.TransactionsFile, txHeader + "T1,C1,1,1 234 567.5,0\n", 2, 4, "unit_price", thousands, "write 1234567.5"},
		{"a price grouped by no-break spaces", domain.TransactionsFile, txHeader + "T1,C1,1,1\u00a0234,0\n", 2, 4, "unit_price", thousands, "write 1234"},
		{"a price with two thousands commas", domain.TransactionsFile, txHeader + "T1,C1,1,\"9,007,855.54\",0\n", 2, 4, "unit_price", thousands, "write 9007855.54"},
		{"a price whose one comma may be either", domain.TransactionsFile, txHeader + "T1,C1,1,\"1,250\",0\n", 2, 4, "unit_price",
			"has a comma before three digits", "write 1250 if it separates thousands, or 1.250 if it is a decimal comma"},
		{"a quantity with a thousands comma", domain.TransactionsFile, txHeader + "T1,C1,\"-1,000\",1,0\n", 2, 3, "quantity", thousands, "write -1000"},
		{"eligible with an apostrophe", domain.GroupsFile, grHeader + "G1,1,1'000\n", 2, 3, "eligible", thousands, "write 1000"},
		{"a dollar sign", domain.TransactionsFile, txHeader + "T1,C1,1,$50.00,0\n", 2, 4, "unit_price", currency, "write 50.00"},
		{"a euro sign after a space", domain.TransactionsFile, txHeader + "T1,C1,1,50.00 €,0\n", 2, 4, "unit_price", currency, "write 50.00"},
		{"a pound sign", domain.TransactionsFile, txHeader + "T1,C1,1,£5,0\n", 2, 4, "unit_price", currency, "write 5"},
		{"a currency code", domain.TransactionsFile, txHeader + "T1,C1,1,EUR 12.50,0\n", 2, 4, "unit_price", currency, "write 12.50"},
		{"a dollar sign and a thousands comma", domain.TransactionsFile, txHeader + "T1,C1,1,\"$1,234.50\",0\n", 2, 4, "unit_price", "has a currency symbol and thousands separators", "write 1234.50"},
		{"a decimal comma in a price", domain.TransactionsFile, txHeader + "T1,C1,1,\"12,50\",0\n", 2, 4, "unit_price", comma, "write 12.50"},
		{"a decimal comma in a discount", domain.TransactionsFile, txHeader + "T1,C1,1,1,\"0,10\"\n", 2, 5, "discount", comma, "write 0.10"},
		{"a discount's comma before three digits is a decimal comma", domain.TransactionsFile, txHeader + "T1,C1,1,1,\"1,000\"\n", 2, 5, "discount", comma, "write 1.000"},
		{"a euro sign, a space and a decimal comma", domain.TransactionsFile, txHeader + "T1,C1,1,\"12,50 €\",0\n", 2, 4, "unit_price", "has a currency symbol and a decimal comma", "write 12.50"},
		{"a percent discount", domain.TransactionsFile, txHeader + "T1,C1,1,1,10%\n", 2, 5, "discount", percent, "write 0.10"},
		{"a percent discount with a space and decimals", domain.TransactionsFile, txHeader + "T1,C1,1,1,12.5 %\n", 2, 5, "discount", percent, "write 0.125"},
		{"a percent discount with a decimal comma", domain.TransactionsFile, txHeader + "T1,C1,1,1,\"2,5%\"\n", 2, 5, "discount", "has a decimal comma and a percent sign", "write 0.025"},
		{"a whole discount in percent", domain.TransactionsFile, txHeader + "T1,C1,1,1,100%\n", 2, 5, "discount", percent, "write 1.00"},
		{"a percent discount above 100", domain.TransactionsFile, txHeader + "T1,C1,1,1,150%\n", 2, 5, "discount", percent, "a discount is a fraction from 0 to 1: write 10 % as 0.10"},
		{"a percent sign in a price is no percentage", domain.TransactionsFile, txHeader + "T1,C1,1,10%,0\n", 2, 4, "unit_price",
			"not a nonnegative decimal (plain notation, 1 to 12 integer and at most 6 fractional digits), or blank when unknown", ""},
		{"a blank discount", domain.TransactionsFile, txHeader + "T1,C1,1,1,\n", 2, 5, "discount", "is blank", "write 0 for no discount"},
		{"a quoted blank discount", domain.TransactionsFile, txHeader + "T1,C1,1,1,\"\"\n", 2, 5, "discount", "is blank", "write 0 for no discount"},
		{"a discount of spaces", domain.TransactionsFile, txHeader + "T1,C1,1,1, \n", 2, 5, "discount", "holds only spaces", "write 0 for no discount"},
		{"a price of spaces", domain.TransactionsFile, txHeader + "T1,C1,1, ,0\n", 2, 4, "unit_price", "holds only spaces", "leave it empty when the price is unknown"},
		{"spaces around a quantity", domain.TransactionsFile, txHeader + "T1,C1, 2 ,1,0\n", 2, 3, "quantity", spaces, "write 2"},
		{"spaces and a currency symbol", domain.TransactionsFile, txHeader + "T1,C1,1, $5 ,0\n", 2, 4, "unit_price", "has spaces around it and a currency symbol", "write 5"},
		{"a literal that would break the column's bounds is not offered", domain.TransactionsFile, txHeader + "T1,C1,1,\"$1,234,567,890,123\",0\n", 2, 4, "unit_price",
			"not a nonnegative decimal (plain notation, 1 to 12 integer and at most 6 fractional digits), or blank when unknown", ""},
		{"a negative price with a currency symbol gets the rule", domain.TransactionsFile, txHeader + "T1,C1,1,$-5,0\n", 2, 4, "unit_price",
			"not a nonnegative decimal (plain notation, 1 to 12 integer and at most 6 fractional digits), or blank when unknown", ""},
		{"a decimal comma in a count gets the rule", domain.GroupsFile, grHeader + "G1,1,\"2,5\"\n", 2, 3, "eligible",
			"not a nonnegative integer (plain notation, 1 to 12 digits)", ""},
		{"a Latin-1 segment", domain.CustomersFile, cuHeader + "C1,Gro\xdfhandel\n", 2, 2, "segment", notUTF8, fixUTF8},
		{"a Windows-1252 quote in a quoted segment", domain.CustomersFile, cuHeader + "C1,\"\x93retail\x94\"\n", 2, 2, "segment", notUTF8, fixUTF8},
		{"a Latin-1 header", domain.GroupsFile, "group_id,succ\xe8s,eligible\n", 1, 2, "", notUTF8, fixUTF8},
		{"no mistake explains a word", domain.TransactionsFile, txHeader + "T1,C1,ten,1,0\n", 2, 3, "quantity",
			"not an integer (plain notation, optional '-', 1 to 12 digits)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			de := dataError(t, tt.file, tt.data)
			is.Equal(de.File, tt.file)
			is.Equal(de.Fault, domain.Fault{Line: tt.line, Column: tt.column, Field: tt.field, Reason: tt.reason, Fix: tt.fix})
			first, _, _ := strings.Cut(de.Error(), "\n")
			want := fmt.Sprintf("%s: line %d, column %d", tt.file, tt.line, tt.column)
			is.True(strings.HasPrefix(first, want))                                                                         // the place first
			is.True(strings.HasSuffix(first, ": "+tt.reason+map[bool]string{true: "", false: "; " + tt.fix}[tt.fix == ""])) // what is wrong, then the fix
			for _, lit := range literals(tt.fix) {
				fixed := withField(t, tt.data, tt.line, tt.column, lit)
				is.True(!faultAt(parseOne(tt.file, fixed), tt.line, tt.column)) // the literal fix fixes the field
			}
		})
	}
}

// literalRE finds the literal numbers a fix writes: "write 12.50", and
// the decimal reading "or 1.250 if".
var literalRE = regexp.MustCompile(`(?:^|; )write (-?[0-9]+(?:\.[0-9]+)?)(?:$| if| for)|, or (-?[0-9]+(?:\.[0-9]+)?) if`)

// literals returns the numbers a fix writes.
func literals(fix string) []string {
	var out []string
	for _, m := range literalRE.FindAllStringSubmatch(fix, -1) {
		out = append(out, m[1]+m[2])
	}
	return out
}

// The finder of literals finds each, and nothing in an example.
func TestLiteralsAreFoundInFixes(t *testing.T) {
	is := is.New(t)
	is.Equal(literals("write 12.50"), []string{"12.50"})
	is.Equal(literals("write -1000"), []string{"-1000"})
	is.Equal(literals("write 0 for no discount"), []string{"0"})
	is.Equal(literals("write 1250 if it separates thousands, or 1.250 if it is a decimal comma"), []string{"1250", "1.250"})
	is.Equal(literals("a discount is a fraction from 0 to 1: write 10 % as 0.10"), []string(nil))
	is.Equal(literals("write the header as group_id,successes,eligible"), []string(nil))
}

// withField returns data with the field at line and column (1-based, a
// record on one line) replaced by value, the rest of the line as
// encoding/csv writes it.
func withField(t *testing.T, data string, line, column int, value string) string {
	t.Helper()
	lines := strings.Split(data, "\n")
	r := csv.NewReader(strings.NewReader(lines[line-1]))
	r.FieldsPerRecord = -1
	fields, err := r.Read()
	if err != nil || column > len(fields) {
		t.Fatalf("line %d of %q: %v", line, data, err)
	}
	fields[column-1] = value
	var b strings.Builder
	w := csv.NewWriter(&b)
	if err := w.Write(fields); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	lines[line-1] = strings.TrimSuffix(b.String(), "\n")
	return strings.Join(lines, "\n")
}

// faultAt reports whether err names a fault at line and column.
func faultAt(err error, line, column int) bool {
	var de *domain.DataError
	if !errors.As(err, &de) {
		return false
	}
	for _, f := range append([]domain.Fault{de.Fault}, de.More...) {
		if f.Line == line && f.Column == column {
			return true
		}
	}
	return false
}

// A Latin-1 export has a byte that is not UTF-8 on every line with an
// accent: one fault, at the first such line, and the count of the others
// after the listed faults, with the one fix; other faults are listed as
// ever, and the count of unlisted faults comes last.
func TestAFileThatIsNotUTF8IsOneFault(t *testing.T) {
	const fix = "(save the file as UTF-8)"
	tests := []struct {
		name, data string
		want       []string
	}{
		{"one line", cuHeader + "C1,Gro\xdfhandel\n", []string{
			"data/customers.csv: line 2, column 2 (segment): holds a byte that is not UTF-8; save the file as UTF-8 (Latin-1 and Windows-1252 exports are not)",
		}},
		{"two lines", cuHeader + "C1,Gro\xdfhandel\nC2,caf\xe9\n", []string{
			"data/customers.csv: line 2, column 2 (segment): holds a byte that is not UTF-8; save the file as UTF-8 (Latin-1 and Windows-1252 exports are not)",
			"and 1 more line holds bytes that are not UTF-8 " + fix,
		}},
		{"36 lines among other faults", cuHeader + "C 0,x\n" + strings.Repeat("C1,Gro\xdfhandel\n", 36) + "C 1,x\n", []string{
			"data/customers.csv: line 2, column 1 (customer_id): not an ID (1 to 64 ASCII letters, digits, '_' or '-', starting with a letter or digit)",
			"line 3, column 2 (segment): holds a byte that is not UTF-8; save the file as UTF-8 (Latin-1 and Windows-1252 exports are not)",
			"line 39, column 1 (customer_id): not an ID (1 to 64 ASCII letters, digits, '_' or '-', starting with a letter or digit)",
			"and 35 more lines hold bytes that are not UTF-8 " + fix,
		}},
		{"after 20 other faults", cuHeader + strings.Repeat("C 0,x\n", 21) + strings.Repeat("C1,\xdf\n", 3), []string{
			"and 2 more lines hold bytes that are not UTF-8 " + fix,
			"and 2 more faults in data/customers.csv",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			lines := strings.Split(dataError(t, domain.CustomersFile, tt.data).Error(), "\n")
			if len(tt.want) == 2 && strings.HasPrefix(tt.want[0], "and ") {
				is.Equal(len(lines), domain.MaxListedFaults+2)
				lines = lines[domain.MaxListedFaults:]
			}
			is.Equal(lines, tt.want)
		})
	}
}

// Issue 17's spreadsheet export: a byte order mark and semicolons. One
// answer names both, the mark first, each with its fix.
func TestAnExportWithAByteOrderMarkAndSemicolonsNamesBoth(t *testing.T) {
	is := is.New(t)
	de := dataError(t, domain.TransactionsFile, "\xEF\xBB\xBFtransaction_id;customer_id;quantity;unit_price;discount\r\nT1;C1;2;100,00;0,10\r\n")
	is.Equal(de.Error(), "data/transactions.csv: line 1, column 1: starts with a byte order mark; save the file as UTF-8 without a byte order mark\n"+
		`line 1, column 1: header column must be "transaction_id"; fields are separated by commas; this header uses semicolons; write the header as transaction_id,customer_id,quantity,unit_price,discount`)
}

// Issue 17's three bad prices in three rows of a comma-separated file: all
// three in one answer, each with its fix.
func TestThreeBadPricesAreNamedInOneAnswer(t *testing.T) {
	is := is.New(t)
	de := dataError(t, domain.TransactionsFile, txHeader+"T1,C1,2,\"1,234.50\",0\nT2,C2,1,$50.00,0\nT3,C3,1,50.00 €,0\nT4,C4,1,50.00,0\n")
	is.Equal(de.Error(), "data/transactions.csv: line 2, column 4 (unit_price): has thousands separators; write 1234.50\n"+
		"line 3, column 4 (unit_price): has a currency symbol; write 50.00\n"+
		"line 4, column 4 (unit_price): has a currency symbol; write 50.00")
}

// Issue 17's customers.csv with a Latin-1 segment: the field and the fix.
func TestALatin1SegmentNamesTheFieldAndTheEncodingFix(t *testing.T) {
	is := is.New(t)
	de := dataError(t, domain.CustomersFile, cuHeader+"C1,retail\nC2,Gro\xdfhandel\n")
	is.Equal(de.Error(), "data/customers.csv: line 3, column 2 (segment): holds a byte that is not UTF-8; save the file as UTF-8 (Latin-1 and Windows-1252 exports are not)")
}

// Every fault of a row is named, each on its own line, in scan order.
func TestEveryFaultOfARowIsNamed(t *testing.T) {
	is := is.New(t)
	de := dataError(t, domain.TransactionsFile, txHeader+"T 1,C 1,x,$1,2\n")
	is.Equal(strings.Split(de.Error(), "\n"), []string{
		"data/transactions.csv: line 2, column 1 (transaction_id): not an ID (1 to 64 ASCII letters, digits, '_' or '-', starting with a letter or digit)",
		"line 2, column 2 (customer_id): not an ID (1 to 64 ASCII letters, digits, '_' or '-', starting with a letter or digit)",
		"line 2, column 3 (quantity): not an integer (plain notation, optional '-', 1 to 12 digits)",
		"line 2, column 4 (unit_price): has a currency symbol; write 1",
		"line 2, column 5 (discount): not a decimal in [0, 1] (plain notation, at most 6 fractional digits)",
	})
}

// The first fault and 19 more are listed, one a line; the rest are
// counted.
func TestAMessageListsTwentyFaultsAndCountsTheRest(t *testing.T) {
	for _, tt := range []struct {
		rows, listed, more int
	}{{1, 1, 0}, {19, 19, 0}, {20, 20, 0}, {21, 20, 1}, {30, 20, 10}, {domain.MaxDataRows, 20, domain.MaxDataRows - 20}} {
		t.Run(fmt.Sprintf("%d bad rows", tt.rows), func(t *testing.T) {
			is := is.New(t)
			var b strings.Builder
			b.WriteString(grHeader)
			for i := range tt.rows {
				fmt.Fprintf(&b, "G%d,2,1\n", i)
			}
			de := dataError(t, domain.GroupsFile, b.String())
			lines := strings.Split(de.Error(), "\n")
			is.Equal(len(de.More), tt.listed-1)
			is.Equal(de.Unlisted, tt.more)
			is.Equal(lines[0], "data/groups.csv: line 2, column 2 (successes): successes exceeds eligible")
			for i := 1; i < tt.listed; i++ {
				is.Equal(lines[i], fmt.Sprintf("line %d, column 2 (successes): successes exceeds eligible", i+2))
			}
			if tt.more == 0 {
				is.Equal(len(lines), tt.listed) // nothing unlisted, nothing counted
				return
			}
			is.Equal(len(lines), tt.listed+1)
			is.Equal(lines[tt.listed], fmt.Sprintf("and %s in data/groups.csv", map[bool]string{true: "1 more fault", false: fmt.Sprint(tt.more) + " more faults"}[tt.more == 1]))
		})
	}
}

// What ends the checking of a file: a header that does not match (its
// rows are not judged), a quote not closed on its line, the 10,001st row.
// Any other fault lets the next line be read.
func TestWhatEndsTheChecking(t *testing.T) {
	rows := func(n int, row string) string { return strings.Repeat(row, n) }
	tests := []struct {
		name, file, data string
		places           []string
	}{
		{"a header that does not match", domain.GroupsFile, "group_id,successes\nG1,x,y\nG2,1\n", []string{"line 1, column 3"}},
		{"a structural fault in the header", domain.GroupsFile, "group_id,succ\"esses,eligible\nG1,x,y\n", []string{"line 1, column 2"}},
		{"a quoted field holding a line break", domain.CustomersFile, cuHeader + "C1,\"re\ntail\"\nC 2,x\n", []string{"line 2, column 2"}},
		{"a quote never closed", domain.CustomersFile, cuHeader + "C 1,x\nC1,\"retail", []string{"line 2, column 1", "line 3, column 2"}},
		{"the 10,001st row after a fault", domain.CustomersFile, cuHeader + "C 1,x\n" + rows(domain.MaxDataRows, "C1,x\n") + "C 2,x\n",
			[]string{"line 2, column 1", "line 10002 is data row 10001; a source holds at most 10000 data rows, so the rows after it were not checked"}},
		{"faults of the line structure do not", domain.CustomersFile, cuHeader + "C1,re\"tail\nC\xff,x\r\nC2,\"x\"y\nC3,x\rC4\n\n-C5,x\n",
			[]string{"line 2, column 2", "line 3, column 1", "line 4, column 2", "line 5, column 2", "line 7, column 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			de := dataError(t, tt.file, tt.data)
			lines := strings.Split(strings.TrimPrefix(de.Error(), tt.file+": "), "\n")
			is.Equal(len(lines), len(tt.places)) // one line a fault, nothing after the end
			for i, place := range tt.places {
				is.True(strings.HasPrefix(lines[i], place)) // each fault where it is
			}
		})
	}
	t.Run("the 10,001st row with no fault before it is INPUT_LIMIT", func(t *testing.T) {
		is := is.New(t)
		var le *domain.LimitError
		is.True(errors.As(parseOne(domain.CustomersFile, cuHeader+rows(domain.MaxDataRows+1, "C1,x\n")+"C 2,x\n"), &le))
		is.Equal(le.Line, domain.MaxDataRows+2)
	})
}

// segment is a label as a spreadsheet writes it (protocol §4): 1 to 64 code
// points of UTF-8, no control character, no space at either end.
func TestSegmentsAreLabels(t *testing.T) {
	good := []string{"Online EU", "Großhandel", `"retail, web"`, `"say ""hi"""`, "x", strings.Repeat("ß", 64), "a\u00a0b", "\u200bmid\ufeff", "a  b", "日本の小売"}
	for _, s := range good {
		t.Run("accepts "+s, func(t *testing.T) {
			is := is.New(t)
			c, err := domain.ParseCustomers([]byte(cuHeader + "C1," + s + "\n"))
			is.NoErr(err)
			is.Equal(len(c), 1)
		})
	}
	bad := []struct{ segment, reason string }{
		{"", "is blank; a segment is 1 to 64 characters"},
		{`""`, "is blank; a segment is 1 to 64 characters"},
		{strings.Repeat("ß", 65), "is longer than 64 characters"},
		{" retail", "begins or ends with a space"},
		{"retail ", "begins or ends with a space"},
		{"re\ttail", "holds a control character (a tab, a line break, …)"},
		{"re\x00tail", "holds a control character (a tab, a line break, …)"},
		{"re\x7ftail", "holds a control character (a tab, a line break, …)"},
		{"re\u0085tail", "holds a control character (a tab, a line break, …)"},
		{"re\u009ftail", "holds a control character (a tab, a line break, …)"},
		{"re\xfftail", "holds a byte that is not UTF-8"},
	}
	for _, tt := range bad {
		t.Run(fmt.Sprintf("refuses %q", tt.segment), func(t *testing.T) {
			is := is.New(t)
			de := dataError(t, domain.CustomersFile, cuHeader+"C1,"+tt.segment+"\n")
			is.Equal(de.Fault.Line, 2)
			is.Equal(de.Fault.Column, 2)
			is.Equal(de.Fault.Field, "segment")
			is.Equal(de.Fault.Reason, tt.reason)
		})
	}
}
