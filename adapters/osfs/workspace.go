// Package osfs adapts the real filesystem: the workspace's sources, the
// resolution of operator paths, the cancel marker, and the evidence store
// with its flock(2) writer lock, fsyncs and no-replace rename commit. It
// is what production runs on.
//
// Every access goes through an [os.Root] opened on the workspace, so
// resolution and containment happen in one step, component by component,
// and a symlink can never lead an operation outside the workspace.
//
// The platform's part is in build-tagged files: on Linux the commit is
// renameat2(RENAME_NOREPLACE) and fsync reaches the disk; on macOS it is
// renameatx_np(RENAME_EXCL) and every fsync is fcntl(F_FULLFSYNC); both
// lock with flock(2). Windows has neither flock nor a no-replace rename:
// the evidence writer and the ledger refuse there (ports.ErrPlatform)
// before creating anything, while sources and runs are read as anywhere.
// Other systems lock with flock and fail the commit closed.
package osfs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/metricproof/metricproof/adapters/internal/bounded"
	"github.com/metricproof/metricproof/adapters/internal/marker"
	"github.com/metricproof/metricproof/ports"
)

// maxSymlinkHops bounds how many symlinks one resolution follows, as the
// kernel's ELOOP limit does.
const maxSymlinkHops = 40

// Workspace is the operator's workspace directory.
type Workspace struct {
	root *os.Root
	// real is the workspace's absolute, symlink-free path. It serves only to
	// relate absolute option paths to the workspace, and never leaves this
	// package.
	real string
	// The calls through which osfs opens, creates, writes, flushes,
	// renames, makes the lock files private and cuts a failed record back. Tests replace them to fail with the errno a full disk, a
	// quota, a read-only mount or a denied permission gives: CI runs as
	// root, where chmod denies nothing. Every error they return reaches
	// the app through withCause.
	mkdir    func(dir *os.Root, name string, perm fs.FileMode) error
	openFile func(dir *os.Root, name string, flag int, perm fs.FileMode) (*os.File, error)
	write    func(f *os.File, data []byte) (int, error)
	sync     func(*os.File) error                      // fsync; F_FULLFSYNC on macOS
	rename   func(dir *os.File, from, to string) error // renameat2(RENAME_NOREPLACE), renameatx_np(RENAME_EXCL)
	chmod    func(f *os.File, mode fs.FileMode) error  // fchmod, of the lock files
	truncate func(f *os.File, size int64) error        // ftruncate, of the ledger after a failed append

	// gates queue this process's callers of each ledger's flock, keyed by
	// its workspace-relative path (flock.go); after times their waits'
	// periods (time.After when nil; tests replace it).
	gatesMu sync.Mutex
	gates   map[string]*gate
	after   func(time.Duration) <-chan time.Time
}

var (
	_ ports.SourceReader  = (*Workspace)(nil)
	_ ports.PathResolver  = (*Workspace)(nil)
	_ ports.EvidenceStore = (*Workspace)(nil)
)

// Open opens the workspace directory at path: ports.ErrMissing when nothing
// is there, ports.ErrNotDir when it is not a directory.
func Open(path string) (_ *Workspace, err error) {
	defer func() { err = withCause(err) }()
	if path == "" {
		return nil, ports.ErrMissing
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, ports.ErrMissing
	case err != nil:
		return nil, err
	case !fi.IsDir():
		return nil, ports.ErrNotDir
	}
	// Symlinks first, then absolute: filepath.Abs would clean link/..
	// lexically, which is not the directory the kernel finds.
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	real, err := filepath.Abs(resolved)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, err
	}
	return &Workspace{
		root: root, real: real,
		mkdir:    (*os.Root).Mkdir,
		openFile: (*os.Root).OpenFile,
		write:    (*os.File).Write,
		sync:     syncFile,
		rename:   renameNoReplace,
		chmod:    (*os.File).Chmod,
		truncate: (*os.File).Truncate,
	}, nil
}

// Close releases the workspace.
func (w *Workspace) Close() error {
	return w.root.Close()
}

