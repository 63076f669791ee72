package domain_test

import (
	"errors"
	"fmt"
	"regexp"
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

// Every rule of protocol §4, from testdata/sources.json (which cmd/tool-runner
// runs through real processes too): the error's type, file, line, column
// and field, and a message that names them. Removed files and the 1 MiB
// limit belong to the reader, the definitions file to the app.
func TestBadSourcesNameFileLineAndColumn(t *testing.T) {
	seen := 0
	for _, tt := range sourceVariants(t) {
		if tt.Remove || (tt.Code == "INPUT_LIMIT" && tt.Line == 0) || tt.File == domain.DefinitionsFile {
			continue // the reader's, or the app's (the definitions file is JSON)
		}
		seen++
		t.Run(tt.Name, func(t *testing.T) {
			is := is.New(t)
			files := fixtureFiles()
			files[tt.File] = assemble(t, tt.Input)
			_, err := domain.ParseSources(files)
			msg := err.Error()
			is.True(strings.HasPrefix(msg, tt.File+": ")) // message names the file
			var de *domain.DataError
			var le *domain.LimitError
			switch tt.Code {
			case "INVALID_DATA":
				is.True(errors.As(err, &de)) // a DataError
				is.Equal(de.File, tt.File)
				is.Equal(de.Line, tt.Line)
				is.Equal(de.Column, tt.Column)
				if tt.Field != "" {
					is.Equal(de.Field, tt.Field)
				}
				is.True(strings.Contains(msg, fmt.Sprintf("line %d, column %d", tt.Line, tt.Column))) // and the place
			case "INPUT_LIMIT":
				is.True(errors.As(err, &le)) // a LimitError
				is.Equal(le.File, tt.File)
				is.Equal(le.Line, tt.Line)
			default:
				t.Fatalf("code %s is not the domain's", tt.Code)
			}
		})
	}
	if seen < 50 {
		t.Fatalf("only %d variants reach the domain", seen)
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

// ValidID is exactly ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$, checked against
// the regular expression for every byte in every position.
func TestValidIDIsItsPattern(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
	for c := range 256 {
		for _, s := range []string{string(rune(c)), "a" + string([]byte{byte(c)}), string([]byte{byte(c)}) + "a", "ab" + string([]byte{byte(c)}) + "cd"} {
			if got, want := domain.ValidID(s), re.MatchString(s); got != want {
				t.Fatalf("ValidID(%q) = %v, the pattern says %v", s, got, want)
			}
		}
	}
	for n := 0; n <= 70; n++ {
		s := strings.Repeat("a", n)
		if domain.ValidID(s) != re.MatchString(s) {
			t.Fatalf("ValidID of %d characters", n)
		}
	}
}

// ParseSource parses exactly the three CSV sources; any other name, the
// definitions file included (JSON, the app's), is refused.
func TestParseSourceKnowsOnlyTheThreeCSVSources(t *testing.T) {
	is := is.New(t)
	var in domain.Inputs
	for name, data := range fixtureFiles() {
		if name == domain.DefinitionsFile {
			is.True(domain.ParseSource(name, data, &in) != nil) // not a CSV source
			continue
		}
		is.NoErr(domain.ParseSource(name, data, &in)) // the fixture's sources parse
	}
	is.Equal(len(in.Transactions), 5)
	is.True(domain.ParseSource("data/other.csv", []byte(txHeader), &in) != nil) // not a source
}
