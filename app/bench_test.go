package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/metricproof/metricproof/domain"
)

// maxSources are the largest inputs of SPEC §8: 10,000 transactions with
// 64-character IDs, 10,000 customers, 10,000 groups.
func maxSources(tb testing.TB) map[string][]byte {
	var tx, cu, gr strings.Builder
	tx.WriteString("transaction_id,customer_id,quantity,unit_price,discount\n")
	cu.WriteString("customer_id,segment\n")
	gr.WriteString("group_id,successes,eligible\n")
	for i := range domain.MaxDataRows {
		price := fmt.Sprintf("%d.%02d", 1+i%997, i%100)
		if i%97 == 0 {
			price = ""
		}
		fmt.Fprintf(&tx, "T%063d,C%05d,%d,%s,0.%03d\n", i, i%9_900, i%13-6, price, i%1000)
		fmt.Fprintf(&cu, "C%05d,s%d\n", i%9_900, i%7)
		fmt.Fprintf(&gr, "G%05d,%d,%d\n", i, i%50, 50+i%11)
	}
	files := shippedFixture(tb)
	files[domain.TransactionsFile] = []byte(tx.String())
	files[domain.CustomersFile] = []byte(cu.String())
	files[domain.GroupsFile] = []byte(gr.String())
	return files
}

func sourceBytes(files map[string][]byte) int64 {
	n := 0
	for _, b := range files {
		n += len(b)
	}
	return int64(n)
}

// BenchmarkBaselineReadAndHash is the floor of every tool call: read the
// four sources through the port and hash them. Quote the others as ratios
// of it.
func BenchmarkBaselineReadAndHash(b *testing.B) {
	files := maxSources(b)
	m := newMem(&testing.T{}, files)
	b.SetBytes(sourceBytes(files))
	b.ReportAllocs()
	for b.Loop() {
		read := map[string][]byte{}
		for _, name := range domain.SourceNames() {
			data, err := m.ws.ReadSource(name, domain.MaxSourceBytes)
			if err != nil {
				b.Fatal(err)
			}
			read[name] = data
		}
		_ = domain.HashSources(read).Digest()
	}
}

func BenchmarkInspectMax(b *testing.B) {
	files := maxSources(b)
	m := newMem(&testing.T{}, files)
	b.SetBytes(sourceBytes(files))
	b.ReportAllocs()
	for b.Loop() {
		if r := m.run(inspect("i1"), "--workspace", wsRoot); r.Exit != 0 {
			b.Fatal(r.Raw)
		}
	}
}

func BenchmarkAnalyzeMax(b *testing.B) {
	files := maxSources(b)
	m := newMem(&testing.T{}, files)
	digest := m.digest()
	b.SetBytes(sourceBytes(files))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if r := m.run(analyzeReq(fmt.Sprintf("r%d", i), digest), "--workspace", wsRoot, "--output-dir", "runs"); r.Exit != 0 {
			b.Fatal(r.Raw)
		}
	}
}

func BenchmarkVerifyMax(b *testing.B) {
	files := maxSources(b)
	m := newMem(&testing.T{}, files)
	if r := m.run(analyzeReq("r1", m.digest()), "--workspace", wsRoot, "--output-dir", "runs"); r.Exit != 0 {
		b.Fatal(r.Raw)
	}
	b.SetBytes(sourceBytes(files))
	b.ReportAllocs()
	for b.Loop() {
		if r := m.run(verifyReq("v1", "r1"), "--workspace", wsRoot, "--output-dir", "runs"); r.Exit != 0 {
			b.Fatal(r.Raw)
		}
	}
}
