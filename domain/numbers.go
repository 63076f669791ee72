package domain

import (
	"math/bits"
	"strconv"
)

// Limits of the plain decimal notation that sources may use.
const (
	maxIntegerDigits  = 12
	maxFractionDigits = 6
	// RatePlaces is how many fractional digits a conversion rate carries.
	RatePlaces = 12
)

// Precision is the number of significant decimal digits the contract gives
// every computation. The engine's arithmetic is exact decimal fixed point
// in integers (fixed.go), so no step rounds at all: the largest value a
// valid source can produce needs about 41 digits, well within it, and the
// one rounding, the rate's, is exact half-even on an integer quotient.
// Tests hold the integers to apd decimals at this precision.
const Precision = 80

// plain parses the plain decimal notation of sources: an optional '-' when
// signed, 1 to 12 integer digits, and when fraction is allowed an optional '.'
// followed by 1 to 6 digits. It returns the value as coefficient × 10^-scale.
func plain(s string, signed, fraction bool) (coef int64, scale int32, ok bool) {
	i := 0
	neg := false
	if signed && len(s) > 0 && s[0] == '-' {
		neg = true
		i++
	}
	intDigits := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		coef = coef*10 + int64(s[i]-'0')
		intDigits++
	}
	if intDigits == 0 || intDigits > maxIntegerDigits {
		return 0, 0, false
	}
	if i < len(s) && s[i] == '.' && fraction {
		i++
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			coef = coef*10 + int64(s[i]-'0')
			scale++
		}
		if scale == 0 || scale > maxFractionDigits {
			return 0, 0, false
		}
	}
	if i != len(s) {
		return 0, 0, false
	}
	if neg {
		coef = -coef
	}
	return coef, scale, true
}

// parseCount parses a nonnegative integer.
func parseCount(s string) (int64, bool) {
	n, _, ok := plain(s, false, false)
	return n, ok
}

// parseQuantity parses a signed integer.
func parseQuantity(s string) (int64, bool) {
	n, _, ok := plain(s, true, false)
	return n, ok
}

// parseAmount parses a nonnegative decimal.
func parseAmount(s string) (Amount, bool) {
	coef, scale, ok := plain(s, false, true)
	return Amount{Coef: coef, Scale: scale}, ok
}

// FormatRate returns successes/eligible rounded half-even to 12 places and
// written with exactly 12 fractional digits ("0.827272727273"), or nil when
// eligible is 0. The rounding is exact: successes × 10^12 is divided by
// eligible in 128-bit integers and rounded on the exact remainder, so no
// intermediate rounding can move a halfway case. Callers guarantee
// 0 <= successes <= eligible.
func FormatRate(successes, eligible int64) (*string, error) {
	if eligible == 0 {
		return nil, nil
	}
	if successes < 0 || successes > eligible {
		return nil, &NumericError{What: "conversion rate"}
	}
	const unit = 1_000_000_000_000 // 10^RatePlaces
	hi, lo := bits.Mul64(uint64(successes), unit)
	// The quotient is at most 10^12, so it fits: hi < eligible.
	q, rem := bits.Div64(hi, lo, uint64(eligible))
	switch twice := 2 * rem; { // rem < eligible < 2^63
	case twice > uint64(eligible):
		q++
	case twice == uint64(eligible) && q%2 == 1:
		q++
	}
	frac := strconv.FormatUint(q%unit, 10)
	for len(frac) < RatePlaces {
		frac = "0" + frac
	}
	s := strconv.FormatUint(q/unit, 10) + "." + frac
	return &s, nil
}

// NumericError reports a computation that could not be carried out exactly
// at the working precision.
type NumericError struct {
	What string
}

func (e *NumericError) Error() string {
	return "could not compute the " + e.What + " exactly at precision " + strconv.Itoa(Precision)
}
