package domain

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// The four sources, relative to the workspace, with forward slashes.
const (
	TransactionsFile = "data/transactions.csv"
	GroupsFile       = "data/groups.csv"
	CustomersFile    = "data/customers.csv"
	DefinitionsFile  = "contracts/metric-definitions.json"
)

// Limits on every source.
const (
	// MaxSourceBytes is the largest source file accepted.
	MaxSourceBytes = 1 << 20
	// MaxDataRows is the most data rows a CSV source may hold.
	MaxDataRows = 10_000
)

// SourceNames returns the four sources in the order they are read and
// validated; the first fault in that order is the one reported.
func SourceNames() []string {
	return []string{TransactionsFile, GroupsFile, CustomersFile, DefinitionsFile}
}

// Transaction is one validated row of data/transactions.csv.
type Transaction struct {
	ID         string
	CustomerID string
	Quantity   int64
	// UnitPrice is meaningful only when PriceKnown; a blank price is unknown.
	UnitPrice  Amount
	PriceKnown bool
	Discount   Amount
}

// Group is one validated row of data/groups.csv.
type Group struct {
	ID        string
	Successes int64
	Eligible  int64
}

// Customer is one validated row of data/customers.csv. Customer IDs may
// repeat: that is the duplicate-key defect, reported and never repaired.
type Customer struct {
	ID      string
	Segment string
}

// Inputs are the validated records of the three CSV sources.
type Inputs struct {
	Transactions []Transaction
	Groups       []Group
	Customers    []Customer
}

// LimitError is a source with more data rows than [MaxDataRows]: INPUT_LIMIT
// on the wire.
type LimitError struct {
	File string
	Line int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: line %d is data row %d; a source holds at most %d data rows",
		e.File, e.Line, MaxDataRows+1, MaxDataRows)
}

// Reasons shared by several columns.
const (
	notID       = "not an ID (1 to 64 ASCII letters, digits, '_' or '-', starting with a letter or digit)"
	notCount    = "not a nonnegative integer (plain notation, 1 to 12 digits)"
	notSigned   = "not an integer (plain notation, optional '-', 1 to 12 digits)"
	notPrice    = "not a nonnegative decimal (plain notation, 1 to 12 integer and at most 6 fractional digits), or blank when unknown"
	notDiscount = "not a decimal in [0, 1] (plain notation, at most 6 fractional digits)"
	noHeaderRow = "no header row"
)

// limitReason is the fault of the row past the limit, listed after others.
func limitReason() string {
	return fmt.Sprintf("is data row %d; a source holds at most %d data rows, so the rows after it were not checked",
		MaxDataRows+1, MaxDataRows)
}

// table walks the header and data rows of one CSV source and collects its
// faults in scan order: a byte order mark (reported, then skipped), the
// header (a fault there ends the checking: rows are not judged against a
// header that does not match), then each data row's structure and field
// count, and row's checks of its fields. The 10,001st data row ends the
// checking: with no fault before it, it is the [LimitError].
func table(file string, data []byte, header []string, row func(line int, f []string, c *faults)) error {
	c := &faults{file: file}
	rs := newRecords(data)
	if rs.bom {
		c.add(Fault{Line: 1, Column: 1, Reason: reasonBOM, Fix: fixBOM})
	}
	fields, line, fault, done := rs.next()
	switch {
	case fault != nil:
		if sep := separatorFix(rs.lastLine(), len(header)); fault.Fix == "" && sep != "" {
			fault.Fix = sep + "; " + writeHeader(header)
		}
		c.add(*fault)
		return c.result()
	case done:
		c.add(Fault{Line: line, Column: 1, Reason: noHeaderRow, Fix: "the first line is the header: " + strings.Join(header, ",")})
		return c.result()
	}
	if f, ok := headerFault(fields, header); !ok {
		f.Line = line
		if sep := separatorFix(rs.lastLine(), len(header)); sep != "" {
			f.Fix = sep + "; " + f.Fix
		}
		c.add(f)
		return c.result()
	}
	rows := 0
	for {
		fields, line, fault, done = rs.next()
		if done && fault == nil {
			return c.result()
		}
		rows++
		if rows > MaxDataRows {
			if c.none() && fault == nil {
				return &LimitError{File: file, Line: line}
			}
			if fault != nil {
				c.add(named(*fault, header))
			}
			c.add(Fault{Line: line, Reason: limitReason()})
			return c.result()
		}
		switch {
		case fault != nil:
			c.add(named(*fault, header))
			if done {
				return c.result()
			}
		case len(fields) != len(header):
			column, fix := len(header)+1, ""
			if len(fields) < len(header) {
				column = len(fields) + 1
			} else if n := emptyAtEnd(fields, len(header)); n == 1 && n == len(fields)-len(header) {
				fix = "the last field is empty: delete it (a spreadsheet's unused column)"
			} else if n == len(fields)-len(header) {
				fix = fmt.Sprintf("the last %d fields are empty: delete them (a spreadsheet's unused columns)", n)
			}
			c.add(Fault{Line: line, Column: column,
				Reason: fmt.Sprintf("row has %s; the header has %d", count(len(fields), "field"), len(header)), Fix: fix})
		default:
			row(line, fields, c)
		}
	}
}

