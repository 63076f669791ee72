package domain_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/domain"
)

// The shipped fixture, exactly as protocol §7 prints it.
const (
	fixtureTransactions = "transaction_id,customer_id,quantity,unit_price,discount\n" +
		"T1,C1,2,100.00,0.10\nT2,C2,-1,90.00,0\nT3,C3,1,50.00,0\nT4,C4,3,,0\nT5,C5,4,12.50,1\n"
	fixtureGroups    = "group_id,successes,eligible\nG1,45,50\nG2,46,60\n"
	fixtureCustomers = "customer_id,segment\nC1,retail\nC2,retail\nC2,wholesale\nC3,wholesale\nC4,retail\nC5,online\n"
)

func fixtureFiles() map[string][]byte {
	return map[string][]byte{
		domain.TransactionsFile: []byte(fixtureTransactions),
		domain.GroupsFile:       []byte(fixtureGroups),
		domain.CustomersFile:    []byte(fixtureCustomers),
		domain.DefinitionsFile:  []byte(domain.Contract),
	}
}

func compute(t *testing.T, files map[string][]byte) domain.Result {
	t.Helper()
	in, err := domain.ParseSources(files)
	if err != nil {
		t.Fatalf("ParseSources: %v", err)
	}
	r, err := domain.Compute(in, "digest")
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	// inspect_inputs reports Blockers: the same list, found without the
	// numbers, for every input any test computes.
	if b := domain.Blockers(in); !reflect.DeepEqual(b, r.Release.Blockers) {
		t.Fatalf("Blockers gave %+v, Compute %+v", b, r.Release.Blockers)
	}
	return r
}

func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

func TestFixtureGivesTheNumbersOfSpecSection7(t *testing.T) {
	is := is.New(t)
	r := compute(t, fixtureFiles())

	is.Equal(r.DefinitionID, "synthetic-v1")
	is.True(r.Synthetic)
	is.Equal(r.Conversion.Successes, int64(91))
	is.Equal(r.Conversion.Eligible, int64(110))
	is.Equal(str(r.Conversion.Rate), "0.827272727273")
	is.Equal(r.Conversion.Method, "pooled_denominator")

	var got []string
	for _, c := range r.Revenue.Contributions {
		got = append(got, c.TransactionID+"="+str(c.NetRevenue))
	}
	is.Equal(got, []string{"T1=180", "T2=-90", "T3=50", "T4=<null>", "T5=0"})
	is.Equal(r.Revenue.KnownSubtotal, "140")
	is.Equal(r.Revenue.KnownRows, 4)
	is.Equal(r.Revenue.TotalRows, 5)
	is.Equal(r.Revenue.CompleteTotal, nil) // a blank price leaves no complete total
	is.Equal(r.Revenue.Units, "fictional_currency_units")

	is.Equal(r.CustomerJoin.DuplicateKeys, []string{"C2"})
	is.Equal(r.CustomerJoin.UnmatchedKeys, []string{})
	is.Equal(r.CustomerJoin.Status, "blocked")
	is.Equal(r.CustomerJoin.JoinedOutput, "not_produced")

	is.Equal(r.Release.Eligible, false)
	is.Equal(r.Release.HumanApproval, "not_granted")
	is.Equal(len(r.Release.Blockers), 2)
	is.Equal(r.Release.Blockers[0].Code, "missing_price")
	is.Equal(r.Release.Blockers[0].Subjects, []string{"T4"})
	is.Equal(r.Release.Blockers[1].Code, "duplicate_customer_key")
	is.Equal(r.Release.Blockers[1].Subjects, []string{"C2"})
}

func TestEmptyListsMarshalAsArraysNotNull(t *testing.T) {
	is := is.New(t)
	files := fixtureFiles()
	files[domain.TransactionsFile] = []byte("transaction_id,customer_id,quantity,unit_price,discount\n")
	files[domain.CustomersFile] = []byte("customer_id,segment\n")
	files[domain.GroupsFile] = []byte("group_id,successes,eligible\n")
	b, err := json.Marshal(compute(t, files))
	is.NoErr(err)
	s := string(b)
	is.True(!strings.Contains(s, `"contributions":null`))
	is.True(strings.Contains(s, `"duplicate_keys":[]`))
	is.True(strings.Contains(s, `"unmatched_keys":[]`))
	is.True(strings.Contains(s, `"subjects":[]`)) // no_eligible_population
}

