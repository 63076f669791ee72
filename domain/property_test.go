package domain_test

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/domain"
)

// Property tests of the calculation (protocol §5) against an oracle written
// here in math/big from the CSV texts themselves, never from the parsed
// records or the package's arithmetic. Sources come from a generator with
// fixed seeds, so every run tests the same inputs and a failure names its
// seed.

// genRows are the field texts of one generated set of sources.
type genRows struct {
	tx [][5]string // transaction_id, customer_id, quantity, unit_price, discount
	gr [][3]string // group_id, successes, eligible
	cu [][2]string // customer_id, segment
}

func (g genRows) files() map[string][]byte {
	var tx, gr, cu strings.Builder
	tx.WriteString(txHeader)
	for _, r := range g.tx {
		tx.WriteString(strings.Join(r[:], ",") + "\n")
	}
	gr.WriteString(grHeader)
	for _, r := range g.gr {
		gr.WriteString(strings.Join(r[:], ",") + "\n")
	}
	cu.WriteString(cuHeader)
	for _, r := range g.cu {
		cu.WriteString(strings.Join(r[:], ",") + "\n")
	}
	return map[string][]byte{
		domain.TransactionsFile: []byte(tx.String()),
		domain.GroupsFile:       []byte(gr.String()),
		domain.CustomersFile:    []byte(cu.String()),
		domain.DefinitionsFile:  []byte(domain.Contract),
	}
}

// genShape says what a generator makes.
type genShape struct {
	name         string
	transactions int
	groups       int
	customers    int
	blankPrice   float64 // chance of a blank price
	duplicates   float64 // chance a customer row repeats an earlier ID
	unmatched    float64 // chance a transaction names no customer
	zeroEligible bool    // every group 0 of 0
	maxima       bool    // every number at 12 integer and 6 fractional digits
}

// digits writes n random decimal digits, the first nonzero unless zero is
// allowed.
func digits(rng *rand.Rand, n int, leadingZero bool) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + rng.IntN(10))
	}
	if !leadingZero && b[0] == '0' {
		b[0] = byte('1' + rng.IntN(9))
	}
	return string(b)
}

// plainNumber writes a nonnegative plain decimal of 1–12 integer and 0–6
// fractional digits, now and then with leading or trailing zeros.
func plainNumber(rng *rand.Rand, fraction bool) string {
	s := digits(rng, 1+rng.IntN(12), rng.IntN(8) == 0)
	if fraction && rng.IntN(2) == 0 {
		s += "." + digits(rng, 1+rng.IntN(6), true)
	}
	return s
}

func generate(shape genShape, seed uint64) genRows {
	rng := rand.New(rand.NewPCG(seed, 0x6d65747269637072))
	var g genRows
	var ids []string
	for i := range shape.customers {
		id := fmt.Sprintf("C%d", i)
		if len(ids) > 0 && rng.Float64() < shape.duplicates {
			id = ids[rng.IntN(len(ids))]
		}
		ids = append(ids, id)
		g.cu = append(g.cu, [2]string{id, fmt.Sprintf("s%d", rng.IntN(5))})
	}
	for i := range shape.transactions {
		customer := fmt.Sprintf("U%d", rng.IntN(shape.transactions+1))
		if len(ids) > 0 && rng.Float64() >= shape.unmatched {
			customer = ids[rng.IntN(len(ids))]
		}
		quantity := digits(rng, 1+rng.IntN(12), true)
		price := plainNumber(rng, true)
		discount := []string{"0", "1", "1.000000", "0." + digits(rng, 1+rng.IntN(6), true)}[rng.IntN(4)]
		if rng.IntN(2) == 0 {
			quantity = "-" + quantity
		}
		if shape.maxima {
			quantity, price = "999999999999", "999999999999.999999"
			discount = []string{"0", "0.000001"}[rng.IntN(2)]
		}
		if rng.Float64() < shape.blankPrice {
			price = ""
		}
		g.tx = append(g.tx, [5]string{fmt.Sprintf("T%05d-%d", i, rng.IntN(1000)), customer, quantity, price, discount})
	}
	for i := range shape.groups {
		eligible := plainNumber(rng, false)
		if shape.maxima {
			eligible = "999999999999"
		}
		e, _ := strconv.ParseInt(eligible, 10, 64)
		successes := strconv.FormatInt(rng.Int64N(e+1), 10)
		if shape.zeroEligible {
			eligible, successes = "0", "0"
		}
		g.gr = append(g.gr, [3]string{fmt.Sprintf("G%d", i), successes, eligible})
	}
	return g
}

