package osfs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/metricproof/metricproof/adapters/internal/bounded"
	"github.com/metricproof/metricproof/ports"
)

// OpenWriter implements ports.EvidenceStore.
func (w *Workspace) OpenWriter(dir string) (_ ports.EvidenceWriter, err error) {
	defer func() { err = withCause(err) }()
	if err := canLock(); err != nil {
		return nil, err // before anything is created
	}
	out, created, err := w.createOutput(dir)
	if err != nil {
		return nil, err
	}
	ew := &writer{ws: w, dir: dir, out: out, created: created}
	if ew.dirFile, err = out.Open("."); err != nil {
		ew.release()
		return nil, err
	}
	if err := w.stillAt(dir, ew.dirFile); err != nil {
		ew.release()
		return nil, err
	}
	if ew.lock, err = w.openFile(out, ports.LockFile, os.O_RDWR|os.O_CREATE, lockFileMode); err != nil {
		ew.release()
		return nil, classify(err)
	}
	if err := oneName(ew.lock); err != nil {
		ew.release()
		return nil, err
	}
	// Before the lock is tried: a lock file an earlier version made 0644
	// is closed to other accounts' next opens even while one of them
	// holds it (no descriptor already open is revoked).
	if err := w.private(ew.lock); err != nil {
		ew.release()
		return nil, err
	}
	if err := lockNoWait(ew.lock); err != nil {
		ew.release()
		return nil, err
	}
	return ew, nil
}

// errMoved reports an output directory that no longer resolves to itself.
var errMoved = errors.New("the output directory changed while it was being opened")

// stillAt checks that the open directory d is the one at dir, and that dir
// still resolves to itself: no component was swapped for a symlink after
// the write boundary approved it. Everything after this works through d,
// so a later swap cannot redirect the writes.
func (w *Workspace) stillAt(dir string, d *os.File) error {
	loc, err := w.walk(dir)
	if err != nil || loc.Rel != path.Clean(dir) || !loc.Dir {
		return errMoved
	}
	here, err := w.root.Lstat(dir)
	if err != nil {
		return errMoved
	}
	opened, err := d.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(here, opened) {
		return errMoved
	}
	return nil
}

// createOutput opens the output directory dir, creating what is missing
// one component at a time, each inside the open handle of its parent. It
// returns the directory as a root of its own and the directories it
// created, outermost first.
//
// Before it creates anything inside a directory that already existed (the
// next component, or later the lock file), it checks through that
// directory's own handle that it holds no run file: a run committed by
// another call after the write boundary was checked is refused here,
// where it would otherwise gain entries. A directory this call created
// cannot become a run meanwhile, since a commit never replaces; a
// pending directory's name is refused before anything is created.
func (w *Workspace) createOutput(dir string) (*os.Root, []string, error) {
	var created []string
	parent, owned := w.root, (*os.Root)(nil)
	done := func(err error) (*os.Root, []string, error) {
		if owned != nil {
			owned.Close()
		}
		return nil, nil, err
	}
	cur := ""
	for _, part := range split(dir) {
		cur = path.Join(cur, part)
		if strings.HasPrefix(part, ports.PendingPrefix) {
			return done(ports.ErrInsideEvidence)
		}
		err := w.mkdir(parent, part, 0o755)
		made := err == nil
		switch {
		case made:
			created = append(created, cur)
		case errors.Is(err, fs.ErrExist):
			fi, err := parent.Lstat(part)
			switch {
			case err != nil:
				return done(classify(err))
			case fi.Mode()&fs.ModeSymlink != 0:
				return done(errMoved) // dir was resolved: a symlink here is new
			case !fi.IsDir():
				return done(ports.ErrNotDir)
			}
		default:
			return done(classify(err))
		}
		next, err := parent.OpenRoot(part)
		if err != nil {
			return done(classify(err))
		}
		if owned != nil {
			owned.Close()
		}
		parent, owned = next, next
		if !made {
			if err := holdsNoRunFile(next); err != nil {
				return done(err)
			}
		}
	}
	if owned == nil {
		// The workspace itself; the write boundary refuses it first.
		r, err := w.root.OpenRoot(".")
		return r, nil, err
	}
	return owned, created, nil
}

