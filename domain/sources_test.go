package domain_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/domain"
)

const (
	txHeader = "transaction_id,customer_id,quantity,unit_price,discount\n"
	grHeader = "group_id,successes,eligible\n"
	cuHeader = "customer_id,segment\n"
)

// Every rule of SPEC §4, one row each: the file, its bytes, and where the
// fault must be reported.
func TestBadSourcesNameFileLineAndColumn(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		data   string
		line   int
		column int
	}{
		{"byte order mark", domain.TransactionsFile, "\xEF\xBB\xBF" + txHeader, 1, 1},
		{"invalid UTF-8 in a field", domain.CustomersFile, cuHeader + "C1,re\xfftail\n", 2, 2},
		{"invalid UTF-8 in the header", domain.GroupsFile, "group_id,succ\xc3esses,eligible\n", 1, 2},
		{"lone CR ends a line", domain.GroupsFile, grHeader + "G1,1,2\rG2,1,2\n", 2, 3},
		{"lone CR on an empty line", domain.GroupsFile, grHeader + "\r\nG1,1,2\n\r", 4, 1},
		{"empty file has no header", domain.GroupsFile, "", 1, 1},
		{"only empty lines", domain.GroupsFile, "\n\r\n\n", 4, 1},
		{"header names differ", domain.GroupsFile, "group_id,success,eligible\n", 1, 2},
		{"header order differs", domain.CustomersFile, "segment,customer_id\n", 1, 1},
		{"header has an extra column", domain.CustomersFile, "customer_id,segment,x\n", 1, 3},
		{"header is short", domain.TransactionsFile, "transaction_id,customer_id,quantity,unit_price\n", 1, 5},
		{"header is not trimmed", domain.CustomersFile, "customer_id, segment\n", 1, 2},
		{"row has too many fields", domain.GroupsFile, grHeader + "G1,1,2,\n", 2, 4},
		{"row has too few fields", domain.GroupsFile, grHeader + "G1,1\n", 2, 3},
		{"blank-looking line is not empty", domain.GroupsFile, grHeader + " \n", 2, 2},
		{"quote inside an unquoted field", domain.CustomersFile, cuHeader + "C1,re\"tail\n", 2, 2},
		{"text after a closing quote", domain.CustomersFile, cuHeader + "\"C1\"x,retail\n", 2, 1},
		{"quoted field never closed", domain.CustomersFile, cuHeader + "C1,\"retail\n", 2, 2},
		{"line break inside quotes", domain.CustomersFile, cuHeader + "C1,\"re\ntail\"\n", 2, 2},
		{"ID with a space is not trimmed", domain.CustomersFile, cuHeader + "C1 ,retail\n", 2, 1},
		{"ID starting with '-'", domain.CustomersFile, cuHeader + "-C1,retail\n", 2, 1},
		{"ID of 65 characters", domain.CustomersFile, cuHeader + "C1," + strings.Repeat("s", 65) + "\n", 2, 2},
		{"empty ID", domain.CustomersFile, cuHeader + ",retail\n", 2, 1},
		{"repeated transaction_id", domain.TransactionsFile, txHeader + "T1,C1,1,1,0\nT1,C2,1,1,0\n", 3, 1},
		{"repeated group_id", domain.GroupsFile, grHeader + "G1,1,2\nG2,1,2\nG1,0,0\n", 4, 1},
		{"quantity with a fraction", domain.TransactionsFile, txHeader + "T1,C1,1.0,1,0\n", 2, 3},
		{"quantity with a plus sign", domain.TransactionsFile, txHeader + "T1,C1,+1,1,0\n", 2, 3},
		{"quantity of 13 digits", domain.TransactionsFile, txHeader + "T1,C1,1234567890123,1,0\n", 2, 3},
		{"quantity blank", domain.TransactionsFile, txHeader + "T1,C1,,1,0\n", 2, 3},
		{"negative price", domain.TransactionsFile, txHeader + "T1,C1,1,-1,0\n", 2, 4},
		{"price with an exponent", domain.TransactionsFile, txHeader + "T1,C1,1,1e2,0\n", 2, 4},
		{"price with 7 fractional digits", domain.TransactionsFile, txHeader + "T1,C1,1,1.0000001,0\n", 2, 4},
		{"price with a trailing point", domain.TransactionsFile, txHeader + "T1,C1,1,1.,0\n", 2, 4},
		{"price with a leading point", domain.TransactionsFile, txHeader + "T1,C1,1,.5,0\n", 2, 4},
		{"price of spaces is not blank", domain.TransactionsFile, txHeader + "T1,C1,1, ,0\n", 2, 4},
		{"price NaN", domain.TransactionsFile, txHeader + "T1,C1,1,NaN,0\n", 2, 4},
		{"discount above 1", domain.TransactionsFile, txHeader + "T1,C1,1,1,1.000001\n", 2, 5},
		{"discount negative", domain.TransactionsFile, txHeader + "T1,C1,1,1,-0\n", 2, 5},
		{"discount blank", domain.TransactionsFile, txHeader + "T1,C1,1,1,\n", 2, 5},
		{"successes negative", domain.GroupsFile, grHeader + "G1,-1,2\n", 2, 2},
		{"eligible with a fraction", domain.GroupsFile, grHeader + "G1,1,2.0\n", 2, 3},
		{"successes above eligible", domain.GroupsFile, grHeader + "G1,3,2\n", 2, 2},
		{"fault after CRLF and empty lines counts physical lines", domain.GroupsFile, "\r\n\n" + grHeader + "\r\nG1,1,x\r\n", 5, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			files := fixtureFiles()
			files[tt.file] = []byte(tt.data)
			_, err := domain.ParseSources(files)
			var de *domain.DataError
			is.True(errors.As(err, &de)) // a DataError
			is.Equal(de.File, tt.file)
			is.Equal(de.Line, tt.line)
			is.Equal(de.Column, tt.column)
			msg := err.Error()
			is.True(strings.HasPrefix(msg, tt.file+": "))                                         // message names the file
			is.True(strings.Contains(msg, fmt.Sprintf("line %d, column %d", tt.line, tt.column))) // and the place
		})
	}
}