func TestReleaseBlockers(t *testing.T) {
	header := "transaction_id,customer_id,quantity,unit_price,discount\n"
	tests := []struct {
		name         string
		transactions string
		customers    string
		groups       string
		wantCodes    []string
		wantSubjects [][]string
		wantEligible bool
		wantTotal    string
	}{
		{
			name:         "every price known and every key unique and matched",
			transactions: header + "T1,C1,2,1.5,0\nT2,C2,1,2,0.5\n",
			customers:    "customer_id,segment\nC1,a\nC2,b\n",
			groups:       "group_id,successes,eligible\nG1,1,2\n",
			wantCodes:    nil,
			wantEligible: true,
			wantTotal:    "4",
		},
		{
			name:         "unmatched and duplicate keys together, sorted by byte order",
			transactions: header + "T1,Cz,1,1,0\nT2,C2,1,1,0\nT3,CA,1,1,0\nT4,Cz,1,1,0\n",
			customers:    "customer_id,segment\nC2,a\nCb,x\nC2,b\nCa,y\nCb,z\n",
			groups:       "group_id,successes,eligible\nG1,1,2\n",
			wantCodes:    []string{"duplicate_customer_key", "unmatched_customer_key"},
			wantSubjects: [][]string{{"C2", "Cb"}, {"CA", "Cz"}},
			wantTotal:    "4",
		},
		{
			name:         "zero eligible comes last, with every other blocker",
			transactions: header + "T9,C9,1,,0\nT1,C1,1,,0\n",
			customers:    "customer_id,segment\nC1,a\nC1,a\n",
			groups:       "group_id,successes,eligible\nG1,0,0\n",
			wantCodes:    []string{"missing_price", "duplicate_customer_key", "unmatched_customer_key", "no_eligible_population"},
			wantSubjects: [][]string{{"T9", "T1"}, {"C1"}, {"C9"}, {}},
			wantTotal:    "<null>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			files := fixtureFiles()
			files[domain.TransactionsFile] = []byte(tt.transactions)
			files[domain.CustomersFile] = []byte(tt.customers)
			files[domain.GroupsFile] = []byte(tt.groups)
			r := compute(t, files)
			var codes []string
			var subjects [][]string
			for _, b := range r.Release.Blockers {
				codes = append(codes, b.Code)
				subjects = append(subjects, b.Subjects)
			}
			is.Equal(codes, tt.wantCodes)
			is.Equal(subjects, tt.wantSubjects)
			is.Equal(r.Release.Eligible, tt.wantEligible)
			is.Equal(str(r.Revenue.CompleteTotal), tt.wantTotal)
			is.Equal(r.Release.HumanApproval, "not_granted") // never granted, even when eligible
		})
	}
}

func TestZeroEligibleHasNoRate(t *testing.T) {
	is := is.New(t)
	files := fixtureFiles()
	files[domain.GroupsFile] = []byte("group_id,successes,eligible\nG1,0,0\nG2,0,0\n")
	r := compute(t, files)
	is.Equal(r.Conversion.Rate, nil)
	b, err := json.Marshal(r.Conversion)
	is.NoErr(err)
	is.Equal(string(b), `{"successes":0,"eligible":0,"rate":null,"method":"pooled_denominator"}`)
}

func TestRateRoundsHalfEvenAtTheTwelfthPlace(t *testing.T) {
	const twoE12 = 2_000_000_000_000 // successes/eligible lands on 10^-12 × k.5
	tests := []struct {
		successes, eligible int64
		want                string
	}{
		{91, 110, "0.827272727273"},
		{1, 1, "1.000000000000"},
		{0, 5, "0.000000000000"},
		{1, 3, "0.333333333333"},
		{2, 3, "0.666666666667"},
		{1, twoE12, "0.000000000000"},          // 0.5e-12: halfway, down to even 0
		{3, twoE12, "0.000000000002"},          // 1.5e-12: halfway, up to even 2
		{5, twoE12, "0.000000000002"},          // 2.5e-12: halfway, down to even 2
		{7, twoE12, "0.000000000004"},          // 3.5e-12: halfway, up to even 4
		{twoE12 - 1, twoE12, "1.000000000000"}, // 0.9999999999995: halfway, up to even 1
		{1, 7, "0.142857142857"},
		{6, 7, "0.857142857143"},
		{1, 2_000_000_000_001, "0.000000000000"}, // just under halfway
		{1, 1_999_999_999_999, "0.000000000001"}, // just over halfway
		{9_999_999_999_999_999, 9_999_999_999_999_999, "1.000000000000"},
	}
	for _, tt := range tests {
		is := is.New(t)
		got, err := domain.FormatRate(tt.successes, tt.eligible)
		is.NoErr(err)
		is.Equal(str(got), tt.want) // rate of successes/eligible
	}
}
