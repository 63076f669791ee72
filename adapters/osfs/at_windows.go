package osfs

import (
	"io/fs"
	"os"

	"github.com/metricproof/metricproof/ports"
)

// oDirectory is never passed to a kernel here.
const oDirectory = 0

// openDir opens the workspace-relative directory rel. Nothing is ever
// opened in it here: the ledger's every access is refused first
// (canLock).
func (w *Workspace) openDir(rel string) (*os.File, error) { return w.root.Open(rel) }

// openAt refuses, as canLock.
func openAt(*os.File, string, int, fs.FileMode, string) (*os.File, error) {
	return nil, ports.ErrPlatform
}
