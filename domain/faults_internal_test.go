package domain

import (
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// The longest message a source can get stays under 4 KiB (protocol §4): 20
// faults of the longest text at the largest line and column a 1 MiB file
// can have (every byte a line, or a comma), the longest field name, and
// the count of the rest. Every reason and fix the package writes is here;
// a new one belongs in this list.
func TestTheLongestMessageStaysUnder4KiB(t *testing.T) {
	is := is.New(t)
	var texts []problem
	for _, k := range []numberKind{quantityNumber, countNumber, priceNumber, discountNumber} {
		for _, s := range []string{"x", "$1,234.50", "$1", "1,234"} {
			texts = append(texts, numberProblem(s, k))
		}
	}
	for _, s := range []string{"", " x", strings.Repeat("x", 65), "\t", "\xff"} {
		p, _ := labelProblem(s)
		texts = append(texts, p)
	}
	for _, fix := range []string{separatorFix([]byte("a;b"), 2), separatorFix([]byte("a\tb"), 2), ""} {
		for _, reason := range []string{`header column must be "transaction_id"`, `header is missing column "transaction_id"`,
			"header has more than 5 columns", reasonBOM, reasonLoneCR, reasonBreak, reasonUTF8, reasonBareQuote, reasonAfterQuote, reasonNotClosed} {
			texts = append(texts, problem{reason, fix})
		}
	}
	texts = append(texts, problem{reasonBOM, fixBOM}, problem{reasonUTF8, fixUTF8}, problem{reason: notID}, problem{reason: noHeaderRow},
		problem{reason: "repeats the transaction_id of line 1048577"}, problem{reason: "successes exceeds eligible"},
		problem{reason: fmt.Sprintf("row has %s; the header has 5", count(MaxSourceBytes/2+1, "field"))}, problem{reason: limitReason()})
	longest := Fault{}
	for _, p := range texts {
		f := Fault{Line: MaxSourceBytes + 1, Column: MaxSourceBytes/2 + 1, Field: "transaction_id", Reason: p.reason, Fix: p.fix}
		if len(f.text()) > len(longest.text()) {
			longest = f
		}
	}
	e := &DataError{File: TransactionsFile, Fault: longest, Unlisted: MaxSourceBytes}
	for range MaxListedFaults - 1 {
		e.More = append(e.More, longest)
	}
	is.True(len(e.Error()) < 4096) // the longest message
	t.Logf("the longest message: %d bytes; its longest line: %q", len(e.Error()), longest.text())
}
