package jsonvalue_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/metricproof/metricproof/app/jsonvalue"
)

// resultDocument is a result.json-shaped document at the limit of protocol §8:
// indented JSON with 10,000 contributions of 64-character transaction IDs,
// about 1.5 MB. The Baseline benchmarks run encoding/json on the same bytes
// in the same run, so the figures can be quoted as ratios:
//
//	go test ./app/jsonvalue -run '^$' -bench . -count 5
var resultDocument = sync.OnceValue(func() []byte {
	type contribution struct {
		TransactionID string  `json:"transaction_id"`
		NetRevenue    *string `json:"net_revenue"`
	}
	type blocker struct {
		Code     string   `json:"code"`
		Message  string   `json:"message"`
		Subjects []string `json:"subjects"`
	}
	rng := rand.New(rand.NewPCG(3, 4)) // deterministic
	contributions := make([]contribution, 10_000)
	var missing []string
	for i := range contributions {
		sum := sha256.Sum256([]byte(fmt.Sprint("transaction ", i)))
		contributions[i].TransactionID = hex.EncodeToString(sum[:])
		if i%100 == 99 {
			missing = append(missing, contributions[i].TransactionID)
			continue
		}
		s := fmt.Sprintf("%d.%d", rng.IntN(20_000_000)-1_000_000, rng.IntN(9999)+1)
		contributions[i].NetRevenue = &s
	}
	rate := "0.827272727273"
	doc := map[string]any{} // encoding/json sorts the keys; order does not matter here
	doc["definition_id"] = "synthetic-v1"
	doc["source_digest"] = hex.EncodeToString(make([]byte, 32))
	doc["synthetic"] = true
	doc["conversion"] = map[string]any{"successes": 4_999_123_456_789_012, "eligible": 9_999_999_999_999_999,
		"rate": rate, "method": "pooled_denominator"}
	doc["revenue"] = map[string]any{"units": "fictional_currency_units", "known_subtotal": "123456789.1234",
		"known_rows": 9_900, "total_rows": 10_000, "complete_total": nil, "contributions": contributions}
	doc["customer_join"] = map[string]any{"status": "eligible", "duplicate_keys": []string{},
		"unmatched_keys": []string{}, "joined_output": "not_produced"}
	doc["release"] = map[string]any{"eligible": false, "human_approval": "not_granted", "blockers": []blocker{{
		Code: "missing_price", Message: "unit_price is blank for these transactions", Subjects: missing}}}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(out, '\n')
})

func TestResultDocumentParses(t *testing.T) {
	data := resultDocument()
	if n := len(data); n < 1_400_000 || n > 4<<20 {
		t.Fatalf("document of %d bytes; want about 1.5 MB, under the 4 MiB read-back limit", n)
	}
	v, err := jsonvalue.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	rev, _ := v.Get("revenue")
	c, _ := rev.Get("contributions")
	if len(c.Items) != 10_000 {
		t.Fatalf("%d contributions", len(c.Items))
	}
}

func BenchmarkParse(b *testing.B) {
	data := resultDocument()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jsonvalue.Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineEncodingJSONValid checks the same bytes with json.Valid,
// which builds nothing.
func BenchmarkBaselineEncodingJSONValid(b *testing.B) {
	data := resultDocument()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if !json.Valid(data) {
			b.Fatal("invalid")
		}
	}
}

// BenchmarkBaselineEncodingJSONUnmarshal decodes the same bytes into any,
// which builds a tree as Parse does.
func BenchmarkBaselineEncodingJSONUnmarshal(b *testing.B) {
	data := resultDocument()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
}
