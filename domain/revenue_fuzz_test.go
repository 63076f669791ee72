package domain_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/apd/v3"

	"github.com/metricproof/metricproof/domain"
)

// apdRevenue is the reference the integer arithmetic is held to: each row's
// quantity × unit_price × (1 − discount) and their sum in apd decimals at
// precision 80 with every inexact step an error, written by apdMoney.
func apdRevenue(t *testing.T, txs []domain.Transaction) (contributions []string, subtotal string) {
	t.Helper()
	ctx := apd.BaseContext.WithPrecision(domain.Precision)
	ctx.Traps |= apd.Inexact | apd.Rounded
	one := apd.New(1, 0)
	var sum apd.Decimal
	for _, tr := range txs {
		if !tr.PriceKnown {
			contributions = append(contributions, "")
			continue
		}
		var q, p, d, gross, keep, net apd.Decimal
		q.SetInt64(tr.Quantity)
		p.SetFinite(tr.UnitPrice.Coef, -tr.UnitPrice.Scale)
		d.SetFinite(tr.Discount.Coef, -tr.Discount.Scale)
		_, e1 := ctx.Mul(&gross, &q, &p)
		_, e2 := ctx.Sub(&keep, one, &d)
		_, e3 := ctx.Mul(&net, &gross, &keep)
		_, e4 := ctx.Add(&sum, &sum, &net)
		if e1 != nil || e2 != nil || e3 != nil || e4 != nil {
			t.Fatalf("apd could not compute row %+v exactly: %v %v %v %v", tr, e1, e2, e3, e4)
		}
		contributions = append(contributions, apdMoney(&net))
	}
	return contributions, apdMoney(&sum)
}

// rowsOf reads fuzz bytes as transactions within SPEC §4's bounds: a
// quantity of up to 12 digits, a price of up to 12 + 6 digits or blank, a
// discount in [0, 1] of up to 6 fractional digits. The first byte may ask
// for maxima: many rows at the largest magnitudes, so the sum needs more
// than 128 bits.
func rowsOf(data []byte) []domain.Transaction {
	next := func() uint64 {
		if len(data) == 0 {
			return 0
		}
		var v uint64
		for i := 0; i < 8 && len(data) > 0; i++ {
			v = v<<8 | uint64(data[0])
			data = data[1:]
		}
		return v
	}
	var txs []domain.Transaction
	if len(data) > 0 && data[0]%5 == 0 {
		data = data[1:]
		n := 1 + int(next()%10_000)
		sign := int64(1)
		if next()%2 == 1 {
			sign = -1
		}
		for i := range n {
			txs = append(txs, domain.Transaction{ID: fmt.Sprintf("T%d", i), Quantity: sign * 999_999_999_999,
				UnitPrice: domain.Amount{Coef: 999_999_999_999_999_999, Scale: 6}, PriceKnown: true,
				Discount: domain.Amount{Coef: int64(next() % 2), Scale: 6}})
		}
		return txs
	}
	for i := 0; len(data) > 0 && i < 64; i++ {
		q := int64(next() % 1_000_000_000_000)
		if next()%2 == 1 {
			q = -q
		}
		pScale := int32(next() % 7)
		p := int64(next() % (1_000_000_000_000 * uint64pow10(pScale)))
		dScale := int32(next() % 7)
		d := int64(next() % (uint64pow10(dScale) + 1))
		txs = append(txs, domain.Transaction{ID: fmt.Sprintf("T%d", i), Quantity: q,
			UnitPrice: domain.Amount{Coef: p, Scale: pScale}, PriceKnown: next()%9 != 0,
			Discount: domain.Amount{Coef: d, Scale: dScale}})
	}
	return txs
}

func uint64pow10(n int32) uint64 {
	p := uint64(1)
	for range n {
		p *= 10
	}
	return p
}

// checkRevenueAgainstApd computes the revenue of txs with the domain's
// integer arithmetic and with apd, and holds every string to apd's.
func checkRevenueAgainstApd(t *testing.T, txs []domain.Transaction) {
	t.Helper()
	r, err := domain.Compute(domain.Inputs{Transactions: txs}, strings.Repeat("0", 64))
	if err != nil {
		t.Fatal(err)
	}
	want, subtotal := apdRevenue(t, txs)
	if len(r.Revenue.Contributions) != len(txs) {
		t.Fatalf("%d contributions for %d rows", len(r.Revenue.Contributions), len(txs))
	}
	for i, c := range r.Revenue.Contributions {
		got := ""
		if c.NetRevenue != nil {
			got = *c.NetRevenue
		}
		if got != want[i] {
			t.Fatalf("row %d %+v: %q, apd says %q", i, txs[i], got, want[i])
		}
	}
	if r.Revenue.KnownSubtotal != subtotal {
		t.Fatalf("known_subtotal %q, apd says %q", r.Revenue.KnownSubtotal, subtotal)
	}
}

// The integer path agrees with apd at the extremes, one row and many:
// 10,000 rows of 999999999999 × 999999999999.999999 sum to about 10^28,
// and signs and zero discounts, full discounts and every scale meet.
func TestRevenueAgreesWithApdAtTheExtremes(t *testing.T) {
	maxRow := domain.Transaction{Quantity: 999_999_999_999, PriceKnown: true,
		UnitPrice: domain.Amount{Coef: 999_999_999_999_999_999, Scale: 6}, Discount: domain.Amount{Coef: 1, Scale: 6}}
	var many, mixed []domain.Transaction
	for i := range 10_000 {
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
		"zeros": {{Quantity: 0, PriceKnown: true, UnitPrice: domain.Amount{Coef: 5}}, {Quantity: -3, PriceKnown: true,
			UnitPrice: domain.Amount{Coef: 12, Scale: 1}, Discount: domain.Amount{Coef: 1}}},
		"the smallest amounts": {{Quantity: 1, PriceKnown: true, UnitPrice: domain.Amount{Coef: 1, Scale: 6},
			Discount: domain.Amount{Coef: 999_999, Scale: 6}}, {Quantity: -1, PriceKnown: true, UnitPrice: domain.Amount{Coef: 1, Scale: 6}}},
		"a blank price": {{Quantity: 4}, {Quantity: 2, PriceKnown: true, UnitPrice: domain.Amount{Coef: 10000, Scale: 2},
			Discount: domain.Amount{Coef: 10, Scale: 2}}},
	} {
		t.Run(name, func(t *testing.T) { checkRevenueAgainstApd(t, txs) })
	}
}

// FuzzRevenueMatchesApd: the integer arithmetic of revenue (fixed.go) and
// apd agree on every contribution and on the subtotal, for any rows within
// SPEC §4's bounds, multi-row maxima included.
func FuzzRevenueMatchesApd(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0x27, 0x0f, 1})
	f.Add([]byte("\x01some rows of bytes that read as quantities, prices and discounts"))
	f.Add([]byte{5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRevenueAgainstApd(t, rowsOf(data))
	})
}
