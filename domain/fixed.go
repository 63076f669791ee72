package domain

import (
	"math/bits"
	"strconv"
)

// Exact revenue in integers. SPEC §4 bounds every number a source holds:
// at most 12 integer and 6 fractional digits. So one row's
// quantity × unit_price × (1 − discount), written at 12 fractional digits,
// is an integer below 10^36 < 2^120, and a sum of 10,000 of them is below
// 10^40 < 2^133. A row is computed in 128 bits and the sum in 192, both
// exact: no rounding anywhere, and no decimal library on the hot path.
// A differential fuzz target holds this arithmetic to apd's.

// moneyScale is the number of fractional digits every product is written
// at: a price's 6 and a discount's 6.
const moneyScale = 12

// Amount is a nonnegative plain decimal of a source: Coef × 10^-Scale,
// with Scale ≤ 6 and Coef below 10^18.
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

// pow10 returns 10^n for 0 ≤ n ≤ 19.
func pow10(n int32) uint64 {
	p := uint64(1)
	for range n {
		p *= 10
	}
	return p
}

// u128 is an unsigned 128-bit integer.
type u128 struct{ hi, lo uint64 }

// mul64 multiplies x by y; the caller's bounds keep the product within
// 128 bits.
func (x u128) mul64(y uint64) u128 {
	hi, lo := bits.Mul64(x.lo, y)
	return u128{hi: x.hi*y + hi, lo: lo}
}

// netRevenue is quantity × price × (1 − discount) at moneyScale: its
// magnitude and sign.
func netRevenue(quantity int64, price, discount Amount) (u128, bool) {
	neg := quantity < 0
	q := uint64(quantity)
	if neg {
		q = uint64(-quantity)
	}
	keep := pow10(discount.Scale) - uint64(discount.Coef) // (1 − discount) × 10^discount.Scale
	hi, lo := bits.Mul64(q, uint64(price.Coef))           // < 10^30
	v := u128{hi: hi, lo: lo}.mul64(keep)                 // < 10^36
	v = v.mul64(pow10(moneyScale - price.Scale - discount.Scale))
	if v.hi == 0 && v.lo == 0 {
		neg = false // "0" for every zero, negative zero included
	}
	return v, neg
}

// sum192 is a signed 192-bit integer in two's complement, wide enough for
// any sum of 10,000 rows.
type sum192 struct{ w [3]uint64 }

// add adds the 128-bit magnitude v, negated when neg.
func (s *sum192) add(v u128, neg bool) {
	x := [3]uint64{v.lo, v.hi, 0}
	if neg { // two's complement of x
		var borrow uint64
		x[0], borrow = bits.Sub64(0, x[0], 0)
		x[1], borrow = bits.Sub64(0, x[1], borrow)
		x[2], _ = bits.Sub64(0, x[2], borrow)
	}
	var carry uint64
	s.w[0], carry = bits.Add64(s.w[0], x[0], 0)
	s.w[1], carry = bits.Add64(s.w[1], x[1], carry)
	s.w[2], _ = bits.Add64(s.w[2], x[2], carry)
}

// magnitude returns the sum's absolute value and whether it is negative.
func (s sum192) magnitude() ([3]uint64, bool) {
	if s.w[2]>>63 == 0 {
		return s.w, false
	}
	var borrow uint64
	var m [3]uint64
	m[0], borrow = bits.Sub64(0, s.w[0], 0)
	m[1], borrow = bits.Sub64(0, s.w[1], borrow)
	m[2], _ = bits.Sub64(0, s.w[2], borrow)
	return m, true
}

// appendMoney appends the magnitude w (up to three little-endian 64-bit
// words) at moneyScale as a money string of SPEC §5: plain decimal
// notation, trailing fractional zeros and a trailing point removed, "0"
// for zero.
func appendMoney(dst []byte, w []uint64, neg bool) []byte {
	var words [3]uint64
	top := copy(words[:], w) - 1
	// Digits, filled from the right: while more than one word is left, 19
	// at a time by division by 10^19 (192 bits need at most 4 rounds), then
	// the last word's own.
	var buf [80]byte
	i := len(buf)
	for top >= 0 {
		if words[top] == 0 {
			top--
			continue
		}
		if top == 0 {
			for v := words[0]; v > 0; v /= 10 {
				i--
				buf[i] = byte('0' + v%10)
			}
			break
		}
		var rem uint64
		for k := top; k >= 0; k-- {
			words[k], rem = bits.Div64(rem, words[k], 1e19)
		}
		for range 19 {
			i--
			buf[i] = byte('0' + rem%10)
			rem /= 10
		}
	}
	for i < len(buf) && buf[i] == '0' {
		i++ // a leading zero of a 19-digit round
	}
	if i == len(buf) {
		return append(dst, '0')
	}
	for len(buf)-i <= moneyScale {
		i--
		buf[i] = '0' // at least one integer digit
	}
	digits := buf[i:]
	whole, frac := digits[:len(digits)-moneyScale], digits[len(digits)-moneyScale:]
	for len(frac) > 0 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	if neg {
		dst = append(dst, '-')
	}
	dst = append(dst, whole...)
	if len(frac) > 0 {
		dst = append(append(dst, '.'), frac...)
	}
	return dst
}
