package domain

import (
	"bytes"
	"fmt"
	"strconv"
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

// DataError is a fault in a CSV source: INVALID_DATA on the wire. Column is
// the 1-based field number. The message names the file, line and column and
// describes the rule broken, without quoting the data.
type DataError struct {
	File   string
	Line   int
	Column int
	// Field is the header name of the column, when the column has one.
	Field  string
	Reason string
}

func (e *DataError) Error() string {
	field := ""
	if e.Field != "" {
		field = " (" + e.Field + ")"
	}
	return fmt.Sprintf("%s: line %d, column %d%s: %s", e.File, e.Line, e.Column, field, e.Reason)
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
	notID     = "not an ID (1 to 64 ASCII letters, digits, '_' or '-', starting with a letter or digit)"
	notCount  = "not a nonnegative integer (plain notation, 1 to 12 digits)"
	notSigned = "not an integer (plain notation, optional '-', 1 to 12 digits)"
	notAmount = "not a nonnegative decimal (plain notation, 1 to 12 integer and at most 6 fractional digits)"
)

// table walks the header and data rows of one CSV source, checking the
// header, the field count and the row limit, and hands each data row to row.
func table(file string, data []byte, header []string, row func(line int, f []string) error) error {
	r := newRecords(file, data)
	fields, line, ok, err := r.next()
	if err != nil {
		return err
	}
	if !ok {
		return &DataError{File: file, Line: line, Column: 1, Reason: "no header row"}
	}
	for i, name := range header {
		if i >= len(fields) {
			return &DataError{File: file, Line: line, Column: i + 1, Reason: fmt.Sprintf("header is missing column %q", name)}
		}
		if fields[i] != name {
			return &DataError{File: file, Line: line, Column: i + 1, Reason: fmt.Sprintf("header column must be %q", name)}
		}
	}
	if len(fields) > len(header) {
		return &DataError{File: file, Line: line, Column: len(header) + 1, Reason: fmt.Sprintf("header has more than %d columns", len(header))}
	}
	rows := 0
	for {
		fields, line, ok, err = r.next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		rows++
		if rows > MaxDataRows {
			return &LimitError{File: file, Line: line}
		}
		if len(fields) != len(header) {
			column := len(header) + 1
			if len(fields) < len(header) {
				column = len(fields) + 1
			}
			return &DataError{File: file, Line: line, Column: column,
				Reason: fmt.Sprintf("row has %s; the header has %d", count(len(fields), "field"), len(header))}
		}
		if err := row(line, fields); err != nil {
			return err
		}
	}
}

// count writes n things in words: "1 field", "2 fields".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// cell builds the error for column col (0-based) of a row.
func cell(file string, header []string, line, col int, reason string) *DataError {
	return &DataError{File: file, Line: line, Column: col + 1, Field: header[col], Reason: reason}
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

// ParseTransactions validates data/transactions.csv.
func ParseTransactions(data []byte) ([]Transaction, error) {
	h := []string{"transaction_id", "customer_id", "quantity", "unit_price", "discount"}
	rows := estimateRows(data)
	out := make([]Transaction, 0, rows)
	seen := make(firstLine, rows)
	err := table(TransactionsFile, data, h, func(line int, f []string) error {
		bad := func(col int, reason string) error { return cell(TransactionsFile, h, line, col, reason) }
		t := Transaction{ID: f[0], CustomerID: f[1]}
		if !ValidID(t.ID) {
			return bad(0, notID)
		}
		if first, dup := seen.repeat(t.ID, line); dup {
			return bad(0, "repeats the transaction_id of line "+strconv.Itoa(first))
		}
		if !ValidID(t.CustomerID) {
			return bad(1, notID)
		}
		var ok bool
		if t.Quantity, ok = parseQuantity(f[2]); !ok {
			return bad(2, notSigned)
		}
		if f[3] != "" {
			if t.UnitPrice, ok = parseAmount(f[3]); !ok {
				return bad(3, notAmount+", or blank when unknown")
			}
			t.PriceKnown = true
		}
		if t.Discount, ok = parseAmount(f[4]); !ok || t.Discount.Coef > pow10(t.Discount.Scale) {
			return bad(4, "not a decimal in [0, 1] (plain notation, at most 6 fractional digits)")
		}
		out = append(out, t)
		return nil
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
	err := table(GroupsFile, data, h, func(line int, f []string) error {
		bad := func(col int, reason string) error { return cell(GroupsFile, h, line, col, reason) }
		g := Group{ID: f[0]}
		if !ValidID(g.ID) {
			return bad(0, notID)
		}
		if first, dup := seen.repeat(g.ID, line); dup {
			return bad(0, "repeats the group_id of line "+strconv.Itoa(first))
		}
		var ok bool
		if g.Successes, ok = parseCount(f[1]); !ok {
			return bad(1, notCount)
		}
		if g.Eligible, ok = parseCount(f[2]); !ok {
			return bad(2, notCount)
		}
		if g.Successes > g.Eligible {
			return bad(1, "successes exceeds eligible")
		}
		out = append(out, g)
		return nil
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
	err := table(CustomersFile, data, h, func(line int, f []string) error {
		c := Customer{ID: f[0], Segment: f[1]}
		if !ValidID(c.ID) {
			return cell(CustomersFile, h, line, 0, notID)
		}
		if !ValidID(c.Segment) {
			return cell(CustomersFile, h, line, 1, notID)
		}
		out = append(out, c)
		return nil
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

// ParseSources validates the four sources, keyed by their relative paths, in
// the order of [SourceNames]; the first fault is returned.
func ParseSources(files map[string][]byte) (Inputs, error) {
	var in Inputs
	for _, name := range SourceNames() {
		if err := ParseSource(name, files[name], &in); err != nil {
			return Inputs{}, err
		}
	}
	return in, nil
}

// ParseSource validates the source name, one of [SourceNames], and sets
// its records in in: each source sets its own field of [Inputs] and no
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
	case DefinitionsFile:
		err = CheckDefinitions(data)
	default:
		err = fmt.Errorf("%s is not a source", name)
	}
	return err
}
