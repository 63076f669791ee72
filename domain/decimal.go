package domain

import (
	"bytes"

	"github.com/cockroachdb/apd/v3"
)

// The arithmetic of protocol §5: decimal with precision 80, in
// github.com/cockroachdb/apd. One context serves a whole computation, and
// the values of a row are reused for the next, so the loop allocates
// nothing while the numbers fit apd's inline coefficient (128 bits, which
// one row's product always does; only a sum past 10^38 spills).
//
// protocol §4 bounds every number a source holds (12 integer and 6
// fractional digits), so a row's product has at most 36 significant
// digits and a sum of 10,000 rows at most 41: nothing but the rate ever
// rounds at precision 80. Every step's conditions are checked anyway,
// and any condition at all (inexact, rounded, overflow, …) is a
// [NumericError], never a rounded guess.

// Precision is the number of significant decimal digits the contract
// gives every computation: the precision of the [apd.Context] that
// [Compute] works in.
const Precision = 80

// newContext returns the context of one computation: precision 80, half
// to even (the contract's rounding, which only the rate uses), and apd's
// default traps.
func newContext() *apd.Context {
	ctx := apd.BaseContext.WithPrecision(Precision)
	ctx.Rounding = apd.RoundHalfEven
	return ctx
}

// Amount is a nonnegative plain decimal of a source, as parsed: a count
// of millionths (12.5 is 12500000), since protocol §4 allows at most 6
// fractional digits, and below 10^18. The computation sets apd decimals
// from it with SetFinite, never from text. Eight bytes, not the sixteen of
// a coefficient and a scale: a transaction is 64 bytes.
type Amount int64

// amountScale is the decimal exponent of an Amount's unit: 10^-6.
const amountScale = 6

// unitAmount is 1 as an Amount.
const unitAmount Amount = 1_000_000

// String writes the amount in plain notation, trailing fractional zeros
// and a trailing point removed: "100", "12.5", "0.000001".
func (a Amount) String() string {
	var d apd.Decimal
	return string(appendMoney(nil, a.decimal(&d)))
}

// decimal sets d to the amount.
func (a Amount) decimal(d *apd.Decimal) *apd.Decimal {
	return d.SetFinite(int64(a), -amountScale)
}

// complement sets d to 1 − a for a discount (a ≤ 1), exactly: the
// millionths left of a whole. Setting it so saves a subtraction in apd per
// row, a quarter of the row's arithmetic.
func (a Amount) complement(d *apd.Decimal) *apd.Decimal {
	return d.SetFinite(int64(unitAmount-a), -amountScale)
}

// pow10 returns 10^n for 0 ≤ n ≤ 18.
func pow10(n int32) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

// exact reports whether an apd step raised no condition at all.
func exact(c apd.Condition, err error) bool {
	return c == 0 && err == nil
}

// appendMoney appends d as a money string of protocol §5: plain decimal
// notation, trailing fractional zeros and a trailing point removed, "0"
// for every zero (negative zero included).
func appendMoney(dst []byte, d *apd.Decimal) []byte {
	if d.IsZero() {
		return append(dst, '0')
	}
	start := len(dst)
	dst = d.Append(dst, 'f')
	if bytes.IndexByte(dst[start:], '.') < 0 {
		return dst
	}
	dst = bytes.TrimRight(dst, "0")
	return bytes.TrimSuffix(dst, []byte{'.'})
}
