package app_test

import (
	"fmt"
	"testing"

	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/internal/testinputs"
)

// Whole-call benchmarks in memory, at each size of
// testinputs.BenchmarkRows (the maximum inputs last), each next to a
// baseline that only reads the four sources through the port and hashes
// them; quote the tools as ratios of it. MB/s is over the source bytes.
// The stages (parse, compute, hash) are benchmarked in ../domain, the
// encoder in encode_internal_test.go; the whole process is internal/tools/bench.
//
//	go test ./app -run '^$' -bench . -benchmem

func sourceBytes(files map[string][]byte) int64 {
	n := 0
	for _, b := range files {
		n += len(b)
	}
	return int64(n)
}

// bySize runs bench at every benchmark size.
func bySize(b *testing.B, bench func(b *testing.B, files map[string][]byte)) {
	for _, rows := range testinputs.BenchmarkRows() {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			files := sourcesAt(b, rows)
			b.SetBytes(sourceBytes(files))
			b.ReportAllocs()
			bench(b, files)
		})
	}
}

// BenchmarkBaselineReadAndHash is the floor of every tool call: read the
// four sources through the port and hash them.
func BenchmarkBaselineReadAndHash(b *testing.B) {
	bySize(b, func(b *testing.B, files map[string][]byte) {
		m := newMem(b, files)
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
	})
}

func BenchmarkInspect(b *testing.B) {
	bySize(b, func(b *testing.B, files map[string][]byte) {
		m := newMem(b, files)
		for b.Loop() {
			if r := m.run(inspect("i1"), "--workspace", wsRoot); r.Exit != 0 {
				b.Fatal(r.Raw)
			}
		}
	})
}

func BenchmarkAnalyze(b *testing.B) {
	bySize(b, func(b *testing.B, files map[string][]byte) {
		m := newMem(b, files)
		digest := m.digest()
		i := 0
		for b.Loop() {
			i++
			if r := m.run(analyzeReq(fmt.Sprintf("r%d", i), digest), "--workspace", wsRoot, "--output-dir", "runs"); r.Exit != 0 {
				b.Fatal(r.Raw)
			}
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	bySize(b, func(b *testing.B, files map[string][]byte) {
		m := newMem(b, files)
		if r := m.run(analyzeReq("r1", m.digest()), "--workspace", wsRoot, "--output-dir", "runs"); r.Exit != 0 {
			b.Fatal(r.Raw)
		}
		for b.Loop() {
			if r := m.run(verifyReq("v1", "r1"), "--workspace", wsRoot, "--output-dir", "runs"); r.Exit != 0 {
				b.Fatal(r.Raw)
			}
		}
	})
}
