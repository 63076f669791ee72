package osfs

import (
	"errors"
	"io/fs"
	"os"

	"github.com/metricproof/metricproof/ports"
)

// Windows has no flock(2), and os offers no rename that refuses to
// replace a directory, so the writer lock, the ledger's lock and the
// commit cannot be what protocol §6 and §11 promise. Every operation that
// needs them is refused before it creates or changes anything, with
// ports.ErrPlatform (IO_OR_NUMERIC_ERROR: run on Linux or macOS);
// reading sources and runs needs neither, so inspect_inputs and
// verify_result work.

// The flock operations, never passed to a kernel here.
const (
	lockShared = 1 << iota
	lockExclusive
	lockNoBlock
	lockRelease
)

// errWouldBlock is never returned here: flock always fails with
// ports.ErrPlatform.
var errWouldBlock = errors.New("would block")

// canLock refuses: this platform cannot lock files or commit atomically.
func canLock() error { return ports.ErrPlatform }

// links reports one link: nothing here is ever written through a lock
// file, which canLock refuses first.
func links(fs.FileInfo) uint64 { return 1 }

// lockNoWait refuses, as canLock.
func lockNoWait(*os.File) error { return ports.ErrPlatform }

// flock refuses, as canLock.
func flock(*os.File, int) error { return ports.ErrPlatform }
