package osfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/ports"
)

// renameNoReplace renames from to to inside dir with renameat2(2)'s
// RENAME_NOREPLACE: the kernel refuses, atomically, when to exists.
func renameNoReplace(dir *os.File, from, to string) error {
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

// syncFile flushes f to the disk: fsync(2) (os.File.Sync), which on Linux
// reaches the device.
func syncFile(f *os.File) error { return f.Sync() }
