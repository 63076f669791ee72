package domain

import (
	"slices"

	"github.com/cockroachdb/apd/v3"
)

// Compute runs the synthetic-v1 calculation over validated records. The
// source digest is carried into the result unchanged. The only error is a
// [NumericError], which valid sources cannot cause.
func Compute(in Inputs, sourceDigest string) (Result, error) {
	conv, err := conversion(in.Groups)
	if err != nil {
		return Result{}, err
	}
	rev, missing, err := revenue(in.Transactions)
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

func conversion(groups []Group) (Conversion, error) {
	c := Conversion{Method: MethodPooled}
	for _, g := range groups {
		c.Successes += g.Successes
		c.Eligible += g.Eligible
	}
	rate, err := FormatRate(c.Successes, c.Eligible)
	c.Rate = rate
	return c, err
}

// revenue computes each contribution exactly and returns the IDs of the
// transactions whose price is blank, in file order.
func revenue(txs []Transaction) (Revenue, []string, error) {
	ctx := exact()
	one := apd.New(1, 0)
	var subtotal, qty, gross, keep, net apd.Decimal
	r := Revenue{Units: RevenueUnits, TotalRows: len(txs), Contributions: make([]Contribution, len(txs))}
	missing := []string{}
	for i := range txs {
		t := &txs[i]
		r.Contributions[i].TransactionID = t.ID
		if !t.PriceKnown {
			missing = append(missing, t.ID)
			continue
		}
		qty.SetInt64(t.Quantity)
		_, err1 := ctx.Mul(&gross, &qty, &t.UnitPrice)
		_, err2 := ctx.Sub(&keep, one, &t.Discount)
		_, err3 := ctx.Mul(&net, &gross, &keep)
		_, err4 := ctx.Add(&subtotal, &subtotal, &net)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			return Revenue{}, nil, &NumericError{What: "net revenue of transaction " + t.ID}
		}
		s := FormatMoney(&net)
		r.Contributions[i].NetRevenue = &s
		r.KnownRows++
	}
	r.KnownSubtotal = FormatMoney(&subtotal)
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
