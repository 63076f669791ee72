package app_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/domain"
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
	files := shippedFixture(t)
	files[domain.TransactionsFile] = []byte(tx.String())
	files[domain.CustomersFile] = []byte(cu.String())
	is.True(tx.Len() <= domain.MaxSourceBytes && cu.Len() <= domain.MaxSourceBytes) // valid sources

	m := newMem(t, files)
	r := m.run(analyzeReq("big", m.digest()), "--workspace", wsRoot, "--output-dir", "runs")
	is.Equal(r.Exit, 0)
	size := len(m.read("runs/big/result.json"))
	t.Logf("largest result.json: %d bytes, %.1f%% of the %d-byte read-back limit", size, 100*float64(size)/app.MaxSavedBytes, app.MaxSavedBytes)
	is.True(size <= app.MaxSavedBytes) // fits, so it can always be verified
	v := m.run(verifyReq("v", "big"), "--workspace", wsRoot, "--output-dir", "runs")
	is.Equal(v.Exit, 0)
}

// FuzzRunner feeds arbitrary standard input to the whole app: every input
// gets exactly one compact JSON line whose code is from the closed set and
// whose exit status agrees with it, and nothing panics.
func FuzzRunner(f *testing.F) {
	digest := strings.Repeat("0", 64)
	for _, s := range []string{
		inspect("i1"), analyzeReq("r1", digest), verifyReq("v1", "r1"), "", "{", "[]", "null",
		`{"request_id":"r","tool":"inspect_inputs","arguments":{},"request_id":"r"}`,
		`{"request_id":"r","tool":"verify_result","arguments":{"run_id":"../../etc"}}`,
		`{"request_id":"r","tool":"analyze","arguments":{"expected_source_digest":NaN}}`,
		"{\"request_id\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	files := shippedFixture(f)
	codes := app.Codes()
	f.Fuzz(func(t *testing.T, in []byte) {
		m := newMem(t, files)
		r := m.run(string(in), "--workspace", wsRoot, "--output-dir", "runs")
		if strings.Count(r.Raw, "\n") != 1 || !strings.HasSuffix(r.Raw, "\n") {
			t.Fatalf("not one line: %q", r.Raw)
		}
		if r.Body.ProtocolVersion != "1.0" {
			t.Fatalf("no protocol version: %q", r.Raw)
		}
		if r.Body.RequestID != nil && !domain.ValidID(*r.Body.RequestID) {
			t.Fatalf("echoed an invalid request_id: %q", r.Raw)
		}
		switch {
		case r.Body.OK:
			if r.Exit != 0 || r.Body.Error != nil || r.Body.Status != "success" {
				t.Fatalf("success with exit %d: %q", r.Exit, r.Raw)
			}
		case r.Body.Error == nil || !slices.Contains(codes, app.Code(r.Body.Error.Code)):
			t.Fatalf("failure without a known code: %q", r.Raw)
		case r.Body.Error.Code == "INTERNAL_ERROR":
			t.Fatalf("a panic or encoding failure: %q", r.Raw)
		case r.Body.Error.Code == "CANCELLED" != (r.Exit == 3):
			t.Fatalf("exit %d for %q", r.Exit, r.Raw)
		}
		var v any
		if err := json.Unmarshal([]byte(r.Raw), &v); err != nil {
			t.Fatalf("not JSON: %q", r.Raw)
		}
		if strings.Contains(r.Raw, wsRoot) {
			t.Fatalf("absolute path in %q", r.Raw)
		}
	})
}
