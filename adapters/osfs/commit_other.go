//go:build !linux

package osfs

import (
	"os"

	"github.com/metricproof/metricproof/ports"
)

// lockNoWait is not implemented off Linux; the writer refuses to start.
func lockNoWait(*os.File) error {
	return ports.ErrNoReplaceUnsupported
}

// renameat2 is not implemented off Linux: commits fail closed.
func renameat2(*os.File, string, string) error {
	return ports.ErrNoReplaceUnsupported
}

// noReplace passes errors through: renameat2 already said it all.
func noReplace(err error) error { return err }