// holdsNoRunFile reports ErrInsideEvidence when the directory d holds any
// of the names a run directory holds.
func holdsNoRunFile(d *os.Root) error {
	for _, name := range ports.RunFileNames() {
		_, err := d.Lstat(name)
		switch {
		case err == nil:
			return ports.ErrInsideEvidence
		case !errors.Is(err, fs.ErrNotExist):
			return classify(err)
		}
	}
	return nil
}

// writer holds the lock on one output directory.
type writer struct {
	ws      *Workspace
	dir     string // the output directory, workspace-relative
	out     *os.Root
	dirFile *os.File // the output directory, for fsync and renameat2
	lock    *os.File
	created []string // directories OpenWriter created, outermost first
	pending string   // name of this writer's pending directory, once staged
}

// Where implements ports.EvidenceWriter.
func (ew *writer) Where(runID, name string) string { return path.Join(ew.dir, runID, name) }

func (ew *writer) Exists(runID string) (_ bool, err error) {
	defer func() { err = withCause(err) }()
	_, err = ew.out.Lstat(runID)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

func (ew *writer) Stage(files []ports.File) (err error) {
	defer func() { err = withCause(err) }()
	if ew.pending != "" {
		return errors.New("already staged")
	}
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return err
	}
	name := ports.PendingPrefix + hex.EncodeToString(nonce[:])
	if err := ew.ws.mkdir(ew.out, name, 0o755); err != nil {
		return err
	}
	ew.pending = name // from here on, Close removes it
	// Every file is created exclusively and written; then the files and
	// the pending directory are fsynced at once, since a journal commits
	// concurrent fsyncs together; all must succeed before Stage does.
	opened := make([]*os.File, 0, len(files)+1)
	defer func() {
		for _, f := range opened {
			if cerr := f.Close(); err == nil && cerr != nil {
				err = cerr
			}
		}
	}()
	for _, file := range files {
		f, err := ew.ws.openFile(ew.out, path.Join(name, file.Name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		opened = append(opened, f)
		if _, err := ew.ws.write(f, file.Data); err != nil {
			return err
		}
	}
	d, err := ew.out.Open(name)
	if err != nil {
		return err
	}
	opened = append(opened, d)
	return ew.syncAll(opened)
}

// syncAll fsyncs every file at once and returns the first error, in the
// files' order.
func (ew *writer) syncAll(files []*os.File) error {
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() {
			// A panic on this goroutine would end the process; make it a
			// failed sync, which abandons the commit.
			defer func() {
				if recover() != nil {
					errs[i] = errors.New("fsync failed unexpectedly")
				}
			}()
			errs[i] = ew.ws.sync(f)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (ew *writer) Commit(runID string) (err error) {
	defer func() { err = withCause(err) }()
	if ew.pending == "" {
		return errors.New("nothing staged")
	}
	if err := noReplace(ew.ws.rename(ew.dirFile, ew.pending, runID)); err != nil {
		return err
	}
	if err := ew.syncAfterCommit(); err != nil {
		// Not durable: take the run back out of sight so that a run that is
		// visible is always one whose commit completed. Close removes it.
		if rerr := noReplace(ew.ws.rename(ew.dirFile, runID, ew.pending)); rerr != nil {
			// The run stands: it is the pending directory no longer, and
			// Close must not look for it. The caller must not say that
			// nothing was committed.
			ew.pending = ""
			return errors.Join(ports.ErrMaybeCommitted, err, rerr)
		}
		return err
	}
	ew.pending = ""
	return nil
}

// syncAfterCommit fsyncs the output directory, then the parent of each
// directory OpenWriter created, innermost first.
func (ew *writer) syncAfterCommit() error {
	if err := ew.ws.sync(ew.dirFile); err != nil {
		return err
	}
	for _, dir := range slices.Backward(ew.created) {
		parent, err := ew.ws.root.Open(path.Dir(dir))
		if err != nil {
			return err
		}
		err = ew.ws.sync(parent)
		parent.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// Close removes this writer's pending directory if it was not committed
// and releases the lock. The lock file, and the directories OpenWriter
// created to hold it, stay: unlinking a lock file that another process may
// already have open would let two writers lock two different files.
func (ew *writer) Close() (err error) {
	defer func() { err = withCause(err) }()
	var errs []error
	if ew.pending != "" {
		errs = append(errs, ew.out.RemoveAll(ew.pending))
		ew.pending = ""
	}
	return errors.Join(append(errs, ew.release())...)
}

// release drops the lock (closing its file releases the flock) and closes
// what the writer opened.
func (ew *writer) release() error {
	var errs []error
	if ew.lock != nil {
		errs = append(errs, ew.lock.Close())
	}
	if ew.dirFile != nil {
		errs = append(errs, ew.dirFile.Close())
	}
	if ew.out != nil {
		errs = append(errs, ew.out.Close())
	}
	ew.lock, ew.dirFile, ew.out = nil, nil, nil
	return errors.Join(errs...)
}

// ReadRun implements ports.EvidenceStore. The run directory is opened once,
// as a root of its own, and checked to be the very directory Lstat saw, so
// a run swapped for a symlink meanwhile is never read through.
func (w *Workspace) ReadRun(dir, runID string, names []string, limitBytes int64) (_ ports.SavedRun, err error) {
	defer func() { err = withCause(err) }()
	runPath := path.Join(dir, runID)
	fi, err := w.root.Lstat(runPath)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return ports.SavedRun{}, nil
	case err != nil:
		return ports.SavedRun{}, classify(err)
	case !fi.IsDir():
		return ports.SavedRun{Exists: true}, nil
	}
	run, err := w.root.OpenRoot(runPath)
	if err != nil {
		return ports.SavedRun{}, classify(err)
	}
	defer run.Close()
	d, err := run.Open(".")
	if err != nil {
		return ports.SavedRun{}, err
	}
	defer d.Close()
	same, err := d.Stat()
	if err != nil {
		return ports.SavedRun{}, err
	}
	if !os.SameFile(fi, same) {
		return ports.SavedRun{Exists: true}, nil // no longer the directory that was there
	}
	saved := ports.SavedRun{Exists: true, Dir: true}
	for _, name := range names {
		sf := ports.SavedFile{Name: name}
		sf.Data, sf.Err = w.readSaved(run, name, limitBytes)
		sf.Err = withCause(sf.Err)
		saved.Files = append(saved.Files, sf)
	}
	saved.Extra, err = hasExtra(d, names)
	return saved, err
}

// readSaved reads one saved file: a regular file, never through a symlink.
func (w *Workspace) readSaved(run *os.Root, name string, limitBytes int64) ([]byte, error) {
	before, err := run.Lstat(name)
	if err != nil {
		return nil, classify(err)
	}
	if !before.Mode().IsRegular() {
		return nil, ports.ErrNotRegular
	}
	f, err := w.openFile(run, name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, classify(err)
	}
	defer f.Close()
	after, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !os.SameFile(before, after) {
		return nil, ports.ErrNotRegular // swapped for something else meanwhile
	}
	return bounded.Read(f, limitBytes, after.Size())
}

// hasExtra reports whether the open run directory d holds an entry not in
// names. It stops at the first such entry, so a huge directory is not
// listed.
func hasExtra(d *os.File, names []string) (bool, error) {
	for {
		entries, err := d.ReadDir(16)
		for _, e := range entries {
			if !slices.Contains(names, e.Name()) {
				return true, nil
			}
		}
		if err == io.EOF || len(entries) == 0 {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// ListRuns implements ports.EvidenceStore. It reads the output directory
// in batches, so a directory of many entries is never held whole as
// directory entries, and looks into each subdirectory without following a
// symlink.
func (w *Workspace) ListRuns(dir string) (_ []ports.ListedRun, err error) {
	defer func() { err = withCause(err) }()
	d, err := w.root.Open(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return nil, nil
	case err != nil:
		return nil, classify(err)
	}
	defer d.Close()
	var runs []ports.ListedRun
	for {
		entries, err := d.ReadDir(256)
		for _, e := range entries {
			if !e.IsDir() { // a symlink to a directory is not one
				continue
			}
			fi, err := w.root.Lstat(path.Join(dir, e.Name(), ports.ResultFile))
			if err == nil && fi.Mode().IsRegular() {
				runs = append(runs, ports.ListedRun{Name: e.Name(), ResultBytes: fi.Size()})
			}
		}
		if err == io.EOF || len(entries) == 0 {
			return runs, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
