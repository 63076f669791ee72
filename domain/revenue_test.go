package domain_test

import (
	"math/big"
	"strings"
	"testing"

	"github.com/metricproof/metricproof/domain"
)

// ratAmount is an amount's exact value: a count of millionths.
func ratAmount(a domain.Amount) *big.Rat {
	return big.NewRat(int64(a), 1_000_000)
}

// checkRevenueAgainstBig computes the revenue of txs and holds every
// contribution and the subtotal to quantity × unit_price × (1 − discount)
// in math/big rationals, and to protocol §5's money notation.
func checkRevenueAgainstBig(t *testing.T, txs []domain.Transaction) {
	t.Helper()
	r, err := domain.Compute(domain.Inputs{Transactions: txs}, strings.Repeat("0", 64))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Revenue.Contributions) != len(txs) {
		t.Fatalf("%d contributions for %d rows", len(r.Revenue.Contributions), len(txs))
	}
	sum := new(big.Rat)
	for i, c := range r.Revenue.Contributions {
		tr := txs[i]
		if !tr.PriceKnown {
			if c.NetRevenue != nil {
				t.Fatalf("row %d: %q with a blank price", i, *c.NetRevenue)
			}
			continue
		}
		want := new(big.Rat).SetInt64(tr.Quantity)
		want.Mul(want, ratAmount(tr.UnitPrice))
		want.Mul(want, new(big.Rat).Sub(big.NewRat(1, 1), ratAmount(tr.Discount)))
		sum.Add(sum, want)
		if c.NetRevenue == nil {
			t.Fatalf("row %d: null with a known price", i)
		}
		checkMoney(t, *c.NetRevenue, want)
	}
	checkMoney(t, r.Revenue.KnownSubtotal, sum)
}

// Revenue is exact at the extremes of protocol §4, one row and many: 10,000
// rows of 999999999999 × 999999999999.999999 sum to about 10^28 (past
// apd's inline 128 bits, 41 digits at 12 places), and signs, zero and full
// discounts and every scale meet.
func TestRevenueIsExactAtTheExtremesOfManyRows(t *testing.T) {
	maxRow := domain.Transaction{Quantity: 999_999_999_999, PriceKnown: true,
		UnitPrice: domain.Amount(999_999_999_999_999_999), Discount: domain.Amount(1)}
	var many, mixed []domain.Transaction
	for i := range domain.MaxDataRows {
		r := maxRow
		if i%2 == 1 {
			r.Quantity = -r.Quantity + 1
		}
		many = append(many, maxRow)
		mixed = append(mixed, r)
	}
	for name, txs := range map[string][]domain.Transaction{
		"one maximal row":           {maxRow},
		"10,000 maximal rows":       many,
		"10,000 rows of both signs": mixed,
		"zeros": {{Quantity: 0, PriceKnown: true, UnitPrice: domain.Amount(5_000_000)}, {Quantity: -3, PriceKnown: true,
			UnitPrice: domain.Amount(1_200_000), Discount: domain.Amount(1_000_000)}},
		"the smallest amounts": {{Quantity: 1, PriceKnown: true, UnitPrice: domain.Amount(1),
			Discount: domain.Amount(999_999)}, {Quantity: -1, PriceKnown: true, UnitPrice: domain.Amount(1)}},
		"a blank price": {{Quantity: 4}, {Quantity: 2, PriceKnown: true, UnitPrice: domain.Amount(100_000_000),
			Discount: domain.Amount(100_000)}},
	} {
		t.Run(name, func(t *testing.T) { checkRevenueAgainstBig(t, txs) })
	}
}
