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

// renameNoReplace is not implemented off Linux: commits fail closed.
func renameNoReplace(*os.File, string, string) error {
	return ports.ErrNoReplaceUnsupported
}
