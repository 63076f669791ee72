// Package memfs adapts an afero filesystem, in practice afero.MemMapFs, to
// the same ports as osfs, so application tests run deterministically in
// memory.
//
// It keeps every promise of the ports that a filesystem without symlinks
// can keep: exact bytes, limits enforced while reading, containment (paths
// are resolved lexically, and ".." past the workspace is refused), the
// writer lock (held in this value, so it excludes writers sharing it), no
// replacing commits, and removal of an uncommitted pending directory. It does not
// follow symlinks or fsync anything; use osfs for the real disk.
package memfs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/adapters/internal/bounded"
	"github.com/metricproof/metricproof/adapters/internal/marker"
	"github.com/metricproof/metricproof/ports"
)

// Workspace is a workspace directory inside an afero filesystem.
type Workspace struct {
	fs   afero.Fs
	root string // clean absolute slash path of the workspace in fs

	mu       sync.Mutex
	locked   map[string]bool                      // output directories whose lock is held
	turns    map[string]chan struct{}             // each ledger's lock: a slot its holder fills
	appended map[string]int                       // each ledger's appends so far, failed ones too: what a wait looks at
	staging  int                                  // counter that makes pending names unique
	after    func(time.Duration) <-chan time.Time // times a ledger wait's periods (time.After when nil; tests replace it)
}

var (
	_ ports.SourceReader  = (*Workspace)(nil)
	_ ports.PathResolver  = (*Workspace)(nil)
	_ ports.EvidenceStore = (*Workspace)(nil)
)

// New opens the workspace at the absolute path root of fsys:
// ports.ErrMissing when nothing is there, ports.ErrNotDir when it is not a
// directory.
func New(fsys afero.Fs, root string) (*Workspace, error) {
	root = path.Clean("/" + root)
	fi, err := fsys.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, ports.ErrMissing
	case err != nil:
		return nil, err
	case !fi.IsDir():
		return nil, ports.ErrNotDir
	}
	return &Workspace{fs: fsys, root: root, locked: map[string]bool{}, turns: map[string]chan struct{}{}, appended: map[string]int{}}, nil
}

func (w *Workspace) abs(rel string) string {
	return path.Join(w.root, rel)
}

// ReadSource implements ports.SourceReader.
func (w *Workspace) ReadSource(name string, limitBytes int64) ([]byte, error) {
	if !filepath.IsLocal(name) {
		return nil, ports.ErrOutside
	}
	return w.readRegular(path.Clean(name), limitBytes)
}

func (w *Workspace) readRegular(rel string, limitBytes int64) ([]byte, error) {
	fi, err := w.fs.Stat(w.abs(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ports.ErrMissing
	}
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, ports.ErrNotRegular
	}
	f, err := w.fs.Open(w.abs(rel))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return bounded.Read(f, limitBytes, fi.Size())
}

// Resolve implements ports.PathResolver, lexically: there are no symlinks.
func (w *Workspace) Resolve(p string) (ports.Location, error) {
	if p == "" {
		return ports.Location{}, ports.ErrMissing
	}
	abs := p
	if !strings.HasPrefix(p, "/") {
		abs = w.root + "/" + p
	}
	// Without symlinks, cleaning is exact for where the path ends: ".." may
	// climb out and come back. What it drops, a file with more after it,
	// fileInTheWay checks.
	rootParts, all := split(w.root), split(path.Clean(abs))
	if len(all) < len(rootParts) || !slices.Equal(all[:len(rootParts)], rootParts) {
		return ports.Location{}, ports.ErrOutside
	}
	parts := all[len(rootParts):]
	rel := "."
	if len(parts) > 0 {
		rel = path.Join(parts...)
	}
	if err := w.fileInTheWay(abs); err != nil {
		return ports.Location{}, err
	}
	fi, err := w.fs.Stat(w.abs(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return ports.Location{Rel: rel}, nil
	}
	if err != nil {
		return ports.Location{}, err
	}
	return ports.Location{Rel: rel, Exists: true, Dir: fi.IsDir(), Regular: fi.Mode().IsRegular()}, nil
}

// fileInTheWay walks abs as written, as the kernel does, and answers
// ports.ErrNotDir where a file has anything after it: a name, "..", "."
// or a trailing slash (cleaning would drop the last three). Past a name
// that does not exist the rest is taken as written.
func (w *Workspace) fileInTheWay(abs string) error {
	cur := ""
	for i, s := range strings.Split(abs, "/") {
		if i > 0 && cur != "" {
			fi, err := w.fs.Stat(cur)
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				return err
			case !fi.IsDir():
				return ports.ErrNotDir
			}
		}
		switch s {
		case "", ".":
		case "..":
			cur = path.Dir(cur)
		default:
			cur = path.Join("/", cur, s)
		}
	}
	return nil
}

func split(p string) []string {
	var parts []string
	for _, s := range strings.Split(p, "/") {
		if s != "" && s != "." {
			parts = append(parts, s)
		}
	}
	return parts
}

// Marker returns the cancel marker at the operator's path; an empty path is
// a marker that never appears.
func (w *Workspace) Marker(path string) ports.Canceller {
	return marker.Marker{Paths: w, Path: path}
}

