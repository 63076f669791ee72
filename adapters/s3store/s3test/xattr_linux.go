package s3test

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// xattrDir is a directory for the server's root on a file system with
// user extended attributes, which versitygw's posix backend keeps its
// metadata in: the temporary directory when it has them (tmpfs on old
// kernels, some overlays do not), else the home directory.
func xattrDir(t testing.TB) string {
	t.Helper()
	for _, dir := range []string{os.TempDir(), os.Getenv("HOME")} {
		if dir != "" && hasXattrs(dir) {
			return dir
		}
	}
	t.Fatalf("neither %s nor the home directory keeps user extended attributes, which versitygw's posix backend needs", os.TempDir())
	return ""
}

func hasXattrs(dir string) bool {
	f, err := os.CreateTemp(dir, "xattr-probe-")
	if err != nil {
		return false
	}
	defer os.Remove(f.Name())
	f.Close()
	return unix.Setxattr(f.Name(), "user.metricproof", []byte("1"), 0) == nil
}
