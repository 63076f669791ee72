package s3store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// AttemptPrefix starts the name of the key prefix under which one analyze
// stages its files. Like a pending directory's, the leading '.' keeps it
// out of the run ID grammar.
const AttemptPrefix = ".attempt-"

// commitFormat names the commit object's layout, so that a reader of the
// bucket knows what it holds and a later layout can be told apart.
const commitFormat = "metricproof.commit/1"

// maxCommitBytes bounds how much of a commit object is read: a real one is
// a few hundred bytes.
const maxCommitBytes = 64 << 10

// listConcurrency is how many commit objects ListRuns reads at once.
const listConcurrency = 8

// commit is a run's commit object: the run ID, and the attempt whose files
// are the run, each with its size.
type commit struct {
	Format  string `json:"format"`
	RunID   string `json:"run_id"`
	Attempt string `json:"attempt"`
	Files   []file `json:"files"`
}

type file struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// parseCommit reads a commit object strictly: its format, the run ID its
// key names, an attempt name this package makes, and distinct plain file
// names. Anything else is not a commit.
func parseCommit(data []byte, runID string) (commit, bool) {
	var c commit
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if dec.Decode(&c) != nil || dec.More() || c.Format != commitFormat || c.RunID != runID || !validAttempt(c.Attempt) {
		return commit{}, false
	}
	seen := map[string]bool{}
	for _, f := range c.Files {
		if !validName(f.Name) || seen[f.Name] || f.Bytes < 0 {
			return commit{}, false
		}
		seen[f.Name] = true
	}
	return c, true
}

// validAttempt: 24 lowercase hex digits, as Stage makes them.
func validAttempt(a string) bool {
	if len(a) != 24 {
		return false
	}
	_, err := hex.DecodeString(a)
	return err == nil && strings.ToLower(a) == a
}

// readCommit reads the commit object of runID in the output directory
// whose key prefix is dir: ports.ErrMissing when there is none, and
// ok false when what is there is not a commit.
func (s *Store) readCommit(ctx context.Context, dir, runID string) (c commit, ok bool, err error) {
	data, err := s.get(ctx, dir+runID, maxCommitBytes, false)
	switch {
	case errors.Is(err, ports.ErrTooLarge):
		return commit{}, false, nil
	case err != nil:
		return commit{}, false, err
	}
	c, ok = parseCommit(data, runID)
	return c, ok, nil
}

// OpenWriter implements ports.EvidenceStore. It takes no lock and makes
// no request: two writers of one output directory, on one server or
// many, are kept apart by the commit's conditional write alone, so
// ErrBusy never happens. Nothing is created: a key prefix needs no
// directory. A dir that runs through an attempt's or a pending
// directory's name is ErrInsideEvidence.
func (s *Store) OpenWriter(dir string) (ports.EvidenceWriter, error) {
	key, err := s.dirKey(dir)
	if err != nil {
		return nil, err
	}
	for part := range strings.SplitSeq(strings.TrimSuffix(key, "/"), "/") {
		if strings.HasPrefix(part, AttemptPrefix) || strings.HasPrefix(part, ports.PendingPrefix) {
			return nil, ports.ErrInsideEvidence
		}
	}
	return &writer{s: s, dir: key}, nil
}

// writer is one analyze's use of an output directory.
type writer struct {
	s         *Store
	dir       string // key prefix of the output directory
	attempt   string // set once Stage has written every file
	files     []file
	committed bool
}

// Exists implements ports.EvidenceWriter: whether runID has a commit
// object, or anything else that takes its key.
func (w *writer) Exists(runID string) (bool, error) {
	if !validName(runID) {
		return false, ports.ErrOutside
	}
	_, err := w.s.get(context.Background(), w.dir+runID, maxCommitBytes, false)
	switch {
	case err == nil, errors.Is(err, ports.ErrTooLarge):
		return true, nil
	case errors.Is(err, ports.ErrMissing):
		return false, nil
	}
	return false, err
}

// Stage implements ports.EvidenceWriter: each file is created under a key
// prefix unique to this attempt, all at once. A failure leaves whatever
// was written: no commit will ever name it.
func (w *writer) Stage(files []ports.File) error {
	if w.attempt != "" {
		return errors.New("already staged")
	}
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return err
	}
	attempt := hex.EncodeToString(nonce[:])
	staged := make([]file, len(files))
	for i, f := range files {
		if !validName(f.Name) || slices.ContainsFunc(files[:i], func(g ports.File) bool { return g.Name == f.Name }) {
			return errors.New("a staged file's name is not one plain, distinct name")
		}
		staged[i] = file{Name: f.Name, Bytes: int64(len(f.Data))}
	}
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() {
			errs[i] = w.s.create(context.Background(), w.dir+AttemptPrefix+attempt+"/"+f.Name, f.Data)
		})
	}
	wg.Wait()
	// The first failure, alone: the others are most often the same one,
	// and a joined error's text runs over several lines.
	if i := slices.IndexFunc(errs, func(err error) bool { return err != nil }); i >= 0 {
		err := errs[i]
		if errors.Is(err, ports.ErrExists) {
			// A key unique to this attempt cannot be taken: the store
			// answered as no store may, and the run ID is not in question.
			return errors.New("the store refused to create a file of this attempt as if it existed (its key is new): it does not keep conditional writes as S3 does")
		}
		return err
	}
	// Before anything can commit: a store that overwrites is no store for
	// evidence.
	if len(files) > 0 {
		if err := w.s.keepsCondition(context.Background(), w.dir+AttemptPrefix+attempt+"/"+files[0].Name, files[0].Data); err != nil {
			return err
		}
	}
	w.attempt, w.files = attempt, staged
	return nil
}

