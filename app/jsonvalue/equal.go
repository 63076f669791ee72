package jsonvalue

import (
	"math/big"
	"strconv"
	"strings"
)

// Equal reports whether a and b are the same JSON value: objects with the same
// keys (in any order) and equal values, arrays equal item by item, strings
// equal after unescaping, numbers equal by exact decimal value.
func Equal(a, b Value) bool {
	_, same := Diff(a, b)
	return same
}

// Diff compares got against want as JSON values. When they differ it returns
// the path of the first difference, written with want's keys and indexes
// (such as "metrics.conversion.rate_places"), so the path never echoes text
// that only got holds. The path of the root is "$".
func Diff(want, got Value) (path string, same bool) {
	return diff(want, got, "$")
}

func diff(want, got Value, path string) (string, bool) {
	if want.Kind != got.Kind {
		return path, false
	}
	switch want.Kind {
	case Null:
		return "", true
	case Bool:
		if want.Bool != got.Bool {
			return path, false
		}
	case String:
		if want.Text != got.Text {
			return path, false
		}
	case Number:
		if !numbersEqual(want.Text, got.Text) {
			return path, false
		}
	case Array:
		for i, item := range want.Items {
			if i >= len(got.Items) {
				return join(path, strconv.Itoa(i)), false
			}
			if p, ok := diff(item, got.Items[i], join(path, strconv.Itoa(i))); !ok {
				return p, false
			}
		}
		if len(got.Items) != len(want.Items) {
			return path, false
		}
	case Object:
		for _, m := range want.Members {
			g, ok := got.Get(m.Key)
			if !ok {
				return join(path, m.Key), false
			}
			if p, ok := diff(m.Value, g, join(path, m.Key)); !ok {
				return p, false
			}
		}
		if len(got.Members) != len(want.Members) {
			return path, false
		}
	}
	return "", true
}

func join(path, part string) string {
	if path == "$" {
		return part
	}
	return path + "." + part
}

// numbersEqual compares two JSON number literals by exact decimal value,
// with no limit on their digits or exponents: each is brought to the one
// form sign × digits × 10^exponent whose digits have no leading or
// trailing zero, and the forms are compared. Every zero is the same zero,
// -0 included.
func numbersEqual(a, b string) bool {
	if a == b {
		return true
	}
	x, y := normalize(a), normalize(b)
	if x.digits == "" || y.digits == "" {
		return x.digits == y.digits // zero equals only zero
	}
	return x.negative == y.negative && x.digits == y.digits && x.exponent.Cmp(y.exponent) == 0
}

// decimal is a number literal in normal form: -?digits × 10^exponent, digits
// without a leading or trailing zero, empty for zero.
type decimal struct {
	negative bool
	digits   string
	exponent *big.Int
}

// normalize brings a literal that Parse accepted to its normal form. The
// exponent is a big.Int, so no literal is beyond its range.
func normalize(lit string) decimal {
	var d decimal
	if strings.HasPrefix(lit, "-") {
		d.negative, lit = true, lit[1:]
	}
	mantissa, exp, _ := strings.Cut(strings.ToLower(lit), "e")
	whole, frac, _ := strings.Cut(mantissa, ".")
	d.exponent = new(big.Int)
	if exp != "" {
		d.exponent.SetString(strings.TrimPrefix(exp, "+"), 10) // Parse checked the digits
	}
	// digits × 10^(exponent − len(frac)), then each trailing zero moved
	// into the exponent.
	digits := strings.TrimLeft(whole+frac, "0")
	trimmed := strings.TrimRight(digits, "0")
	shift := int64(len(digits)-len(trimmed)) - int64(len(frac))
	d.exponent.Add(d.exponent, big.NewInt(shift))
	d.digits = trimmed
	return d
}
