package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/internal/testutil"
)

// The 4 MiB read-back limit must hold every result.json that valid sources
// can produce, or a run could be committed that can never verify. This
// builds the largest result the 1 MiB and 10,000-row limits allow: every
// price blank and every customer unknown (each transaction then appears in
// contributions, in missing_price, and its customer twice in the join), with
// 10,000 rows of 64 + 33 character IDs, and 5,000 64-character customer IDs
// each repeated once.
func TestTheLargestPossibleResultFitsTheReadBackLimit(t *testing.T) {
	is := is.New(t)
	var tx, cu strings.Builder
	tx.WriteString("transaction_id,customer_id,quantity,unit_price,discount\n")
	for i := range domain.MaxDataRows {
		fmt.Fprintf(&tx, "%064d,U%032d,1,,0\n", i, i)
	}
	cu.WriteString("customer_id,segment\n")
	for i := range domain.MaxDataRows {
		fmt.Fprintf(&cu, "D%063d,s\n", i/2)
	}
	files := testutil.Fixture(t)
	files[domain.TransactionsFile] = []byte(tx.String())
	files[domain.CustomersFile] = []byte(cu.String())
	is.True(tx.Len() <= domain.MaxSourceBytes && cu.Len() <= domain.MaxSourceBytes) // valid sources

	m := newMem(t, files)
	r := m.run(analyzeReq("big", m.digest()), "--workspace", wsRoot, "--output-dir", "runs")
	is.Equal(r.Exit, 0)
	size := len(m.read("runs/big/result.json"))
	t.Logf("largest result.json: %d bytes, %.1f%% of the %d-byte read-back limit", size, 100*float64(size)/evidence.MaxSavedBytes, evidence.MaxSavedBytes)
	is.True(size <= evidence.MaxSavedBytes) // fits, so it can always be verified
	v := m.run(verifyReq("v", "big"), "--workspace", wsRoot, "--output-dir", "runs")
	is.Equal(v.Exit, 0)
}