// rat reads a plain decimal text exactly.
func rat(t *testing.T, s string) *big.Rat {
	t.Helper()
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("math/big cannot read %q", s)
	}
	return r
}

// expected is protocol §5 computed by the oracle from the texts.
type expected struct {
	contributions []*big.Rat // nil where the price is blank
	subtotal      *big.Rat
	complete      bool
	successes     *big.Int
	eligible      *big.Int
	duplicates    []string
	unmatched     []string
	missing       []string
}

func oracle(t *testing.T, g genRows) expected {
	t.Helper()
	e := expected{subtotal: new(big.Rat), complete: true, successes: new(big.Int), eligible: new(big.Int),
		duplicates: []string{}, unmatched: []string{}, missing: []string{}}
	for _, r := range g.tx {
		if r[3] == "" {
			e.contributions = append(e.contributions, nil)
			e.complete = false
			e.missing = append(e.missing, r[0])
			continue
		}
		net := new(big.Rat).Mul(rat(t, r[2]), rat(t, r[3]))
		net.Mul(net, new(big.Rat).Sub(big.NewRat(1, 1), rat(t, r[4])))
		e.contributions = append(e.contributions, net)
		e.subtotal.Add(e.subtotal, net)
	}
	for _, r := range g.gr {
		s, _ := new(big.Int).SetString(r[1], 10)
		el, _ := new(big.Int).SetString(r[2], 10)
		e.successes.Add(e.successes, s)
		e.eligible.Add(e.eligible, el)
	}
	count := map[string]int{}
	for _, r := range g.cu {
		count[r[0]]++
	}
	for id, n := range count {
		if n > 1 {
			e.duplicates = append(e.duplicates, id)
		}
	}
	for _, r := range g.tx {
		if count[r[1]] == 0 && !slices.Contains(e.unmatched, r[1]) {
			e.unmatched = append(e.unmatched, r[1])
		}
	}
	slices.Sort(e.duplicates)
	slices.Sort(e.unmatched)
	return e
}

// money is the exact value of a money string, which must be protocol §5's
// notation.
func money(t *testing.T, s string) *big.Rat {
	t.Helper()
	if !moneyRE.MatchString(s) || s == "-0" {
		t.Fatalf("money %q is not a plain decimal without trailing zeros", s)
	}
	return rat(t, s)
}

// halfEvenRate rounds successes/eligible to 12 places, half to even, with
// big.Int alone: q, r = divmod(successes × 10^12, eligible), then up when
// 2r > eligible, or 2r = eligible and q is odd.
func halfEvenRate(successes, eligible *big.Int) string {
	unit := new(big.Int).Exp(big.NewInt(10), big.NewInt(12), nil)
	q, r := new(big.Int).QuoRem(new(big.Int).Mul(successes, unit), eligible, new(big.Int))
	switch new(big.Int).Lsh(r, 1).Cmp(eligible) {
	case 1:
		q.Add(q, big.NewInt(1))
	case 0:
		if q.Bit(0) == 1 {
			q.Add(q, big.NewInt(1))
		}
	}
	whole, frac := new(big.Int).QuoRem(q, unit, new(big.Int))
	return fmt.Sprintf("%s.%012s", whole, frac)
}

