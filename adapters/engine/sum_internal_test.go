package engine

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

// The mapped hash is the hash of the bytes, at every size around a
// window's edge.
func TestSumFileIsTheSHA256OfTheBytes(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, mib - 1, mib, mib + 1, 3*mib + 5} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			is := is.New(t)
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(i*7 + i/mib) // each MiB window's bytes differ
			}
			p := filepath.Join(dir, fmt.Sprint(size))
			is.NoErr(os.WriteFile(p, data, 0o600))
			want := sha256.Sum256(data)
			got, err := SumFile(p)
			is.NoErr(err)
			is.Equal(got, want[:])
			f, err := os.Open(p)
			is.NoErr(err)
			defer f.Close()
			read, err := sumRead(f)
			is.NoErr(err)
			is.Equal(read, want[:]) // the fallback agrees
		})
	}
}

func TestSumFileOfAMissingFileFails(t *testing.T) {
	is := is.New(t)
	_, err := SumFile(filepath.Join(t.TempDir(), "nope"))
	is.True(err != nil)
}

// mib is the size of a mapping window (window, of the unix files).
const mib = 1 << 20

// BenchmarkSum hashes this test binary (its pages in the page cache, as a
// running engine's are) the old way, with reads, and through mappings.
func BenchmarkSum(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(exe)
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range []struct {
		name string
		sum  func(*os.File) ([]byte, error)
	}{{"read", sumRead}, {"mmap", sumFile}} {
		b.Run(m.name, func(b *testing.B) {
			b.SetBytes(fi.Size())
			for b.Loop() {
				f, err := os.Open(exe)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := m.sum(f); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
}
