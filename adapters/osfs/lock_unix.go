//go:build unix

package osfs

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/ports"
)

// The flock(2) operations the locks use.
const (
	lockShared    = unix.LOCK_SH
	lockExclusive = unix.LOCK_EX
	lockNoBlock   = unix.LOCK_NB
	lockRelease   = unix.LOCK_UN
)

// errWouldBlock is flock's answer, under lockNoBlock, for a lock another
// holder has.
var errWouldBlock error = unix.EWOULDBLOCK

// canLock reports whether this platform can take the locks and make the
// commit the evidence store and the ledger promise: it can.
func canLock() error { return nil }

// links returns the number of hard links of the file fi describes.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// lockNoWait takes an exclusive flock(2) on f without waiting. The kernel
// drops it when the holder exits, however it exits.
func lockNoWait(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ports.ErrBusy
	}
	return err
}

// flock calls flock(2) on f's descriptor, which stays open meanwhile
// whatever else closes f, and again when a signal interrupts it.
func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if ferr = unix.Flock(int(fd), how); !errors.Is(ferr, unix.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}
