//go:build !unix

package engine

import "os"

// sumFile hashes f with plain reads: this platform has no mmap in
// golang.org/x/sys/unix.
func sumFile(f *os.File) ([]byte, error) { return sumRead(f) }
