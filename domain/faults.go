package domain

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxListedFaults is how many faults of one source a [DataError] lists:
// the first and up to 19 more (protocol §4); it counts the rest.
const MaxListedFaults = 20

// Fault is one rule a CSV source breaks, at one place. No fault holds a
// field's value, so a message of 20 of them stays under 4 KiB.
type Fault struct {
	Line int
	// Column is the 1-based field number; 0 for a fault of a whole row
	// (the row limit).
	Column int
	// Field is the header name of the column, when the column has one.
	Field string
	// Reason says what is wrong; Fix, when a common export mistake
	// explains it, what to do.
	Reason string
	Fix    string
}

// text writes the fault: "line 5, column 4 (unit_price): reason; fix".
func (f Fault) text() string {
	var b strings.Builder
	b.WriteString("line ")
	b.WriteString(strconv.Itoa(f.Line))
	if f.Column == 0 { // a whole row: "line 10002 is data row 10001; …"
		b.WriteString(" " + f.Reason)
		return b.String()
	}
	b.WriteString(", column ")
	b.WriteString(strconv.Itoa(f.Column))
	if f.Field != "" {
		b.WriteString(" (" + f.Field + ")")
	}
	b.WriteString(": " + f.Reason)
	if f.Fix != "" {
		b.WriteString("; " + f.Fix)
	}
	return b.String()
}

// DataError is the faults of one CSV source: INVALID_DATA on the wire.
// Its embedded [Fault] is the first in scan order, the one a check that
// stopped there would report; More lists up to [MaxListedFaults] − 1 of
// those after it, and Unlisted counts the others found. A file's bytes
// that are not UTF-8 are one fault, at the first line that holds one:
// a Latin-1 export has them on every line with an accent, and one fix for
// all, so NotUTF8 counts the other lines that hold one, never listed. Its
// message is one fault a line, the first after the file's name, then
// "and N more lines hold bytes that are not UTF-8" when NotUTF8 is not 0,
// then "and N more faults in" the file when some are unlisted; it never
// quotes the data.
type DataError struct {
	File string
	Fault
	More     []Fault
	Unlisted int
	NotUTF8  int
}

func (e *DataError) Error() string {
	var b strings.Builder
	b.WriteString(e.File + ": " + e.Fault.text())
	for _, f := range e.More {
		b.WriteString("\n" + f.text())
	}
	switch {
	case e.NotUTF8 == 1:
		b.WriteString("\nand 1 more line holds bytes that are not UTF-8 (save the file as UTF-8)")
	case e.NotUTF8 > 1:
		fmt.Fprintf(&b, "\nand %d more lines hold bytes that are not UTF-8 (save the file as UTF-8)", e.NotUTF8)
	}
	if e.Unlisted > 0 {
		fmt.Fprintf(&b, "\nand %s in %s", count(e.Unlisted, "more fault"), e.File)
	}
	return b.String()
}

// faults collects the faults of one source in scan order.
type faults struct {
	file string
	err  *DataError
	// notUTF8 is set once a line with bytes that are not UTF-8 is added.
	notUTF8 bool
}

func (c *faults) add(f Fault) {
	if f.Reason == reasonUTF8 {
		if c.notUTF8 {
			c.err.NotUTF8++
			return
		}
		c.notUTF8 = true
	}
	switch {
	case c.err == nil:
		c.err = &DataError{File: c.file, Fault: f}
	case len(c.err.More) < MaxListedFaults-1:
		c.err.More = append(c.err.More, f)
	default:
		c.err.Unlisted++
	}
}

// none reports whether no fault has been found.
func (c *faults) none() bool { return c.err == nil }

// result is the error of the source: nil or its [DataError].
func (c *faults) result() error {
	if c.err == nil {
		return nil
	}
	return c.err
}