// A row with the wrong field count says how many it has, in grammatical
// English: "1 field", "2 fields".
func TestAWrongFieldCountIsCountedInWords(t *testing.T) {
	tests := []struct{ row, want string }{
		{"G1\n", "row has 1 field; the header has 3"},
		{"G1,1\n", "row has 2 fields; the header has 3"},
		{"G1,1,2,3\n", "row has 4 fields; the header has 3"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			is := is.New(t)
			files := fixtureFiles()
			files[domain.GroupsFile] = []byte(grHeader + tt.row)
			_, err := domain.ParseSources(files)
			is.True(err != nil)
			is.True(strings.HasSuffix(err.Error(), ": "+tt.want)) // the count, spelled right
		})
	}
}

func TestGoodSourcesParse(t *testing.T) {
	tests := []struct {
		name, file, data string
		rows             int
	}{
		{"header only", domain.TransactionsFile, txHeader, 0},
		{"no trailing newline", domain.GroupsFile, grHeader + "G1,1,2", 1},
		{"CRLF and LF mixed", domain.GroupsFile, "group_id,successes,eligible\r\nG1,1,2\nG2,0,0\r\n", 2},
		{"empty lines everywhere", domain.GroupsFile, "\n\r\n" + grHeader + "\n\nG1,1,2\n\r\n\nG2,1,1\n\n", 2},
		{"quoted fields and quoted empty price", domain.TransactionsFile, txHeader + "\"T1\",C1,\"3\",\"\",\"0\"\n", 1},
		{"quoted header", domain.CustomersFile, "\"customer_id\",\"segment\"\n\"C1\",\"x\"\n", 1},
		{"leading zeros", domain.GroupsFile, grHeader + "G1,007,010\n", 1},
		{"twelve digits and six places", domain.TransactionsFile, txHeader + "T1,C1,-999999999999,999999999999.999999,0.999999\n", 1},
		{"64-character IDs", domain.CustomersFile, cuHeader + strings.Repeat("c", 64) + ",x_-\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var n int
			var err error
			switch tt.file {
			case domain.TransactionsFile:
				var v []domain.Transaction
				v, err = domain.ParseTransactions([]byte(tt.data))
				n = len(v)
			case domain.GroupsFile:
				var v []domain.Group
				v, err = domain.ParseGroups([]byte(tt.data))
				n = len(v)
			case domain.CustomersFile:
				var v []domain.Customer
				v, err = domain.ParseCustomers([]byte(tt.data))
				n = len(v)
			}
			is.NoErr(err)
			is.Equal(n, tt.rows)
		})
	}
}

func TestQuotedEmptyPriceIsBlank(t *testing.T) {
	is := is.New(t)
	txs, err := domain.ParseTransactions([]byte(txHeader + "T1,C1,3,\"\",0\nT2,C1,3,\"0\",0\n"))
	is.NoErr(err)
	is.Equal(len(txs), 2)
	is.True(!txs[0].PriceKnown) // "" is blank: unknown
	is.True(txs[1].PriceKnown)  // "0" is a known zero
}

func TestRowLimit(t *testing.T) {
	rows := func(n int) []byte {
		var b strings.Builder
		b.WriteString(cuHeader)
		for i := range n {
			fmt.Fprintf(&b, "C%d,s\n\n", i) // empty lines do not count
		}
		return []byte(b.String())
	}
	t.Run("10,000 rows are accepted", func(t *testing.T) {
		is := is.New(t)
		c, err := domain.ParseCustomers(rows(domain.MaxDataRows))
		is.NoErr(err)
		is.Equal(len(c), domain.MaxDataRows)
	})
	t.Run("10,001 rows are INPUT_LIMIT at the row that passes it", func(t *testing.T) {
		is := is.New(t)
		_, err := domain.ParseCustomers(rows(domain.MaxDataRows + 1))
		var le *domain.LimitError
		is.True(errors.As(err, &le))
		is.Equal(le.File, domain.CustomersFile)
		is.Equal(le.Line, 2+2*domain.MaxDataRows)
		is.True(strings.Contains(err.Error(), "line 20002"))
	})
}

func TestFaultsAreReportedInSourceOrder(t *testing.T) {
	is := is.New(t)
	files := fixtureFiles()
	files[domain.DefinitionsFile] = []byte("{}")
	files[domain.CustomersFile] = []byte("bad\n")
	files[domain.GroupsFile] = []byte("bad\n")
	_, err := domain.ParseSources(files)
	var de *domain.DataError
	is.True(errors.As(err, &de))
	is.Equal(de.File, domain.GroupsFile) // groups comes before customers and definitions
	is.Equal(domain.SourceNames(), []string{domain.TransactionsFile, domain.GroupsFile, domain.CustomersFile, domain.DefinitionsFile})
}

func TestMessagesNeverQuoteTheData(t *testing.T) {
	is := is.New(t)
	files := fixtureFiles()
	files[domain.CustomersFile] = []byte(cuHeader + "/etc/passwd,x\n")
	_, err := domain.ParseSources(files)
	is.True(err != nil)
	is.True(!strings.Contains(err.Error(), "/etc")) // the value is not echoed
}
