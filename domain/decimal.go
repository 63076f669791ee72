package domain

import (
	"bytes"
	"strconv"

	"github.com/cockroachdb/apd/v3"
)

// The arithmetic of SPEC §5: decimal with precision 80, in
// github.com/cockroachdb/apd. One context serves a whole computation, and
// the values of a row are reused for the next, so the loop allocates
// nothing while the numbers fit apd's inline coefficient (128 bits, which
// one row's product always does; only a sum past 10^38 spills).
//
// SPEC §4 bounds every number a source holds (12 integer and 6
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

// Amount is a nonnegative plain decimal of a source, as parsed:
// Coef × 10^-Scale, with Scale ≤ 6 and Coef below 10^18. The computation
// sets apd decimals from it with SetFinite, never from text.
type Amount struct {
	Coef  int64
	Scale int32
}

// String writes the amount as its source wrote it, leading zeros aside:
// Coef with the point Scale digits from the right ("100.00", "0.05").
func (a Amount) String() string {
	digits := strconv.FormatInt(a.Coef, 10)
	if a.Scale == 0 {
		return digits
	}
	for len(digits) <= int(a.Scale) {
		digits = "0" + digits
	}
	cut := len(digits) - int(a.Scale)
	return digits[:cut] + "." + digits[cut:]
}

// decimal sets d to the amount.
func (a Amount) decimal(d *apd.Decimal) *apd.Decimal {
	return d.SetFinite(a.Coef, -a.Scale)
}

// complement sets d to 1 − a for a discount (a ≤ 1), exactly and at a's
// scale: (10^Scale − Coef) × 10^-Scale, an integer of at most 7 digits
// taken from the parsed digits, as the discount itself is. Setting it so
// saves a subtraction in apd per row, a quarter of the row's arithmetic.
func (a Amount) complement(d *apd.Decimal) *apd.Decimal {
	return d.SetFinite(pow10(a.Scale)-a.Coef, -a.Scale)
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

// appendMoney appends d as a money string of SPEC §5: plain decimal
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