// Commit implements ports.EvidenceWriter: one conditional write of the
// run's commit object. ErrExists when anything holds the run's key. An
// error that is ports.ErrOutcomeUnknown is ports.ErrMaybeCommitted too:
// the run may be committed, and a read of it tells.
func (w *writer) Commit(runID string) error {
	switch {
	case w.attempt == "":
		return errors.New("nothing staged")
	case w.committed:
		return errors.New("already committed")
	case !validName(runID):
		return ports.ErrOutside
	}
	data, err := json.Marshal(commit{Format: commitFormat, RunID: runID, Attempt: w.attempt, Files: w.files})
	if err != nil {
		return err
	}
	if err := w.s.create(context.Background(), w.dir+runID, append(data, '\n')); err != nil {
		if errors.Is(err, ports.ErrOutcomeUnknown) {
			// The app's word for a run that may stand: verify it.
			return fmt.Errorf("%w: %w", ports.ErrMaybeCommitted, err)
		}
		return err
	}
	w.committed = true
	return nil
}

// Where implements ports.EvidenceWriter: the URL of the object that
// holds the file name of the committed run, in the attempt its commit
// names (s3://BUCKET/PREFIX/O/.attempt-N/name); a run's files never lie
// under its own name.
func (w *writer) Where(_, name string) string {
	return "s3://" + w.s.bucket + "/" + w.dir + AttemptPrefix + w.attempt + "/" + name
}

// Close implements ports.EvidenceWriter. It removes nothing: the program
// never deletes, and an attempt no commit names is never read.
func (w *writer) Close() error { return nil }

// ReadRun implements ports.EvidenceStore. The run is its commit object:
// none is Exists false; one that is not a commit (damaged, another run's,
// not this package's) is Exists without Dir. Each requested file is read
// from the attempt the commit names, all at once; a name the commit does
// not list is ErrMissing, and Extra reports names it lists that were not
// asked for. The store being unreachable is an error, never a verdict.
func (s *Store) ReadRun(dir, runID string, names []string, limitBytes int64) (ports.SavedRun, error) {
	key, err := s.dirKey(dir)
	if err != nil {
		return ports.SavedRun{}, err
	}
	if !validName(runID) {
		return ports.SavedRun{}, ports.ErrOutside
	}
	ctx := context.Background()
	c, ok, err := s.readCommit(ctx, key, runID)
	switch {
	case errors.Is(err, ports.ErrMissing):
		return ports.SavedRun{}, nil
	case err != nil:
		return ports.SavedRun{}, err
	case !ok:
		return ports.SavedRun{Exists: true}, nil
	}
	saved := ports.SavedRun{Exists: true, Dir: true, Files: make([]ports.SavedFile, len(names))}
	var wg sync.WaitGroup
	for i, name := range names {
		saved.Files[i].Name = name
		if !slices.ContainsFunc(c.Files, func(f file) bool { return f.Name == name }) {
			saved.Files[i].Err = ports.ErrMissing
			continue
		}
		wg.Go(func() {
			saved.Files[i].Data, saved.Files[i].Err = s.get(ctx, key+AttemptPrefix+c.Attempt+"/"+name, limitBytes, false)
		})
	}
	wg.Wait()
	for _, f := range c.Files {
		saved.Extra = saved.Extra || !slices.Contains(names, f.Name)
	}
	return saved, nil
}

// ListRuns implements ports.EvidenceStore: the objects directly in dir
// whose names a run ID can take and that are commits listing a result
// file, each with that file's size from its commit. Every commit is read
// (at most listConcurrency at once) the first time this Store lists it,
// and remembered: a commit never changes.
func (s *Store) ListRuns(dir string) ([]ports.ListedRun, error) {
	key, err := s.dirKey(dir)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	var names []string
	err = s.list(ctx, key, "", 1000, func(name string, size int64) bool {
		// Only a name a run ID can take may be a run: the others (a
		// ledger's records kept here, notes) are never read, else each
		// listing would read them all again.
		if size <= maxCommitBytes && domain.ValidID(name) {
			names = append(names, name)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	runs := make([]*ports.ListedRun, len(names))
	errs := make([]error, len(names))
	turns := make(chan struct{}, listConcurrency)
	var wg sync.WaitGroup
	for i, name := range names {
		s.mu.Lock()
		run, seen := s.runs[key+name]
		s.mu.Unlock()
		if seen {
			runs[i] = &run
			continue
		}
		wg.Go(func() {
			turns <- struct{}{}
			defer func() { <-turns }()
			runs[i], errs[i] = s.listed(ctx, key, name)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []ports.ListedRun
	for _, r := range runs {
		if r != nil {
			out = append(out, *r)
		}
	}
	return out, nil
}

// listed reads the commit object name in dir: its run, or nil when it is
// not a commit listing a result file.
func (s *Store) listed(ctx context.Context, dir, name string) (*ports.ListedRun, error) {
	c, ok, err := s.readCommit(ctx, dir, name)
	switch {
	case errors.Is(err, ports.ErrMissing):
		return nil, nil
	case err != nil || !ok:
		return nil, err
	}
	i := slices.IndexFunc(c.Files, func(f file) bool { return f.Name == ports.ResultFile })
	if i < 0 {
		return nil, nil
	}
	run := ports.ListedRun{Name: name, ResultBytes: c.Files[i].Bytes}
	s.mu.Lock()
	s.runs[dir+name] = run
	s.mu.Unlock()
	return &run, nil
}
