package domain

// Result is the outcome of one synthetic-v1 calculation: the value of
// result.json and of analyze's response result. Field order is the key
// order of the saved JSON.
type Result struct {
	DefinitionID string       `json:"definition_id"`
	SourceDigest string       `json:"source_digest"`
	Synthetic    bool         `json:"synthetic"`
	Conversion   Conversion   `json:"conversion"`
	Revenue      Revenue      `json:"revenue"`
	CustomerJoin CustomerJoin `json:"customer_join"`
	Release      Release      `json:"release"`
}

// Conversion is successes over eligible with a pooled denominator.
type Conversion struct {
	Successes int64 `json:"successes"`
	Eligible  int64 `json:"eligible"`
	// Rate has exactly 12 fractional digits; nil when eligible is 0.
	Rate   *string `json:"rate"`
	Method string  `json:"method"`
}

// Revenue holds the exact per-transaction contributions and their sums.
type Revenue struct {
	Units         string `json:"units"`
	KnownSubtotal string `json:"known_subtotal"`
	KnownRows     int    `json:"known_rows"`
	TotalRows     int    `json:"total_rows"`
	// CompleteTotal equals KnownSubtotal when every price is known, else nil.
	CompleteTotal *string        `json:"complete_total"`
	Contributions []Contribution `json:"contributions"`
}

// Contribution is one transaction's net revenue, nil when its price is blank.
type Contribution struct {
	TransactionID string  `json:"transaction_id"`
	NetRevenue    *string `json:"net_revenue"`
}

// CustomerJoin is the cardinality check of transactions → customers.
type CustomerJoin struct {
	Status        string   `json:"status"`
	DuplicateKeys []string `json:"duplicate_keys"`
	UnmatchedKeys []string `json:"unmatched_keys"`
	JoinedOutput  string   `json:"joined_output"`
}

// Release says whether the result may be released; approval is never the
// program's to grant.
type Release struct {
	Eligible      bool      `json:"eligible"`
	Blockers      []Blocker `json:"blockers"`
	HumanApproval string    `json:"human_approval"`
}

// Blocker is one reason the result may not be released.
type Blocker struct {
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	Subjects []string `json:"subjects"`
}

// Fixed values of the synthetic-v1 result.
const (
	MethodPooled        = "pooled_denominator"
	RevenueUnits        = "fictional_currency_units"
	JoinBlocked         = "blocked"
	JoinEligible        = "eligible"
	JoinedOutputNone    = "not_produced"
	HumanApprovalNone   = "not_granted"
	BlockerMissingPrice = "missing_price"
	BlockerDuplicateKey = "duplicate_customer_key"
	BlockerUnmatchedKey = "unmatched_customer_key"
	BlockerNoEligible   = "no_eligible_population"
)

// BlockerCodes returns the release blocker codes in their fixed order.
func BlockerCodes() []string {
	return []string{BlockerMissingPrice, BlockerDuplicateKey, BlockerUnmatchedKey, BlockerNoEligible}
}
