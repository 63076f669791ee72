package domain

import (
	"errors"
	"testing"

	"github.com/cockroachdb/apd/v3"
	"github.com/matryer/is"
)

// Money strings are exact plain decimals: no exponent, trailing fractional
// zeros and a trailing point removed, and "0" for every zero, negative zero
// included, whatever exponent apd holds the value at.
func TestMoneyStringsArePlainDecimalsWithoutTrailingZeros(t *testing.T) {
	tests := []struct{ in, want string }{
		{"180.0000", "180"},
		{"-90.00", "-90"},
		{"12.50", "12.5"},
		{"0", "0"},
		{"-0", "0"},
		{"-0.000000", "0"},
		{"0E+5", "0"},
		{"1.8E+2", "180"},
		{"1E+40", "10000000000000000000000000000000000000000"},
		{"1E-20", "0.00000000000000000001"},
		{"100.000001", "100.000001"},
		{"-999998999999000000000001.000000999999", "-999998999999000000000001.000000999999"},
		{"0.000000000001000000", "0.000000000001"},
	}
	for _, tt := range tests {
		is := is.New(t)
		d, _, err := apd.NewFromString(tt.in)
		is.NoErr(err)
		is.Equal(string(appendMoney([]byte("x"), d)), "x"+tt.want) // money string of tt.in, appended
	}
}

// A step that is not exact is a NumericError naming what it computed,
// never a rounded value: here a context too narrow for one row's product.
func TestAnInexactStepIsANumericError(t *testing.T) {
	is := is.New(t)
	ctx := newContext()
	ctx.Precision = 20
	_, _, err := revenue(ctx, []Transaction{{ID: "T1", Quantity: 999_999_999_999, PriceKnown: true,
		UnitPrice: Amount(999_999_999_999_999_999)}})
	var ne *NumericError
	is.True(errors.As(err, &ne))                       // a NumericError
	is.Equal(ne.What, "net revenue of transaction T1") // naming the row
}