// ReadSource implements ports.SourceReader.
func (w *Workspace) ReadSource(name string, limitBytes int64) (_ []byte, err error) {
	defer func() { err = withCause(err) }()
	if !filepath.IsLocal(name) {
		return nil, ports.ErrOutside
	}
	// O_NONBLOCK: a FIFO planted at a source's name must not hang the call;
	// it is refused below as not regular.
	f, err := w.openFile(w.root, name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if escapes(err) {
		// os.Root refuses every absolute symlink and every ".." above the
		// root, even one that comes back in. Resolve the path as the kernel
		// would; if it lands inside, open the symlink-free result.
		loc, rerr := w.Resolve(name)
		switch {
		case errors.Is(rerr, ports.ErrNotDir):
			return nil, ports.ErrMissing
		case rerr != nil:
			return nil, rerr
		case !loc.Exists:
			return nil, ports.ErrMissing
		}
		f, err = w.openFile(w.root, loc.Rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	}
	if err != nil {
		return nil, classify(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, ports.ErrNotRegular
	}
	return bounded.Read(f, limitBytes, fi.Size())
}

// classify maps an os.Root error onto the ports' closed set.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return ports.ErrMissing
	case escapes(err):
		return ports.ErrOutside
	case errors.Is(err, syscall.ENXIO):
		// open(2) of a socket, or of a device node without a driver: a
		// file that is not regular, as a FIFO or a device is once open.
		return ports.ErrNotRegular
	}
	return err
}

// escapes reports whether err is os.Root refusing a path that leaves the
// root. The os package does not export that error, so it is recognised by
// its text; the contract tests on a real disk pin the behaviour, so a
// change in a future Go release fails them rather than passing silently.
func escapes(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}

// Resolve implements ports.PathResolver.
func (w *Workspace) Resolve(p string) (_ ports.Location, err error) {
	defer func() { err = withCause(err) }()
	if p == "" {
		return ports.Location{}, ports.ErrMissing
	}
	rel := p
	if filepath.IsAbs(p) {
		r, err := w.relate(p)
		if err != nil {
			return ports.Location{}, err
		}
		rel = r
	}
	return w.walk(rel)
}

// relate turns an absolute path into one relative to the workspace,
// resolving it as the kernel would, over the whole filesystem (the
// operator's own way to the workspace may run through symlinks outside it).
// Containment is judged on the result: ErrOutside when it leaves the
// workspace, whatever lies in the way.
func (w *Workspace) relate(abs string) (string, error) {
	resolved, err := resolveAbs(abs)
	var file *fileInTheWay
	if errors.As(err, &file) {
		// Containment first: a file in the way outside the workspace is
		// outside, as the rest of the path would be.
		if _, ok := w.inside(file.at); !ok {
			return "", ports.ErrOutside
		}
		return "", ports.ErrNotDir
	}
	if err != nil {
		return "", err
	}
	rel, ok := w.inside(resolved)
	if !ok {
		return "", ports.ErrOutside
	}
	return rel, nil
}

// inside relates a resolved absolute path to the workspace: its relative
// form, and whether it lies inside.
func (w *Workspace) inside(resolved string) (string, bool) {
	rel, err := filepath.Rel(w.real, resolved)
	if err != nil || !(rel == "." || filepath.IsLocal(rel)) {
		return "", false
	}
	return rel, true
}

// fileInTheWay is resolveAbs meeting a file where the path goes on: the
// kernel's ENOTDIR, at the resolved path of that file.
type fileInTheWay struct{ at string }

func (e *fileInTheWay) Error() string { return "a file stands where the path goes on" }

// resolveAbs resolves the absolute path p one component at a time from the
// filesystem root: each existing symlink is read and followed, ".." steps
// back from what was resolved so far (never lexically across a link), and
// once a component does not exist the rest is taken as written. A file
// where the path goes on is a *fileInTheWay, as the kernel's ENOTDIR.
func resolveAbs(p string) (string, error) {
	todo := components(p)
	var done []string
	virtual := 0 // trailing components of done that do not exist
	hops := 0
	for len(todo) > 0 {
		part := todo[0]
		todo = todo[1:]
		if part == "." {
			continue // what it asked of the component before it is checked
		}
		if part == ".." {
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			virtual = max(virtual-1, 0)
			continue
		}
		done = append(done, part)
		if virtual > 0 {
			virtual++
			continue
		}
		cur := "/" + path.Join(done...)
		fi, err := os.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			virtual = 1
			continue
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink != 0:
			if hops++; hops > maxSymlinkHops {
				return "", &fs.PathError{Op: "resolve", Path: cur, Err: syscall.ELOOP}
			}
			target, err := os.Readlink(cur)
			if err != nil {
				return "", err
			}
			done = done[:len(done)-1]
			if filepath.IsAbs(target) {
				done = nil
			}
			todo = append(components(target), todo...)
		case !fi.IsDir() && len(todo) > 0:
			// Nothing lies below a file, and the kernel does not step
			// back from one with "..": ENOTDIR, as walk answers.
			return "", &fileInTheWay{at: cur}
		}
	}
	return "/" + path.Join(done...), nil
}

