package osfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/ports"
)

// lockNoWait takes an exclusive flock(2) on f without waiting. The kernel
// drops it when the holder exits, however it exits.
func lockNoWait(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ports.ErrBusy
	}
	return err
}

// renameat2 renames from to to inside dir with RENAME_NOREPLACE: the
// kernel refuses, atomically, when to exists.
func renameat2(dir *os.File, from, to string) error {
	fd := int(dir.Fd())
	return unix.Renameat2(fd, from, fd, to, unix.RENAME_NOREPLACE)
}

// noReplace maps renameat2's errors onto the ports: an entry already
// there is ErrExists, and a filesystem that cannot promise not to replace
// is ErrNoReplaceUnsupported, so the commit fails closed.
func noReplace(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOTEMPTY):
		return ports.ErrExists
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return ports.ErrNoReplaceUnsupported
	}
	return err
}