// headerFault checks a header against the one it must be, column by
// column: the first difference is the fault, and its fix writes the whole
// header, so that one round fixes it. The fix also says when the names
// differ only in letter case or spaces, and names a spreadsheet's unused
// columns at the end (Excel's "a,b,c,,"), which its rows have too.
func headerFault(fields, header []string) (Fault, bool) {
	extra := max(len(fields)-len(header), 0)
	empty := extra > 0 && emptyAtEnd(fields, len(header)) == extra
	var f Fault
	for i, name := range header {
		switch {
		case i >= len(fields):
			f = Fault{Column: i + 1, Reason: fmt.Sprintf("header is missing column %q", name)}
		case fields[i] != name:
			f = Fault{Column: i + 1, Reason: fmt.Sprintf("header column must be %q", name)}
		default:
			continue
		}
		break
	}
	switch {
	case f.Column == 0 && extra == 0:
		return Fault{}, true
	case f.Column == 0 && empty:
		f = Fault{Column: len(header) + 1, Reason: "header ends with " + count(extra, "empty column")}
	case f.Column == 0:
		f = Fault{Column: len(header) + 1, Reason: fmt.Sprintf("header has more than %d columns", len(header))}
	}
	var fix []string
	if len(fields) == len(header) || empty {
		if what := sameNamesBut(fields[:min(len(fields), len(header))], header); what != "" {
			fix = append(fix, "the names differ only in "+what)
		}
	}
	if empty {
		fix = append(fix, fmt.Sprintf("delete the %s after %s on every line (a spreadsheet's unused columns)",
			count(extra, "empty column"), header[len(header)-1]))
	}
	f.Fix = strings.Join(append(fix, writeHeader(header)), "; ")
	return f, false
}

// writeHeader is the fix every header fault ends with: the header written
// out.
func writeHeader(header []string) string {
	return "write the header as " + strings.Join(header, ",")
}

// emptyAtEnd counts the empty fields of fields after the first n, from the
// end back to the first that is not empty.
func emptyAtEnd(fields []string, n int) int {
	k := 0
	for i := len(fields) - 1; i >= n && fields[i] == ""; i-- {
		k++
	}
	return k
}

// sameNamesBut says how names differ from header when each differs at
// most in ASCII letter case and in spaces (around the name, or for the
// '_' between its words): "letter case", "spaces" or "letter case and
// spaces"; "" when they are equal or differ otherwise.
func sameNamesBut(names, header []string) string {
	var upper, spaced bool
	for i, name := range header {
		got := names[i]
		if t := strings.ReplaceAll(strings.TrimFunc(got, isSpace), " ", "_"); t != got {
			spaced, got = true, t
		}
		if l := asciiLower(got); l != got {
			upper, got = true, l
		}
		if got != name {
			return ""
		}
	}
	switch {
	case upper && spaced:
		return "letter case and spaces"
	case upper:
		return "letter case"
	case spaced:
		return "spaces"
	}
	return ""
}

// asciiLower lowers the ASCII letters of s and nothing else (strings.ToLower
// would take the Kelvin sign for a k).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// named gives a fault of a data row its column's header name.
func named(f Fault, header []string) Fault {
	if f.Column >= 1 && f.Column <= len(header) {
		f.Field = header[f.Column-1]
	}
	return f
}

// count writes n things in words: "1 field", "2 fields".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// firstLine remembers the line where each unique key was first seen.
type firstLine map[string]int

func (seen firstLine) repeat(key string, line int) (int, bool) {
	if first, ok := seen[key]; ok {
		return first, true
	}
	seen[key] = line
	return 0, false
}

// cells adds the faults of one data row, naming each column by the
// header.
type cells struct {
	c      *faults
	header []string
	line   int
	bad    bool
}

// fault adds the fault of column col (0-based).
func (r *cells) fault(col int, p problem) {
	r.bad = true
	r.c.add(Fault{Line: r.line, Column: col + 1, Field: r.header[col], Reason: p.reason, Fix: p.fix})
}

