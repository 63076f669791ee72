package domain_test

import (
	"errors"
	"fmt"
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
// the first fault's place, field, reason and fix.
func TestEachExportMistakeIsNamedWithItsFix(t *testing.T) {
	const (
		bom        = "\xEF\xBB\xBF"
		fixBOM     = "save the file as UTF-8 without a byte order mark"
		semicolons = "fields are separated by commas; this header uses semicolons"
		tabs       = "fields are separated by commas; this header uses tabs"
		thousands  = "write 1234.50 without thousands separators"
		thousandsN = "write 1234 without thousands separators"
		currency   = "write the number alone, without a currency symbol"
		both       = "write 1234.50 alone, without a currency symbol or thousands separators"
		fixUTF8    = "save the file as UTF-8 (Latin-1 and Windows-1252 exports are not)"
		notUTF8    = "holds a byte that is not UTF-8"
	)
	tests := []struct {
		name, file, data   string
		line, column       int
		field, reason, fix string
	}{
		{"a byte order mark before a good header", domain.TransactionsFile, bom + fixtureTransactions, 1, 1, "", "starts with a byte order mark", fixBOM},
		{"a semicolon-separated header", domain.CustomersFile, "customer_id;segment\nC1;retail\n", 1, 1, "", `header column must be "customer_id"`, semicolons},
		{"a quoted semicolon-separated header", domain.CustomersFile, "\"customer_id\";\"segment\"\n", 1, 1, "", "text after a closing quote", semicolons},
		{"a tab-separated header", domain.GroupsFile, "group_id\tsuccesses\teligible\nG1\t1\t2\n", 1, 1, "", `header column must be "group_id"`, tabs},
		{"a price with a thousands comma", domain.TransactionsFile, txHeader + "T1,C1,1,\"1,234.50\",0\n", 2, 4, "unit_price", "uses thousands separators", thousands},
		{"a price with thousands points and a decimal comma", domain.TransactionsFile, txHeader + "T1,C1,1,\"1.234,50\",0\n", 2, 4, "unit_price", "uses thousands separators", thousands},
		{"a price grouped by spaces", domain.TransactionsFile, txHeader + "T1,C1,1,1 234 567.5,0\n", 2, 4, "unit_price", "uses thousands separators", thousands},
		{"a price grouped by no-break spaces", domain.TransactionsFile, txHeader + "T1,C1,1,1\u00a0234,0\n", 2, 4, "unit_price", "uses thousands separators", thousands},
		{"a quantity with a thousands comma", domain.TransactionsFile, txHeader + "T1,C1,\"-1,000\",1,0\n", 2, 3, "quantity", "uses thousands separators", thousandsN},
		{"eligible with an apostrophe", domain.GroupsFile, grHeader + "G1,1,1'000\n", 2, 3, "eligible", "uses thousands separators", thousandsN},
		{"a dollar sign", domain.TransactionsFile, txHeader + "T1,C1,1,$50.00,0\n", 2, 4, "unit_price", "has a currency symbol", currency},
		{"a euro sign after a space", domain.TransactionsFile, txHeader + "T1,C1,1,50.00 €,0\n", 2, 4, "unit_price", "has a currency symbol", currency},
		{"a pound sign", domain.TransactionsFile, txHeader + "T1,C1,1,£5,0\n", 2, 4, "unit_price", "has a currency symbol", currency},
		{"a currency code", domain.TransactionsFile, txHeader + "T1,C1,1,EUR 12.50,0\n", 2, 4, "unit_price", "has a currency symbol", currency},
		{"a dollar sign and a thousands comma", domain.TransactionsFile, txHeader + "T1,C1,1,\"$1,234.50\",0\n", 2, 4, "unit_price", "has a currency symbol and thousands separators", both},
		{"a Latin-1 segment", domain.CustomersFile, cuHeader + "C1,Gro\xdfhandel\n", 2, 2, "segment", notUTF8, fixUTF8},
		{"a Windows-1252 quote in a quoted segment", domain.CustomersFile, cuHeader + "C1,\"\x93retail\x94\"\n", 2, 2, "segment", notUTF8, fixUTF8},
		{"a Latin-1 header", domain.GroupsFile, "group_id,succ\xe8s,eligible\n", 1, 2, "", notUTF8, fixUTF8},
		{"a decimal comma is not taken for thousands", domain.TransactionsFile, txHeader + "T1,C1,1,\"12,50\",0\n", 2, 4, "unit_price",
			"not a nonnegative decimal (plain notation, 1 to 12 integer and at most 6 fractional digits), or blank when unknown", ""},
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
		})
	}
}

// Issue 17's spreadsheet export: a byte order mark and semicolons. One
// answer names both, the mark first, each with its fix.
func TestAnExportWithAByteOrderMarkAndSemicolonsNamesBoth(t *testing.T) {
	is := is.New(t)
	de := dataError(t, domain.TransactionsFile, "\xEF\xBB\xBFtransaction_id;customer_id;quantity;unit_price;discount\r\nT1;C1;2;100,00;0,10\r\n")
	is.Equal(de.Error(), "data/transactions.csv: line 1, column 1: starts with a byte order mark; save the file as UTF-8 without a byte order mark\n"+
		`line 1, column 1: header column must be "transaction_id"; fields are separated by commas; this header uses semicolons`)
}

// Issue 17's three bad prices in three rows of a comma-separated file: all
// three in one answer, each with its fix.
func TestThreeBadPricesAreNamedInOneAnswer(t *testing.T) {
	is := is.New(t)
	de := dataError(t, domain.TransactionsFile, txHeader+"T1,C1,2,\"1,234.50\",0\nT2,C2,1,$50.00,0\nT3,C3,1,50.00 €,0\nT4,C4,1,50.00,0\n")
	is.Equal(de.Error(), "data/transactions.csv: line 2, column 4 (unit_price): uses thousands separators; write 1234.50 without thousands separators\n"+
		"line 3, column 4 (unit_price): has a currency symbol; write the number alone, without a currency symbol\n"+
		"line 4, column 4 (unit_price): has a currency symbol; write the number alone, without a currency symbol")
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
		"line 2, column 4 (unit_price): has a currency symbol; write the number alone, without a currency symbol",
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
