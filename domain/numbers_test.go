package domain_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/domain"
)

// The extremes of protocol §4: 12 integer digits, 6 fractional digits, and every
// discount from 0 to 1. Products must come out exact and in plain notation.
// Expected values were worked out with Python's decimal module, not this code.
func TestRevenueIsExactAtTheExtremes(t *testing.T) {
	header := "transaction_id,customer_id,quantity,unit_price,discount\n"
	tests := []struct {
		name, row, want string
	}{
		{"largest quantity and price, no discount",
			"T1,C1,999999999999,999999999999.999999,0",
			"999999999998999999000000.000001"},
		{"most negative quantity, smallest discount step",
			"T1,C1,-999999999999,999999999999.999999,0.000001",
			"-999998999999000000000001.000000999999"},
		{"discount of 1 gives zero, not negative zero",
			"T1,C1,-5,12.50,1",
			"0"},
		{"discount of 1.000000",
			"T1,C1,5,12.50,1.000000",
			"0"},
		{"negative zero quantity",
			"T1,C1,-0,12.50,0",
			"0"},
		{"tiniest amount",
			"T1,C1,1,0.000001,0.999999",
			"0.000000000001"},
		{"trailing zeros removed",
			"T1,C1,10,1.500000,0.500000",
			"7.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			files := fixtureFiles()
			files[domain.TransactionsFile] = []byte(header + tt.row + "\n")
			r := compute(t, files)
			is.Equal(str(r.Revenue.Contributions[0].NetRevenue), tt.want)
			is.Equal(r.Revenue.KnownSubtotal, tt.want)
			is.Equal(str(r.Revenue.CompleteTotal), tt.want)
		})
	}
}

func TestSubtotalOfManyExtremeRowsStaysExact(t *testing.T) {
	is := is.New(t)
	header := "transaction_id,customer_id,quantity,unit_price,discount\n"
	var rows strings.Builder
	rows.WriteString(header)
	for i := range domain.MaxDataRows {
		fmt.Fprintf(&rows, "T%d,C1,999999999999,999999999999.999999,0.000001\n", i)
	}
	files := fixtureFiles()
	files[domain.TransactionsFile] = []byte(rows.String())
	r := compute(t, files)
	// 10,000 × 999998999999000000000001.000000999999, worked out independently
	// with Python's decimal module at precision 80.
	is.Equal(r.Revenue.KnownSubtotal, "9999989999990000000000010000.00999999")
}
