package domain

import (
	"strconv"

	"github.com/cockroachdb/apd/v3"
)

// Limits of the plain decimal notation that sources may use.
const (
	maxIntegerDigits  = 12
	maxFractionDigits = 6
	// RatePlaces is how many fractional digits a conversion rate carries.
	RatePlaces = 12
)

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

// parseAmount parses a nonnegative decimal, in millionths.
func parseAmount(s string) (Amount, bool) {
	coef, scale, ok := plain(s, false, true)
	return Amount(coef * pow10(amountScale-scale)), ok
}

// FormatRate returns successes/eligible rounded half-even to 12 places and
// written with exactly 12 fractional digits ("0.827272727273"), or nil when
// eligible is 0. Callers guarantee 0 <= successes <= eligible.
func FormatRate(successes, eligible int64) (*string, error) {
	return rate(newContext(), successes, eligible)
}

// rate is [FormatRate] in the computation's context: the quotient at
// precision 80, then rounded half to even to 12 places. The quotient's own
// rounding, at the 80th digit, cannot move the second one: it is within
// 10^-80 of the exact quotient, while an exact quotient that is not a
// halfway point of the 12th place lies at least 10^-12/(2 × eligible) >
// 5 × 10^-32 from one (eligible < 2^63), and a halfway point, 13 digits
// at most, is computed exactly.
func rate(ctx *apd.Context, successes, eligible int64) (*string, error) {
	if eligible == 0 {
		return nil, nil
	}
	if successes < 0 || successes > eligible {
		return nil, &NumericError{What: "conversion rate"}
	}
	var s, e, q apd.Decimal
	s.SetInt64(successes)
	e.SetInt64(eligible)
	// Inexact and Rounded are the contract's rounding, at precision 80
	// and then at 12 places; any other condition is a fault.
	const rounding = apd.Inexact | apd.Rounded
	c1, err1 := ctx.Quo(&q, &s, &e)
	c2, err2 := ctx.Quantize(&q, &q, -RatePlaces)
	if err1 != nil || err2 != nil || (c1|c2)&^rounding != 0 {
		return nil, &NumericError{What: "conversion rate"}
	}
	text := string(q.Append(make([]byte, 0, 2+RatePlaces), 'f'))
	return &text, nil
}

// NumericError reports a computation that could not be carried out exactly
// at the working precision.
type NumericError struct {
	What string
}

func (e *NumericError) Error() string {
	return "could not compute the " + e.What + " exactly at precision " + strconv.Itoa(Precision)
}
