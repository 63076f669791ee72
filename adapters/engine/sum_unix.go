//go:build unix

package engine

import (
	"crypto/sha256"
	"os"

	"golang.org/x/sys/unix"
)

// window is how much of the file one mapping covers: the hash touches
// every page once, so a mapping's pages are given back as soon as they
// are hashed, and the process's resident size grows by one window, not by
// the executable's size.
const window = 1 << 20

// sumFile hashes f through read-only mappings of its pages, window by
// window. The executable's pages are in the page cache already (it is
// running), so a mapping hashes them where they lie, without the copy a
// read makes into the process's memory (BenchmarkSum). A file that cannot
// be mapped (not a regular file, a file system without mmap) is read.
func sumFile(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if !fi.Mode().IsRegular() || size == 0 || int64(int(size)) != size {
		return sumRead(f)
	}
	h := sha256.New()
	for off := int64(0); off < size; off += window {
		n := min(size-off, window)
		data, err := unix.Mmap(int(f.Fd()), off, int(n), unix.PROT_READ, unix.MAP_SHARED|populate)
		if err != nil {
			if off == 0 {
				return sumRead(f)
			}
			return nil, err
		}
		h.Write(data)
		if err := unix.Munmap(data); err != nil {
			return nil, err
		}
	}
	return h.Sum(nil), nil
}
