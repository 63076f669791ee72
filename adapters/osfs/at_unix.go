//go:build unix

package osfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/ports"
)

// oDirectory is O_DIRECTORY: open only a directory.
const oDirectory = unix.O_DIRECTORY

// openDir opens the workspace-relative directory rel, which was resolved
// to be free of symlinks, one component at a time from the workspace with
// openat(O_DIRECTORY|O_NOFOLLOW): a component swapped for a symlink since
// is ports.ErrMoved, never followed. os.Root would follow a symlink that
// stays inside the workspace, which is exactly the swap the ledger must
// not follow.
func (w *Workspace) openDir(rel string) (*os.File, error) {
	d, err := w.root.Open(".")
	if err != nil {
		return nil, err
	}
	cur := ""
	for _, part := range split(rel) {
		cur = filepath.Join(cur, part)
		next, err := openAt(d, part, os.O_RDONLY|oDirectory, 0, filepath.Join(w.real, cur))
		if err != nil {
			err = notFollowed(d, part, err)
		}
		d.Close()
		if err != nil {
			return nil, err
		}
		d = next
	}
	return d, nil
}

// notFollowed names what openDir met instead of a directory: a symlink
// (ports.ErrMoved), something else (ports.ErrNotDir), nothing
// (ports.ErrMissing).
func notFollowed(d *os.File, name string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ports.ErrMissing
	case !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.ENOTDIR):
		return err
	}
	var st unix.Stat_t
	if serr := unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return ports.ErrMoved
	}
	return ports.ErrNotDir
}

// openAt opens name in the open directory dir with openat(2), never
// following a symlink at name (ELOOP), and calls the file label (its
// path, for the os package's errors, which the app never shows).
func openAt(dir *os.File, name string, flag int, perm fs.FileMode, label string) (*os.File, error) {
	rc, err := dir.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd, oerr := -1, error(nil)
	if err := rc.Control(func(dfd uintptr) {
		for {
			fd, oerr = unix.Openat(int(dfd), name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
			if !errors.Is(oerr, unix.EINTR) {
				return
			}
		}
	}); err != nil {
		return nil, err
	}
	if oerr != nil {
		return nil, &fs.PathError{Op: "openat", Path: label, Err: oerr}
	}
	return os.NewFile(uintptr(fd), label), nil
}
