package report

import (
	"testing"

	"github.com/matryer/is"
)

// Amounts and counts are grouped by thousands on the page; anything that
// is not a plain decimal is written as it is.
func TestAmountsAreGroupedByThousands(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"0", "0"}, {"140", "140"}, {"999", "999"}, {"1000", "1,000"}, {"-90", "-90"}, {"12.5", "12.5"},
		{"9007855.54", "9,007,855.54"}, {"-1234567.5", "-1,234,567.5"}, {"100000", "100,000"},
		{"999999999999999999999999.999999", "999,999,999,999,999,999,999,999.999999"}, {"0.000001", "0.000001"},
		{"", ""}, {"-", "-"}, {"x", "x"}, {"1.2.3", "1.2.3"}, {"1e3", "1e3"}, {"1,000", "1,000"}, {"١٢٣٤", "١٢٣٤"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			is.New(t).Equal(grouped(tt.in), tt.want)
		})
	}
	is.New(t).Equal(groupedInt(10000), "10,000")
}
