package app_test

import (
	"fmt"
	"testing"

	"github.com/metricproof/metricproof/domain"
)

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
	m := newMem(b, files)
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
	m := newMem(b, files)
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
	m := newMem(b, files)
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
	m := newMem(b, files)
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
