//go:build !linux

package s3test

import (
	"os"
	"testing"
)

// xattrDir is the temporary directory: off Linux the tests take it as it
// is, and versitygw says so if it cannot keep its metadata there.
func xattrDir(testing.TB) string { return os.TempDir() }