// ParseTransactions validates data/transactions.csv.
func ParseTransactions(data []byte) ([]Transaction, error) {
	h := []string{"transaction_id", "customer_id", "quantity", "unit_price", "discount"}
	rows := estimateRows(data)
	out := make([]Transaction, 0, rows)
	seen := make(firstLine, rows)
	err := table(TransactionsFile, data, h, func(line int, f []string, c *faults) {
		r := cells{c: c, header: h, line: line}
		t := Transaction{ID: f[0], CustomerID: f[1]}
		if !ValidID(t.ID) {
			r.fault(0, idProblem(t.ID))
		} else if first, dup := seen.repeat(t.ID, line); dup {
			r.fault(0, problem{reason: "repeats the transaction_id of line " + strconv.Itoa(first)})
		}
		if !ValidID(t.CustomerID) {
			r.fault(1, idProblem(t.CustomerID))
		}
		var ok bool
		if t.Quantity, ok = parseQuantity(f[2]); !ok {
			r.fault(2, numberProblem(f[2], quantityNumber))
		}
		if f[3] != "" {
			if t.UnitPrice, ok = parseAmount(f[3]); !ok {
				r.fault(3, numberProblem(f[3], priceNumber))
			}
			t.PriceKnown = true
		}
		if t.Discount, ok = parseAmount(f[4]); !ok || t.Discount > unitAmount {
			r.fault(4, numberProblem(f[4], discountNumber))
		}
		if !r.bad {
			out = append(out, t)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ParseGroups validates data/groups.csv.
func ParseGroups(data []byte) ([]Group, error) {
	h := []string{"group_id", "successes", "eligible"}
	rows := estimateRows(data)
	out := make([]Group, 0, rows)
	seen := make(firstLine, rows)
	err := table(GroupsFile, data, h, func(line int, f []string, c *faults) {
		r := cells{c: c, header: h, line: line}
		g := Group{ID: f[0]}
		if !ValidID(g.ID) {
			r.fault(0, idProblem(g.ID))
		} else if first, dup := seen.repeat(g.ID, line); dup {
			r.fault(0, problem{reason: "repeats the group_id of line " + strconv.Itoa(first)})
		}
		var okS, okE bool
		if g.Successes, okS = parseCount(f[1]); !okS {
			r.fault(1, numberProblem(f[1], countNumber))
		}
		if g.Eligible, okE = parseCount(f[2]); !okE {
			r.fault(2, numberProblem(f[2], countNumber))
		}
		if okS && okE && g.Successes > g.Eligible {
			r.fault(1, problem{reason: "successes exceeds eligible"})
		}
		if !r.bad {
			out = append(out, g)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ParseCustomers validates data/customers.csv. A repeated customer_id is not
// a fault here: it is the duplicate-key defect that [Compute] reports.
func ParseCustomers(data []byte) ([]Customer, error) {
	h := []string{"customer_id", "segment"}
	out := make([]Customer, 0, estimateRows(data))
	err := table(CustomersFile, data, h, func(line int, f []string, c *faults) {
		r := cells{c: c, header: h, line: line}
		cu := Customer{ID: f[0], Segment: f[1]}
		if !ValidID(cu.ID) {
			r.fault(0, idProblem(cu.ID))
		}
		if p, ok := labelProblem(cu.Segment); !ok {
			r.fault(1, p)
		}
		if !r.bad {
			out = append(out, cu)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// estimateRows bounds the data rows of a file by its line count (a fast
// count of newlines), so the record slice and the key map are sized once
// and never regrown; it never exceeds the row limit.
func estimateRows(data []byte) int {
	return min(bytes.Count(data, []byte{'\n'})+1, MaxDataRows)
}

// ParseSources validates the three CSV sources, keyed by their relative
// paths, in the order of [SourceNames]; the first fault is returned. The
// definitions file, last in that order, is JSON, which the app checks.
func ParseSources(files map[string][]byte) (Inputs, error) {
	var in Inputs
	for _, name := range SourceNames() {
		if name == DefinitionsFile {
			continue
		}
		if err := ParseSource(name, files[name], &in); err != nil {
			return Inputs{}, err
		}
	}
	return in, nil
}

// ParseSource validates the CSV source name, one of [SourceNames] but the
// definitions file, and sets its records in in: each source sets its own field of [Inputs] and no
// other, so sources may be parsed at once on goroutines of the caller's
// (the domain starts none), and the caller picks the first fault in the
// order of [SourceNames].
func ParseSource(name string, data []byte, in *Inputs) (err error) {
	switch name {
	case TransactionsFile:
		in.Transactions, err = ParseTransactions(data)
	case GroupsFile:
		in.Groups, err = ParseGroups(data)
	case CustomersFile:
		in.Customers, err = ParseCustomers(data)
	default:
		err = fmt.Errorf("%s is not a CSV source", name)
	}
	return err
}
