package domain_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"fmt"
	"testing"

	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/internal/testinputs"
)

// Benchmarks at the limits of protocol §8: the maximum inputs described in
// testdata/max-sources.json (10,000 transactions with 64-character IDs
// within 1 MiB, 10,000 groups and 10,000 customers), which app and
// cmd/tool-runner generate too. The Baseline
// benchmarks measure the standard library on the same bytes in the same run,
// so the figures can be quoted as ratios:
//
//	go test ./domain -run '^$' -bench . -count 5

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
	files := maxSources(t)
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

// bySize runs bench at every benchmark size, MB/s over the bytes that
// size's sources hold.
func bySize(b *testing.B, bench func(b *testing.B, files map[string][]byte)) {
	for _, rows := range testinputs.BenchmarkRows() {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			files := sourcesAt(b, rows)
			b.SetBytes(totalBytes(files))
			b.ReportAllocs()
			bench(b, files)
		})
	}
}

func BenchmarkParseTransactions(b *testing.B) {
	bySize(b, func(b *testing.B, files map[string][]byte) {
		data := files[domain.TransactionsFile]
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := domain.ParseTransactions(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBaselineEncodingCSV reads the same transactions bytes with
// encoding/csv, which checks only the CSV structure.
func BenchmarkBaselineEncodingCSV(b *testing.B) {
	bySize(b, func(b *testing.B, files map[string][]byte) {
		data := files[domain.TransactionsFile]
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			r := csv.NewReader(bytes.NewReader(data))
			r.FieldsPerRecord = 5
			if _, err := r.ReadAll(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParse is the parse stage: the four sources validated.
func BenchmarkParse(b *testing.B) {
	bySize(b, func(b *testing.B, files map[string][]byte) {
		for b.Loop() {
			if _, err := domain.ParseSources(files); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCompute is the compute stage: the synthetic-v1 calculation over
// parsed records.
func BenchmarkCompute(b *testing.B) {
	bySize(b, func(b *testing.B, files map[string][]byte) {
		in, err := domain.ParseSources(files)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := domain.Compute(in, "digest"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkHash is the hash stage: the four sources' SHA256 and their
// combined digest.
func BenchmarkHash(b *testing.B) {
	bySize(b, func(b *testing.B, files map[string][]byte) {
		for b.Loop() {
			if d := domain.HashSources(files).Digest(); len(d) != 64 {
				b.Fatal(d)
			}
		}
	})
}

// BenchmarkBaselineSHA256 hashes the same four sources with crypto/sha256
// alone: the floor the hash stage cannot go below, and the baseline of the
// others.
func BenchmarkBaselineSHA256(b *testing.B) {
	bySize(b, func(b *testing.B, files map[string][]byte) {
		for b.Loop() {
			for _, data := range files {
				sum := sha256.Sum256(data)
				if sum[0] == 0 && sum[1] == 0 && sum[2] == 0 && sum[3] == 0 {
					b.Log("improbable")
				}
			}
		}
	})
}
