package s3store_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/metricproof/metricproof/adapters/osfs"
	"github.com/metricproof/metricproof/adapters/s3store"
	"github.com/metricproof/metricproof/adapters/s3store/s3test"
	"github.com/metricproof/metricproof/ports"
)

// benchFiles are a run's files of about the sizes analyze writes for the
// shipped fixture.
func benchFiles() []ports.File {
	return []ports.File{
		{Name: ports.ResultFile, Data: []byte(`{"r":"` + strings.Repeat("x", 1500) + "\"}\n")},
		{Name: ports.ReceiptFile, Data: []byte(`{"r":"` + strings.Repeat("y", 900) + "\"}\n")},
		{Name: ports.ChecksumsFile, Data: []byte(`{"r":"` + strings.Repeat("z", 150) + "\"}\n")},
	}
}

// benchStores are the stores compared: the local disk (osfs, in a
// temporary directory) and versitygw on loopback (its posix backend on
// the same disk), so the difference is the S3 round trips.
func benchStores(b *testing.B) map[string]ports.EvidenceStore {
	ws, err := osfs.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	srv := s3test.Start(b, s3test.Options{})
	srv.Bucket(b, "bench", 0)
	srv.RootEnv(b)
	store, err := s3store.Open(b.Context(), "s3://bench/runs")
	if err != nil {
		b.Fatal(err)
	}
	return map[string]ports.EvidenceStore{"osfs": ws, "s3store": store}
}

// BenchmarkStageAndCommit is analyze's write: open the output directory,
// check the run ID, stage three files, commit.
func BenchmarkStageAndCommit(b *testing.B) {
	stores := benchStores(b)
	n := 0 // run IDs unique across the benchmark's rounds
	for _, name := range []string{"osfs", "s3store"} {
		store := stores[name]
		b.Run(name, func(b *testing.B) {
			for range b.N {
				n++
				runID := fmt.Sprintf("b%d", n)
				w, err := store.OpenWriter("out")
				if err != nil {
					b.Fatal(err)
				}
				if exists, err := w.Exists(runID); err != nil || exists {
					b.Fatal(exists, err)
				}
				if err := w.Stage(benchFiles()); err != nil {
					b.Fatal(err)
				}
				if err := w.Commit(runID); err != nil {
					b.Fatal(err)
				}
				w.Close()
			}
		})
	}
}

// BenchmarkReadRun is verify's read of a committed run.
func BenchmarkReadRun(b *testing.B) {
	names := []string{ports.ResultFile, ports.ReceiptFile, ports.ChecksumsFile, ports.AttestationFile}
	stores := benchStores(b)
	for _, name := range []string{"osfs", "s3store"} {
		store := stores[name]
		w, err := store.OpenWriter("out")
		if err != nil {
			b.Fatal(err)
		}
		if err := w.Stage(benchFiles()); err != nil {
			b.Fatal(err)
		}
		if err := w.Commit("r1"); err != nil {
			b.Fatal(err)
		}
		w.Close()
		b.Run(name, func(b *testing.B) {
			for range b.N {
				run, err := store.ReadRun("out", "r1", names, 4<<20)
				if err != nil || !run.Dir {
					b.Fatal(run, err)
				}
			}
		})
	}
}
