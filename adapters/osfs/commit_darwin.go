package osfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/ports"
)

// renameNoReplace renames from to to inside dir with renameatx_np(2)'s
// RENAME_EXCL, macOS's RENAME_NOREPLACE: the kernel refuses, atomically,
// when to exists.
func renameNoReplace(dir *os.File, from, to string) error {
	fd := int(dir.Fd())
	return unix.RenameatxNp(fd, from, fd, to, unix.RENAME_EXCL)
}

// noReplace maps renameatx_np's errors onto the ports: an entry already
// there is ErrExists, and a filesystem that cannot promise not to replace
// (ENOTSUP, EINVAL) is ErrNoReplaceUnsupported, so the commit fails
// closed.
func noReplace(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOTEMPTY):
		return ports.ErrExists
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.ENOTSUP):
		return ports.ErrNoReplaceUnsupported
	}
	return err
}

// syncFile flushes f, a file or a directory, to the disk. On macOS
// fsync(2) only hands the data to the drive, which may keep it in its
// cache; fcntl(F_FULLFSYNC) asks the drive to write it to its medium.
// os.File.Sync does the same since Go 1.12 (golang/go#26650); it is
// written here so that the promise is this package's, not a detail of
// the Go release. A file system that does not support F_FULLFSYNC (ENOTSUP,
// an SMB mount) gets fsync(2), as Go does (golang/go#64215).
func syncFile(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			_, serr = unix.FcntlInt(fd, unix.F_FULLFSYNC, 0)
			if errors.Is(serr, unix.ENOTSUP) {
				serr = unix.Fsync(int(fd))
			}
			if !errors.Is(serr, unix.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fcntl F_FULLFSYNC", Path: f.Name(), Err: serr}
	}
	return nil
}
