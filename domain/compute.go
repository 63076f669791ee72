package domain

import (
	"slices"
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// Compute runs the synthetic-v1 calculation over validated records. The
// source digest is carried into the result unchanged. The only error is a
// [NumericError], which valid sources cannot cause.
func Compute(in Inputs, sourceDigest string) (Result, error) {
	ctx := newContext()
	conv, err := conversion(ctx, in.Groups)
	if err != nil {
		return Result{}, err
	}
	rev, missing, err := revenue(ctx, in.Transactions)
	if err != nil {
		return Result{}, err
	}
	join := customerJoin(in.Transactions, in.Customers)
	return Result{
		DefinitionID: DefinitionID,
		SourceDigest: sourceDigest,
		Synthetic:    true,
		Conversion:   conv,
		Revenue:      rev,
		CustomerJoin: join,
		Release:      release(missing, join, conv),
	}, nil
}

// Blockers is the release blockers Compute's result lists for in, found
// without computing a single number: the blank prices, the join's keys and
// whether any row is eligible. It is what inspect_inputs reports, and it
// cannot fail where Compute succeeds: the rows are validated (successes ≤
// eligible on each), and protocol §4's limits keep every product and sum
// exact at precision 80, so Compute's numeric faults never occur there.
func Blockers(in Inputs) []Blocker {
	missing := []string{}
	for i := range in.Transactions {
		if !in.Transactions[i].PriceKnown {
			missing = append(missing, in.Transactions[i].ID)
		}
	}
	var conv Conversion
	for _, g := range in.Groups {
		conv.Eligible += g.Eligible
	}
	return release(missing, customerJoin(in.Transactions, in.Customers), conv).Blockers
}

// conversion pools the groups' counts. The sums are of integers of at most
// 12 digits over at most 10,000 rows, far inside int64.
func conversion(ctx *apd.Context, groups []Group) (Conversion, error) {
	c := Conversion{Method: MethodPooled}
	for _, g := range groups {
		c.Successes += g.Successes
		c.Eligible += g.Eligible
	}
	rate, err := rate(ctx, c.Successes, c.Eligible)
	c.Rate = rate
	return c, err
}

// revenue computes each contribution, quantity × unit_price ×
// (1 − discount), and their sum in ctx, and returns the IDs of the
// transactions whose price is blank, in file order. The decimals are set
// from the parsed integers (1 − discount from the discount's millionths, see
// [Amount.complement]) and reused row after row; the money strings share
// one string, and the pointers one array.
func revenue(ctx *apd.Context, txs []Transaction) (Revenue, []string, error) {
	r := Revenue{Units: RevenueUnits, TotalRows: len(txs), Contributions: make([]Contribution, len(txs))}
	missing := []string{}
	// The money strings are written into one builder, whose String does
	// not copy, and cut out of it at the end: no string a row.
	var text strings.Builder
	text.Grow(24 * len(txs))
	var scratch [96]byte // a money string of protocol §4's numbers has at most 44 bytes
	ends := make([]int32, len(txs))
	var quantity, price, keep, gross, net, subtotal apd.Decimal
	for i := range txs {
		t := &txs[i]
		r.Contributions[i].TransactionID = t.ID
		ends[i] = int32(text.Len())
		if !t.PriceKnown {
			missing = append(missing, t.ID)
			continue
		}
		quantity.SetInt64(t.Quantity)
		t.UnitPrice.decimal(&price)
		t.Discount.complement(&keep)
		if !exact(ctx.Mul(&gross, &quantity, &price)) || !exact(ctx.Mul(&net, &gross, &keep)) ||
			!exact(ctx.Add(&subtotal, &subtotal, &net)) {
			return Revenue{}, nil, &NumericError{What: "net revenue of transaction " + t.ID}
		}
		text.Write(appendMoney(scratch[:0], &net))
		ends[i] = int32(text.Len())
		r.KnownRows++
	}
	all := text.String()
	values := make([]string, r.KnownRows)
	start, k := int32(0), 0
	for i := range txs {
		if ends[i] > start {
			values[k] = all[start:ends[i]]
			r.Contributions[i].NetRevenue = &values[k]
			k++
		}
		start = ends[i]
	}
	r.KnownSubtotal = string(appendMoney(nil, &subtotal))
	if r.KnownRows == r.TotalRows {
		total := r.KnownSubtotal
		r.CompleteTotal = &total
	}
	return r, missing, nil
}

func customerJoin(txs []Transaction, customers []Customer) CustomerJoin {
	count := make(map[string]int, len(customers))
	for _, c := range customers {
		count[c.ID]++
	}
	dup := []string{}
	for id, n := range count {
		if n > 1 {
			dup = append(dup, id)
		}
	}
	unmatched := []string{}
	seen := make(map[string]bool)
	for _, t := range txs {
		if count[t.CustomerID] == 0 && !seen[t.CustomerID] {
			seen[t.CustomerID] = true
			unmatched = append(unmatched, t.CustomerID)
		}
	}
	slices.Sort(dup) // byte order; IDs are ASCII
	slices.Sort(unmatched)
	j := CustomerJoin{Status: JoinEligible, DuplicateKeys: dup, UnmatchedKeys: unmatched, JoinedOutput: JoinedOutputNone}
	if len(dup) > 0 || len(unmatched) > 0 {
		j.Status = JoinBlocked
	}
	return j
}

// release lists the blockers in their fixed order, each only when it applies.
func release(missing []string, join CustomerJoin, conv Conversion) Release {
	blockers := []Blocker{}
	if len(missing) > 0 {
		blockers = append(blockers, Blocker{Code: BlockerMissingPrice,
			Message:  "unit_price is blank for these transactions; their revenue is unknown and no complete total exists",
			Subjects: missing})
	}
	if len(join.DuplicateKeys) > 0 {
		blockers = append(blockers, Blocker{Code: BlockerDuplicateKey,
			Message:  "these customer_id values repeat in " + CustomersFile + "; the join is not many-to-one",
			Subjects: slices.Clone(join.DuplicateKeys)})
	}
	if len(join.UnmatchedKeys) > 0 {
		blockers = append(blockers, Blocker{Code: BlockerUnmatchedKey,
			Message:  "these customer_id values of " + TransactionsFile + " have no row in " + CustomersFile,
			Subjects: slices.Clone(join.UnmatchedKeys)})
	}
	if conv.Eligible == 0 {
		blockers = append(blockers, Blocker{Code: BlockerNoEligible,
			Message:  "eligible is 0 across all groups; the conversion rate is undefined",
			Subjects: []string{}})
	}
	return Release{Eligible: len(blockers) == 0, Blockers: blockers, HumanApproval: HumanApprovalNone}
}