// checkProperties holds one computed result to every property.
func checkProperties(t *testing.T, g genRows, r domain.Result) {
	t.Helper()
	e := oracle(t, g)
	rev := r.Revenue

	// Each contribution is quantity × unit_price × (1 − discount), exactly;
	// known_subtotal is the sum of the known contributions.
	if len(rev.Contributions) != len(g.tx) || rev.TotalRows != len(g.tx) {
		t.Fatalf("%d contributions, total_rows %d, for %d transactions", len(rev.Contributions), rev.TotalRows, len(g.tx))
	}
	sum, known := new(big.Rat), 0
	for i, c := range rev.Contributions {
		if c.TransactionID != g.tx[i][0] {
			t.Fatalf("contribution %d is %q, want %q: file order", i, c.TransactionID, g.tx[i][0])
		}
		if (c.NetRevenue == nil) != (e.contributions[i] == nil) {
			t.Fatalf("contribution %d is %s with price %q", i, str(c.NetRevenue), g.tx[i][3])
		}
		if c.NetRevenue == nil {
			continue
		}
		got := money(t, *c.NetRevenue)
		if got.Cmp(e.contributions[i]) != 0 {
			t.Fatalf("contribution %d is %s, want %s", i, *c.NetRevenue, e.contributions[i].FloatString(18))
		}
		sum.Add(sum, got)
		known++
	}
	if subtotal := money(t, rev.KnownSubtotal); subtotal.Cmp(sum) != 0 || subtotal.Cmp(e.subtotal) != 0 {
		t.Fatalf("known_subtotal %s, the known contributions sum to %s", rev.KnownSubtotal, sum.FloatString(18))
	}
	if rev.KnownRows != known {
		t.Fatalf("known_rows %d, want %d", rev.KnownRows, known)
	}

	// complete_total is null exactly when a price is blank.
	if (rev.CompleteTotal == nil) == e.complete {
		t.Fatalf("complete_total %s with every price known: %v", str(rev.CompleteTotal), e.complete)
	}
	if rev.CompleteTotal != nil && *rev.CompleteTotal != rev.KnownSubtotal {
		t.Fatalf("complete_total %s is not known_subtotal %s", *rev.CompleteTotal, rev.KnownSubtotal)
	}

	// The rate is the exact quotient rounded half-even to 12 places.
	c := r.Conversion
	if big.NewInt(c.Successes).Cmp(e.successes) != 0 || big.NewInt(c.Eligible).Cmp(e.eligible) != 0 {
		t.Fatalf("conversion %d/%d, want %s/%s", c.Successes, c.Eligible, e.successes, e.eligible)
	}
	switch {
	case e.eligible.Sign() == 0 && c.Rate != nil:
		t.Fatalf("rate %s with eligible 0", *c.Rate)
	case e.eligible.Sign() != 0 && (c.Rate == nil || *c.Rate != halfEvenRate(e.successes, e.eligible)):
		t.Fatalf("rate %s, want %s for %s/%s", str(c.Rate), halfEvenRate(e.successes, e.eligible), e.successes, e.eligible)
	}

	// The join.
	j := r.CustomerJoin
	if !slices.Equal(j.DuplicateKeys, e.duplicates) || !slices.Equal(j.UnmatchedKeys, e.unmatched) {
		t.Fatalf("join: duplicates %v unmatched %v, want %v and %v", j.DuplicateKeys, j.UnmatchedKeys, e.duplicates, e.unmatched)
	}
	if blocked := len(e.duplicates)+len(e.unmatched) > 0; (j.Status == "blocked") != blocked || (!blocked && j.Status != "eligible") {
		t.Fatalf("join status %q", j.Status)
	}

	// Blockers appear in the fixed order, and only when they apply.
	type blocker struct {
		code     string
		subjects []string
	}
	var want []blocker
	if len(e.missing) > 0 {
		want = append(want, blocker{"missing_price", e.missing})
	}
	if len(e.duplicates) > 0 {
		want = append(want, blocker{"duplicate_customer_key", e.duplicates})
	}
	if len(e.unmatched) > 0 {
		want = append(want, blocker{"unmatched_customer_key", e.unmatched})
	}
	if e.eligible.Sign() == 0 {
		want = append(want, blocker{"no_eligible_population", []string{}})
	}
	got := r.Release.Blockers
	if len(got) != len(want) || r.Release.Eligible != (len(want) == 0) || r.Release.HumanApproval != "not_granted" {
		t.Fatalf("release %v eligible %v, want blockers %v", got, r.Release.Eligible, want)
	}
	for i, b := range want {
		if got[i].Code != b.code || !slices.Equal(got[i].Subjects, b.subjects) || got[i].Subjects == nil || got[i].Message == "" {
			t.Fatalf("blocker %d is %+v, want %v", i, got[i], b)
		}
	}
}

func TestTheCalculationKeepsItsProperties(t *testing.T) {
	shapes := []genShape{
		{name: "small, some blanks", transactions: 8, groups: 3, customers: 6, blankPrice: 0.2, duplicates: 0.2, unmatched: 0.2},
		{name: "every price known, no defect", transactions: 40, groups: 10, customers: 50},
		{name: "every price blank", transactions: 30, groups: 4, customers: 10, blankPrice: 1},
		{name: "duplicates only", transactions: 30, groups: 4, customers: 30, duplicates: 0.5},
		{name: "unmatched only", transactions: 30, groups: 4, customers: 30, unmatched: 0.5},
		{name: "no eligible population", transactions: 10, groups: 5, customers: 10, zeroEligible: true},
		{name: "no rows at all", transactions: 0, groups: 0, customers: 0},
		{name: "transactions but no customers", transactions: 5, groups: 1, customers: 0},
		{name: "everything wrong at once", transactions: 50, groups: 3, customers: 20, blankPrice: 0.3, duplicates: 0.3, unmatched: 0.3, zeroEligible: true},
		{name: "many rows", transactions: 2000, groups: 2000, customers: 2000, blankPrice: 0.01, duplicates: 0.01, unmatched: 0.01},
	}
	for _, shape := range shapes {
		for seed := range uint64(20) {
			t.Run(fmt.Sprintf("%s/seed %d", shape.name, seed), func(t *testing.T) {
				g := generate(shape, seed)
				checkProperties(t, g, compute(t, g.files()))
			})
		}
	}
}