// walk resolves the workspace-relative path rel one component at a time
// inside the root: each symlink that exists is read and followed, ".." steps
// back, and components that do not exist are taken as written. Where the
// path leaves the root (an absolute link, a ".." above the workspace), the
// rest of it goes to relate, which resolves it over the whole filesystem
// and says whether it ends inside.
func (w *Workspace) walk(rel string) (ports.Location, error) {
	todo := components(rel)
	var done []string
	virtual := 0 // how many trailing components of done do not exist
	hops := 0
	for len(todo) > 0 {
		part := todo[0]
		todo = todo[1:]
		if part == "." {
			continue // what it asked of the component before it is checked
		}
		if part == ".." {
			if len(done) == 0 {
				// Above the workspace: only the whole filesystem can tell
				// whether the rest of the path comes back in.
				r, err := w.relate(beneath(filepath.Dir(w.real), todo))
				if err != nil {
					return ports.Location{}, err
				}
				todo, done, virtual = components(r), nil, 0
				continue
			}
			done = done[:len(done)-1]
			virtual = max(virtual-1, 0)
			continue
		}
		if virtual > 0 {
			done = append(done, part)
			virtual++
			continue
		}
		cur := path.Join(append(done, part)...)
		fi, err := w.root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			done = append(done, part)
			virtual = 1
			continue
		}
		if err != nil {
			return ports.Location{}, classify(err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if hops++; hops > maxSymlinkHops {
				return ports.Location{}, &fs.PathError{Op: "resolve", Path: cur, Err: syscall.ELOOP}
			}
			target, err := w.root.Readlink(cur)
			if err != nil {
				return ports.Location{}, classify(err)
			}
			if filepath.IsAbs(target) {
				// The kernel follows an absolute link from the filesystem
				// root and goes on with the rest of the path from there, so
				// containment is judged on where the whole path leads, not
				// on the link's target alone (upabs/ws/runs may come back).
				r, err := w.relate(beneath(target, todo))
				if err != nil {
					return ports.Location{}, err
				}
				todo, done = components(r), nil
				continue
			}
			todo = append(components(target), todo...)
			continue
		}
		if !fi.IsDir() && len(todo) > 0 {
			return ports.Location{}, ports.ErrNotDir
		}
		done = append(done, part)
	}
	loc := ports.Location{Rel: joinRel(done)}
	if virtual > 0 {
		return loc, nil
	}
	fi, err := w.root.Lstat(loc.Rel)
	if err != nil {
		return ports.Location{}, classify(err)
	}
	loc.Exists, loc.Dir, loc.Regular = true, fi.IsDir(), fi.Mode().IsRegular()
	return loc, nil
}

// beneath writes the components still to resolve back as a path below
// dir, without cleaning it: path.Join would drop link/.. lexically, which
// is not where the kernel goes. With none left it is dir as it stands (a
// slash after it would ask it to be a directory).
func beneath(dir string, todo []string) string {
	if len(todo) == 0 {
		return dir
	}
	return dir + "/" + strings.Join(todo, "/")
}

// components splits a path to resolve as the kernel does: a "." or an
// empty component (a trailing or doubled slash) after a name is kept as
// one ".", since it asks that name to be a directory ("file/." and
// "file/" are ENOTDIR), which the resolver checks while more is to come.
func components(p string) []string {
	var parts []string
	for _, s := range strings.Split(filepath.ToSlash(p), "/") {
		switch {
		case s != "" && s != ".":
			parts = append(parts, s)
		case len(parts) > 0 && parts[len(parts)-1] != ".":
			parts = append(parts, ".")
		}
	}
	return parts
}

// split splits a path into its names, without "." or empty components.
func split(p string) []string {
	var parts []string
	for _, s := range strings.Split(filepath.ToSlash(p), "/") {
		if s != "" && s != "." {
			parts = append(parts, s)
		}
	}
	return parts
}

func joinRel(parts []string) string {
	if len(parts) == 0 {
		return "."
	}
	return path.Join(parts...)
}

// Marker returns the cancel marker at the operator's path; an empty path is
// a marker that never appears.
func (w *Workspace) Marker(path string) ports.Canceller {
	return marker.Marker{Paths: w, Path: path}
}
