package domain_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/metricproof/metricproof/domain"
)

// Benchmarks at the limits of SPEC §8: 10,000 transactions with 64-character
// IDs (within 1 MiB), 10,000 groups and 10,000 customers. The Baseline
// benchmarks measure the standard library on the same bytes in the same run,
// so the figures can be quoted as ratios:
//
//	go test ./domain -run '^$' -bench . -count 5

var maxSources = sync.OnceValue(func() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2)) // deterministic
	var tx, gr, cu strings.Builder
	tx.WriteString("transaction_id,customer_id,quantity,unit_price,discount\n")
	gr.WriteString("group_id,successes,eligible\n")
	cu.WriteString("customer_id,segment\n")
	for i := range domain.MaxDataRows {
		sum := sha256.Sum256([]byte(fmt.Sprint("transaction ", i)))
		id := hex.EncodeToString(sum[:]) // 64 characters
		quantity := rng.IntN(200) - 20   // some returns
		price := fmt.Sprintf("%d.%02d", rng.IntN(100_000), rng.IntN(100))
		discount := fmt.Sprintf("0.%02d", rng.IntN(100))
		fmt.Fprintf(&tx, "%s,CUST-%05d,%d,%s,%s\n", id, rng.IntN(domain.MaxDataRows), quantity, price, discount)

		eligible := rng.Int64N(1_000_000_000_000)
		fmt.Fprintf(&gr, "GROUP-%05d,%d,%d\n", i, rng.Int64N(eligible+1), eligible)

		fmt.Fprintf(&cu, "CUST-%05d,segment-%d\n", i, rng.IntN(8))
	}
	files := map[string][]byte{
		domain.TransactionsFile: []byte(tx.String()),
		domain.GroupsFile:       []byte(gr.String()),
		domain.CustomersFile:    []byte(cu.String()),
		domain.DefinitionsFile:  []byte(domain.Contract),
	}
	for name, data := range files {
		if len(data) > domain.MaxSourceBytes {
			panic(fmt.Sprintf("%s: %d bytes, over the limit", name, len(data)))
		}
	}
	return files
})

func totalBytes(files map[string][]byte) int64 {
	var n int64
	for _, data := range files {
		n += int64(len(data))
	}
	return n
}

// TestMaxSourcesAreValid keeps the benchmark inputs honest: they parse and
// compute, at the sizes the benchmarks claim.
func TestMaxSourcesAreValid(t *testing.T) {
	files := maxSources()
	in, err := domain.ParseSources(files)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Transactions) != domain.MaxDataRows || len(in.Groups) != domain.MaxDataRows || len(in.Customers) != domain.MaxDataRows {
		t.Fatalf("rows: %d transactions, %d groups, %d customers", len(in.Transactions), len(in.Groups), len(in.Customers))
	}
	if _, err := domain.Compute(in, "digest"); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkParseTransactions(b *testing.B) {
	data := maxSources()[domain.TransactionsFile]
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := domain.ParseTransactions(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineEncodingCSV reads the same transactions bytes with
// encoding/csv, which checks only the CSV structure.
func BenchmarkBaselineEncodingCSV(b *testing.B) {
	data := maxSources()[domain.TransactionsFile]
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r := csv.NewReader(bytes.NewReader(data))
		r.FieldsPerRecord = 5
		if _, err := r.ReadAll(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseSources(b *testing.B) {
	files := maxSources()
	b.SetBytes(totalBytes(files))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := domain.ParseSources(files); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompute(b *testing.B) {
	in, err := domain.ParseSources(maxSources())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := domain.Compute(in, "digest"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHashSources(b *testing.B) {
	files := maxSources()
	b.SetBytes(totalBytes(files))
	b.ReportAllocs()
	for b.Loop() {
		if d := domain.HashSources(files).Digest(); len(d) != 64 {
			b.Fatal(d)
		}
	}
}

// BenchmarkBaselineSHA256 hashes the same four sources with crypto/sha256
// alone: the floor HashSources cannot go below.
func BenchmarkBaselineSHA256(b *testing.B) {
	files := maxSources()
	b.SetBytes(totalBytes(files))
	b.ReportAllocs()
	for b.Loop() {
		for _, data := range files {
			sum := sha256.Sum256(data)
			if sum[0] == 0 && sum[1] == 0 && sum[2] == 0 && sum[3] == 0 {
				b.Log("improbable")
			}
		}
	}
}
