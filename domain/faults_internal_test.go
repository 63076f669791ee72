package domain

import (
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// The longest message a source can get stays under 4 KiB (protocol §4). A
// fault of the header line ends the checking, so a message holds at most
// two of them (a byte order mark, then the header's fault); any other
// message holds at most 20 faults of the rows and the two counts. Each is
// taken at its longest: the longest text at the largest line and column a
// 1 MiB file can have (every byte a line, or a comma), the longest field
// name. Every reason and fix the package writes is here; a new one belongs
// in these lists.
func TestTheLongestMessageStaysUnder4KiB(t *testing.T) {
	is := is.New(t)
	var rows, header []problem
	for _, k := range []numberKind{quantityNumber, countNumber, priceNumber, discountNumber} {
		for _, s := range []string{"x", "$1,234.50", "$1", "1,234", "", " ", "10%", "150%", " $ 123,456 ", "123456789012,123456",
			" $ 123,456,789,012.123456 ", " 12,5 % ", "1,000"} {
			rows = append(rows, numberProblem(s, k))
		}
	}
	rows = append(rows, idProblem("T1 "), idProblem("T 1"))
	for _, s := range []string{"", " x", strings.Repeat("x", 65), "\t", "\xff"} {
		p, _ := labelProblem(s)
		rows = append(rows, p)
	}
	for _, reason := range []string{reasonLoneCR, reasonBreak, reasonBareQuote, reasonAfterQuote, reasonNotClosed} {
		rows = append(rows, problem{reason: reason})
	}
	rows = append(rows, problem{reasonUTF8, fixUTF8}, problem{reason: notID},
		problem{reason: "repeats the transaction_id of line 1048577"}, problem{reason: "successes exceeds eligible"},
		problem{reason: fmt.Sprintf("row has %s; the header has 5", count(MaxSourceBytes/2+1, "field")),
			fix: fmt.Sprintf("the last %d fields are empty: delete them (a spreadsheet's unused columns)", MaxSourceBytes/2+1)},
		problem{reason: limitReason()})

	tx := []string{"transaction_id", "customer_id", "quantity", "unit_price", "discount"}
	sep := separatorFix([]byte("a;b"), 2)
	for _, fields := range [][]string{
		{"Transaction ID", "Customer ID", "Quantity", "Unit Price", "Discount", "", "", ""},
		{"transaction_id", "customer_id", "quantity", "unit_price", "discount", "", ""},
		{"transaction_id"}, {"a", "b"}, append(tx, "x"),
	} {
		f, _ := headerFault(fields, tx)
		header = append(header, problem{f.Reason, f.Fix}, problem{f.Reason, sep + "; " + f.Fix})
	}
	for _, reason := range []string{reasonLoneCR, reasonBreak, reasonBareQuote, reasonAfterQuote, reasonNotClosed} {
		header = append(header, problem{reason, sep + "; " + writeHeader(tx)})
	}
	header = append(header, problem{reasonUTF8, fixUTF8}, problem{reason: noHeaderRow, fix: "the first line is the header: " + strings.Join(tx, ",")})

	longest := func(texts []problem) Fault {
		var l Fault
		for _, p := range texts {
			f := Fault{Line: MaxSourceBytes + 1, Column: MaxSourceBytes/2 + 1, Field: "transaction_id", Reason: p.reason, Fix: p.fix}
			if len(f.text()) > len(l.text()) {
				l = f
			}
		}
		return l
	}
	row := longest(rows)
	e := &DataError{File: TransactionsFile, Fault: row, Unlisted: MaxSourceBytes, NotUTF8: MaxSourceBytes}
	for range MaxListedFaults - 1 {
		e.More = append(e.More, row)
	}
	is.True(len(e.Error()) < 4096) // the longest message of rows
	t.Logf("the longest message of rows: %d bytes; its longest line: %q", len(e.Error()), row.text())
	h := &DataError{File: TransactionsFile, Fault: Fault{Line: 1, Column: 1, Reason: reasonBOM, Fix: fixBOM}, More: []Fault{longest(header)}}
	is.True(len(h.Error()) < 4096) // the longest message of a header
	t.Logf("the longest message of a header: %d bytes", len(h.Error()))
}