// The maxima of protocol §4 on every row at once: 10,000 transactions of
// 12-digit quantities and 12+6-digit prices, 10,000 groups of 12-digit
// counts. The subtotal needs 28 integer and 12 fractional digits, all
// exact.
func TestTheMaximaOfEveryRowStayExact(t *testing.T) {
	shape := genShape{name: "maxima", transactions: domain.MaxDataRows, groups: domain.MaxDataRows, customers: domain.MaxDataRows, maxima: true}
	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			g := generate(shape, seed)
			r := compute(t, g.files())
			checkProperties(t, g, r)
			if whole, frac, _ := strings.Cut(r.Revenue.KnownSubtotal, "."); len(whole) != 28 || len(frac) < 6 {
				t.Fatalf("known_subtotal %s is not at the maxima", r.Revenue.KnownSubtotal)
			}
		})
	}
}

// Customers' order is not part of any join result: every permutation of
// customers.csv gives the same result.
func TestReorderingCustomersChangesNoJoinResult(t *testing.T) {
	shape := genShape{name: "join", transactions: 60, groups: 2, customers: 40, blankPrice: 0.1, duplicates: 0.3, unmatched: 0.2}
	for seed := range uint64(20) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			is := is.New(t)
			g := generate(shape, seed)
			want := compute(t, g.files())
			rng := rand.New(rand.NewPCG(seed, 99))
			for range 5 {
				shuffled := g
				shuffled.cu = slices.Clone(g.cu)
				rng.Shuffle(len(shuffled.cu), func(i, j int) { shuffled.cu[i], shuffled.cu[j] = shuffled.cu[j], shuffled.cu[i] })
				got := compute(t, shuffled.files())
				is.True(reflect.DeepEqual(got.CustomerJoin, want.CustomerJoin)) // same join
				is.True(reflect.DeepEqual(got.Release, want.Release))           // same blockers
				is.Equal(resultJSON(t, got), resultJSON(t, want))               // the whole result
			}
		})
	}
}

// The rate's rounding at the exact halfway points, through Compute: the
// pooled sums are split over rows, so a halfway case is only visible in the
// sum.
func TestTheRateRoundsHalfToEvenOnThePooledSum(t *testing.T) {
	// Four rows of 5×10^11 pool to 2×10^12, which no single row can hold.
	half := func(successes string, more ...[3]string) [][3]string {
		const h = "500000000000"
		return append([][3]string{{"G1", successes, h}, {"G2", "0", h}, {"G3", "0", h}, {"G4", "0", h}}, more...)
	}
	tests := []struct {
		name   string
		groups [][3]string
		rate   string
	}{
		{"0.5e-12 rounds down to even", half("1"), "0.000000000000"},
		{"1.5e-12 rounds up to even", half("3"), "0.000000000002"},
		{"2.5e-12 rounds down to even", half("5"), "0.000000000002"},
		{"just above half rounds up", [][3]string{{"G1", "1", "500000000000"}, {"G2", "0", "500000000000"}, {"G3", "0", "500000000000"}, {"G4", "0", "499999999999"}}, "0.000000000001"},
		{"just below half rounds down", half("1", [3]string{"G5", "0", "1"}), "0.000000000000"},
		{"all successes", [][3]string{{"G1", "999999999999", "999999999999"}, {"G2", "1", "1"}}, "1.000000000000"},
		{"the fixture", [][3]string{{"G1", "45", "50"}, {"G2", "46", "60"}}, "0.827272727273"},
		{"a third", [][3]string{{"G1", "1", "2"}, {"G2", "0", "1"}}, "0.333333333333"},
		{"two thirds", [][3]string{{"G1", "1", "2"}, {"G2", "1", "1"}}, "0.666666666667"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			g := genRows{gr: tt.groups}
			r := compute(t, g.files())
			e := oracle(t, g)
			is.Equal(halfEvenRate(e.successes, e.eligible), tt.rate) // the oracle itself
			is.Equal(str(r.Conversion.Rate), tt.rate)
		})
	}
}

func resultJSON(t *testing.T, r domain.Result) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
