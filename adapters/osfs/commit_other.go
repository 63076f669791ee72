//go:build !linux && !darwin

package osfs

import (
	"os"

	"github.com/metricproof/metricproof/ports"
)

// renameNoReplace is not implemented here: no rename that refuses to
// replace is known on this platform, so commits fail closed (on Windows
// canLock has refused the writer before).
func renameNoReplace(*os.File, string, string) error {
	return ports.ErrNoReplaceUnsupported
}

// noReplace passes errors through: renameNoReplace already said it all.
func noReplace(err error) error { return err }

// syncFile flushes f with fsync(2) (os.File.Sync).
func syncFile(f *os.File) error { return f.Sync() }
