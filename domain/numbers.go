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

// Precision is the number of significant decimal digits every computation
// keeps. The largest exact value a valid source can produce needs about 41.
const Precision = 80

// exact returns the decimal context for arithmetic that must not round: any
// inexact or out-of-range result is an error rather than an approximation.
func exact() *apd.Context {
	c := apd.BaseContext.WithPrecision(Precision)
	c.Rounding = apd.RoundHalfEven
	c.Traps |= apd.Inexact | apd.Rounded
	return c
}

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

// FormatMoney writes d as an exact plain decimal: no exponent, trailing
// fractional zeros and a trailing point removed, and "0" for every zero
// including negative zero ("180", "-90", "12.5").
func FormatMoney(d *apd.Decimal) string {
	if d.IsZero() {
		return "0"
	}
	var r apd.Decimal
	r.Reduce(d)
	return r.Text('f')
}

// FormatRate returns successes/eligible rounded half-even to 12 places and
// written with exactly 12 fractional digits ("0.827272727273"), or nil when
// eligible is 0. The rounding is exact: it is decided on the integer quotient
// and remainder, so no intermediate rounding can move a halfway case.
// Callers guarantee 0 <= successes <= eligible.
func FormatRate(successes, eligible int64) (*string, error) {
	if eligible == 0 {
		return nil, nil
	}
	c := exact()
	var num, den, quo, rem, twice apd.Decimal
	num.SetFinite(successes, RatePlaces) // successes × 10^12, exact
	den.SetInt64(eligible)
	if _, err := c.QuoInteger(&quo, &num, &den); err != nil {
		return nil, &NumericError{What: "conversion rate"}
	}
	if _, err := c.Rem(&rem, &num, &den); err != nil {
		return nil, &NumericError{What: "conversion rate"}
	}
	if _, err := c.Add(&twice, &rem, &rem); err != nil {
		return nil, &NumericError{What: "conversion rate"}
	}
	q, err := quo.Int64()
	if err != nil {
		return nil, &NumericError{What: "conversion rate"}
	}
	switch twice.Cmp(&den) {
	case 1:
		q++
	case 0:
		if q%2 == 1 {
			q++
		}
	}
	const unit = 1_000_000_000_000 // 10^RatePlaces
	frac := strconv.FormatInt(q%unit, 10)
	for len(frac) < RatePlaces {
		frac = "0" + frac
	}
	s := strconv.FormatInt(q/unit, 10) + "." + frac
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