// OpenWriter implements ports.EvidenceStore.
func (w *Workspace) OpenWriter(dir string) (ports.EvidenceWriter, error) {
	// One lock over the whole creation: writers of this value cannot
	// interleave, so checking a component and creating inside it is one
	// step, as osfs makes it one through the component's open handle.
	w.mu.Lock()
	defer w.mu.Unlock()
	cur := ""
	for _, part := range split(dir) {
		cur = path.Join(cur, part)
		if strings.HasPrefix(part, ports.PendingPrefix) {
			return nil, ports.ErrInsideEvidence
		}
		fi, err := w.fs.Stat(w.abs(cur))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := w.fs.Mkdir(w.abs(cur), 0o755); err != nil {
				return nil, err
			}
		case err != nil:
			return nil, err
		case !fi.IsDir():
			return nil, ports.ErrNotDir
		default:
			if err := w.holdsNoRunFile(cur); err != nil {
				return nil, err
			}
		}
	}
	if w.locked[dir] {
		return nil, ports.ErrBusy
	}
	lock, err := w.fs.OpenFile(w.abs(path.Join(dir, ports.LockFile)), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lock.Close(); err != nil {
		return nil, err
	}
	if err := w.private(w.abs(path.Join(dir, ports.LockFile))); err != nil {
		return nil, err
	}
	w.locked[dir] = true
	return &writer{ws: w, dir: dir}, nil
}

// holdsNoRunFile reports ErrInsideEvidence when the workspace-relative
// directory rel holds any of the names a run directory holds.
func (w *Workspace) holdsNoRunFile(rel string) error {
	for _, name := range ports.RunFileNames() {
		_, err := w.fs.Stat(w.abs(path.Join(rel, name)))
		switch {
		case err == nil:
			return ports.ErrInsideEvidence
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
	}
	return nil
}

type writer struct {
	ws      *Workspace
	dir     string
	pending string
	closed  bool
}

func (ew *writer) path(name string) string {
	return ew.ws.abs(path.Join(ew.dir, name))
}

// Where implements ports.EvidenceWriter.
func (ew *writer) Where(runID, name string) string { return path.Join(ew.dir, runID, name) }

func (ew *writer) Exists(runID string) (bool, error) {
	_, err := ew.ws.fs.Stat(ew.path(runID))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (ew *writer) Stage(files []ports.File) error {
	if ew.pending != "" {
		return errors.New("already staged")
	}
	ew.ws.mu.Lock()
	ew.ws.staging++
	name := ports.PendingPrefix + strconv.Itoa(ew.ws.staging)
	ew.ws.mu.Unlock()
	if err := ew.ws.fs.Mkdir(ew.path(name), 0o755); err != nil {
		return err
	}
	ew.pending = name
	for _, f := range files {
		if err := ew.writeFile(path.Join(name, f.Name), f.Data); err != nil {
			return err
		}
	}
	return nil
}

func (ew *writer) writeFile(name string, data []byte) error {
	f, err := ew.ws.fs.OpenFile(ew.path(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (ew *writer) Commit(runID string) error {
	if ew.pending == "" {
		return errors.New("nothing staged")
	}
	// The lock excludes other writers of this value, so checking and then
	// renaming cannot race with another commit.
	exists, err := ew.Exists(runID)
	switch {
	case err != nil:
		return err
	case exists:
		return ports.ErrExists
	}
	if err := ew.ws.fs.Rename(ew.path(ew.pending), ew.path(runID)); err != nil {
		return err
	}
	ew.pending = ""
	return nil
}

func (ew *writer) Close() error {
	if ew.closed {
		return nil
	}
	ew.closed = true
	var errs []error
	if ew.pending != "" {
		errs = append(errs, ew.ws.fs.RemoveAll(ew.path(ew.pending)))
		ew.pending = ""
	}
	ew.ws.mu.Lock()
	delete(ew.ws.locked, ew.dir)
	ew.ws.mu.Unlock()
	return errors.Join(errs...)
}

// ReadRun implements ports.EvidenceStore.
func (w *Workspace) ReadRun(dir, runID string, names []string, limitBytes int64) (ports.SavedRun, error) {
	runRel := path.Join(dir, runID)
	fi, err := w.fs.Stat(w.abs(runRel))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ports.SavedRun{}, nil
	case err != nil:
		return ports.SavedRun{}, err
	case !fi.IsDir():
		return ports.SavedRun{Exists: true}, nil
	}
	run := ports.SavedRun{Exists: true, Dir: true}
	for _, name := range names {
		sf := ports.SavedFile{Name: name}
		sf.Data, sf.Err = w.readRegular(path.Join(runRel, name), limitBytes)
		run.Files = append(run.Files, sf)
	}
	entries, err := afero.ReadDir(w.fs, w.abs(runRel))
	if err != nil {
		return ports.SavedRun{}, err
	}
	for _, e := range entries {
		if !slices.Contains(names, e.Name()) {
			run.Extra = true
		}
	}
	return run, nil
}

// ListRuns implements ports.EvidenceStore.
func (w *Workspace) ListRuns(dir string) ([]ports.ListedRun, error) {
	entries, err := afero.ReadDir(w.fs, w.abs(dir))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	}
	var runs []ports.ListedRun
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		fi, err := w.fs.Stat(w.abs(path.Join(dir, e.Name(), ports.ResultFile)))
		if err == nil && fi.Mode().IsRegular() {
			runs = append(runs, ports.ListedRun{Name: e.Name(), ResultBytes: fi.Size()})
		}
	}
	return runs, nil
}
