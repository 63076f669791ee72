// Package porttest holds the contract test suites that every adapter of a
// port must pass, and fixed fakes of the clock and engine ports.
//
// Each suite takes a Factory that builds a fresh workspace with given
// contents on the adapter under test. osfs runs the suites on a real disk
// in t.TempDir(), memfs on afero.MemMapFs; running one suite against both
// keeps the forgiving in-memory fake honest. Symlink cases exist only on a
// real disk and live in osfs's own tests.
package porttest

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/ports"
)

// Subject is one adapter over a fresh workspace.
type Subject struct {
	Sources  ports.SourceReader
	Paths    ports.PathResolver
	Evidence ports.EvidenceStore
	// Ledger is the adapter's call ledger store; the factory sets it.
	Ledger ports.LedgerStore
	// Marker returns the adapter's cancel marker at an operator path.
	Marker func(path string) ports.Canceller
	// Abs returns the absolute form of a workspace-relative path.
	Abs func(rel string) string
	// List returns the sorted entry names of a workspace-relative directory,
	// or nil when it does not exist.
	List func(rel string) []string
	// Read returns a workspace-relative file's bytes.
	Read func(rel string) ([]byte, error)
	// Write creates a file (or, for a name ending in "/", a directory).
	Write func(rel string, data string)
	// Mode returns a workspace-relative file's permission bits.
	Mode func(rel string) fs.FileMode
	// Chmod sets a workspace-relative file's permission bits.
	Chmod func(rel string, mode fs.FileMode)
	// Rename moves a workspace-relative file or directory, as another
	// process may while a call runs.
	Rename func(from, to string)
}

// Factory builds a Subject whose workspace holds files: names are
// workspace-relative; a name ending in "/" is a directory.
type Factory func(t *testing.T, files map[string]string) Subject

// Tree is the workspace directory behind a Subject, reached through afero
// so that one helper serves the real disk (afero.NewOsFs with an absolute
// Root) and memory (a MemMapFs) alike.
type Tree struct {
	T    testing.TB
	Fs   afero.Fs
	Root string
}

// Subject returns a Subject over this tree with the adapter's ports.
func (tr Tree) Subject(sources ports.SourceReader, paths ports.PathResolver, evidence ports.EvidenceStore, marker func(string) ports.Canceller) Subject {
	return Subject{Sources: sources, Paths: paths, Evidence: evidence, Marker: marker,
		Abs: tr.Abs, List: tr.List, Read: tr.Read, Write: tr.Write, Mode: tr.Mode, Chmod: tr.Chmod, Rename: tr.Rename}
}

// Fill creates the workspace directory and files in it.
func (tr Tree) Fill(files map[string]string) {
	tr.Write("./", "")
	for name, data := range files {
		tr.Write(name, data)
	}
}

// Abs returns the absolute form of a workspace-relative path.
func (tr Tree) Abs(rel string) string { return filepath.Join(tr.Root, rel) }

// Write creates a file, or for a name ending in "/" a directory, with its
// parents.
func (tr Tree) Write(rel, data string) {
	tr.T.Helper()
	p := tr.Abs(rel)
	dir := p
	if !strings.HasSuffix(rel, "/") {
		dir = filepath.Dir(p)
	}
	if err := tr.Fs.MkdirAll(dir, 0o755); err != nil {
		tr.T.Fatal(err)
	}
	if strings.HasSuffix(rel, "/") {
		return
	}
	if err := afero.WriteFile(tr.Fs, p, []byte(data), 0o644); err != nil {
		tr.T.Fatal(err)
	}
}

// List returns the sorted names in a workspace-relative directory, an empty
// slice for an empty one, and nil when it does not exist.
func (tr Tree) List(rel string) []string {
	tr.T.Helper()
	entries, err := afero.ReadDir(tr.Fs, tr.Abs(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		tr.T.Fatal(err)
	}
	names := []string{}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// Read returns a workspace-relative file's bytes.
func (tr Tree) Read(rel string) ([]byte, error) { return afero.ReadFile(tr.Fs, tr.Abs(rel)) }

// Mode returns a workspace-relative file's permission bits.
func (tr Tree) Mode(rel string) fs.FileMode {
	tr.T.Helper()
	fi, err := tr.Fs.Stat(tr.Abs(rel))
	if err != nil {
		tr.T.Fatal(err)
	}
	return fi.Mode().Perm()
}

// Chmod sets a workspace-relative file's permission bits.
func (tr Tree) Chmod(rel string, mode fs.FileMode) {
	tr.T.Helper()
	if err := tr.Fs.Chmod(tr.Abs(rel), mode); err != nil {
		tr.T.Fatal(err)
	}
}

// Rename moves a workspace-relative file or directory.
func (tr Tree) Rename(from, to string) {
	tr.T.Helper()
	if err := tr.Fs.Rename(tr.Abs(from), tr.Abs(to)); err != nil {
		tr.T.Fatal(err)
	}
}

// SourceReader runs the ports.SourceReader contract.
func SourceReader(t *testing.T, newSubject Factory) {
	t.Run("returns the exact bytes", func(t *testing.T) {
		is := is.New(t)
		content := "a,b\r\nc\x00\xff\n\n"
		s := newSubject(t, map[string]string{"data/x.csv": content, "data/empty.csv": ""})
		got, err := s.Sources.ReadSource("data/x.csv", 1024)
		is.NoErr(err)
		is.Equal(string(got), content)
		got, err = s.Sources.ReadSource("data/empty.csv", 1024)
		is.NoErr(err)
		is.Equal(len(got), 0)
	})
	t.Run("enforces the limit to the byte", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{"at": strings.Repeat("x", 100), "over": strings.Repeat("x", 101)})
		got, err := s.Sources.ReadSource("at", 100)
		is.NoErr(err)
		is.Equal(len(got), 100)
		_, err = s.Sources.ReadSource("over", 100)
		is.True(errors.Is(err, ports.ErrTooLarge))
	})
	tests := []struct {
		name string
		path string
		want error
	}{
		{"a missing file", "data/missing.csv", ports.ErrMissing},
		{"a missing folder", "nothing/x.csv", ports.ErrMissing},
		{"a file where a folder should be", "file/x.csv", ports.ErrMissing},
		{"a directory", "data", ports.ErrNotRegular},
		{"a path that climbs out", "../outside.csv", ports.ErrOutside},
		{"a path that climbs out midway", "data/../../outside.csv", ports.ErrOutside},
		{"an absolute path", "/etc/hostname", ports.ErrOutside},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			is := is.New(t)
			s := newSubject(t, map[string]string{"data/": "", "file": "x"})
			_, err := s.Sources.ReadSource(tt.path, 1024)
			is.True(errors.Is(err, tt.want)) // the port's named error
		})
	}
}

// PathResolver runs the ports.PathResolver contract.
func PathResolver(t *testing.T, newSubject Factory) {
	files := map[string]string{"data/": "", "data/groups.csv": "x", "runs/old/": ""}
	tests := []struct {
		name, path string
		want       ports.Location
		err        error
	}{
		{"the workspace", ".", ports.Location{Rel: ".", Exists: true, Dir: true}, nil},
		{"an existing folder", "runs/old", ports.Location{Rel: "runs/old", Exists: true, Dir: true}, nil},
		{"a trailing slash", "runs/old/", ports.Location{Rel: "runs/old", Exists: true, Dir: true}, nil},
		{"a new folder", "runs/new/deeper", ports.Location{Rel: "runs/new/deeper"}, nil},
		{"an existing file", "data/groups.csv", ports.Location{Rel: "data/groups.csv", Exists: true, Regular: true}, nil},
		{"dot-dot inside", "runs/old/../../data", ports.Location{Rel: "data", Exists: true, Dir: true}, nil},
		{"dot-dot after a new folder", "runs/new/../old", ports.Location{Rel: "runs/old", Exists: true, Dir: true}, nil},
		{"climbing out", "..", ports.Location{}, ports.ErrOutside},
		{"climbing out midway", "runs/../../x", ports.Location{}, ports.ErrOutside},
		{"climbing out after a new folder", "new/../../x", ports.Location{}, ports.ErrOutside},
		{"under a file", "data/groups.csv/x", ports.Location{}, ports.ErrNotDir},
		// A "." or a trailing slash asks the name before it to be a
		// directory, as the kernel does (protocol §1.2).
		{"a trailing slash after a file", "data/groups.csv/", ports.Location{}, ports.ErrNotDir},
		{"a dot after a file", "data/groups.csv/.", ports.Location{}, ports.ErrNotDir},
		{"a dot-dot after a file", "data/groups.csv/..", ports.Location{}, ports.ErrNotDir},
		{"a dot between names", "data/./groups.csv", ports.Location{Rel: "data/groups.csv", Exists: true, Regular: true}, nil},
		{"a doubled slash", "data//groups.csv", ports.Location{Rel: "data/groups.csv", Exists: true, Regular: true}, nil},
		{"a dot after a folder", "runs/old/.", ports.Location{Rel: "runs/old", Exists: true, Dir: true}, nil},
		{"an absolute path outside", "/", ports.Location{}, ports.ErrOutside},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			s := newSubject(t, files)
			got, err := s.Paths.Resolve(tt.path)
			is.True(errors.Is(err, tt.err)) // the port's named error
			if tt.err == nil {
				is.Equal(got, tt.want)
			}
		})
	}
	t.Run("an absolute path inside", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, files)
		got, err := s.Paths.Resolve(s.Abs("runs/new"))
		is.NoErr(err)
		is.Equal(got, ports.Location{Rel: "runs/new"})
		got, err = s.Paths.Resolve(s.Abs("."))
		is.NoErr(err)
		is.Equal(got, ports.Location{Rel: ".", Exists: true, Dir: true})
	})
	t.Run("a path that climbs out and comes back in", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, files)
		back := "../" + path.Base(s.Abs(".")) + "/runs/old"
		got, err := s.Paths.Resolve(back)
		is.NoErr(err)
		is.Equal(got, ports.Location{Rel: "runs/old", Exists: true, Dir: true})
	})
}

// Canceller runs the ports.Canceller contract on the adapter's marker.
func Canceller(t *testing.T, newSubject Factory) {
	is := is.New(t)
	s := newSubject(t, map[string]string{"flags/": ""})
	never := s.Marker("")
	c, err := never.Cancelled(context.Background())
	is.NoErr(err)
	is.True(!c) // no marker path: never cancelled

	m := s.Marker("flags/stop")
	c, err = m.Cancelled(context.Background())
	is.NoErr(err)
	is.True(!c) // absent marker
	s.Write("flags/stop", "")
	c, err = m.Cancelled(context.Background())
	is.NoErr(err)
	is.True(c) // present marker

	c, err = s.Marker(s.Abs("flags/stop")).Cancelled(context.Background())
	is.NoErr(err)
	is.True(c) // absolute form of the same marker

	_, err = s.Marker("../stop").Cancelled(context.Background())
	is.True(errors.Is(err, ports.ErrOutside)) // a marker outside the workspace
}

// EvidenceStore runs the ports.EvidenceStore and ports.EvidenceWriter
// contract.
func EvidenceStore(t *testing.T, newSubject Factory) {
	runFiles := []ports.File{{Name: "result.json", Data: []byte("{\"r\":1}\n")}, {Name: "receipt.json", Data: []byte("{}\n")}, {Name: "checksums.json", Data: []byte("[]\n")}}
	names := []string{"result.json", "receipt.json", "checksums.json"}

	t.Run("a commit makes the run visible whole, and nothing else", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, nil)
		w, err := s.Evidence.OpenWriter("runs/demo")
		is.NoErr(err)
		exists, err := w.Exists("r1")
		is.NoErr(err)
		is.True(!exists)
		is.NoErr(w.Stage(runFiles))
		is.Equal(s.List("runs/demo/r1"), nil) // nothing visible before the commit
		is.NoErr(w.Commit("r1"))
		is.NoErr(w.Close())
		is.Equal(w.Where("r1", "result.json"), "runs/demo/r1/result.json") // the path of the file in the run directory
		is.Equal(s.List("runs/demo"), []string{".writer.lock", "r1"})      // no pending directory left
		is.Equal(s.List("runs/demo/r1"), []string{"checksums.json", "receipt.json", "result.json"})

		run, err := s.Evidence.ReadRun("runs/demo", "r1", names, 1024)
		is.NoErr(err)
		is.True(run.Exists && run.Dir && !run.Extra)
		for i, f := range run.Files {
			is.NoErr(f.Err)
			is.Equal(f.Name, names[i])
			is.Equal(string(f.Data), string(runFiles[i].Data))
		}
	})

	t.Run("the lock excludes a second writer until the first closes", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{"out/": ""})
		first, err := s.Evidence.OpenWriter("out")
		is.NoErr(err)
		_, err = s.Evidence.OpenWriter("out")
		is.True(errors.Is(err, ports.ErrBusy))
		is.NoErr(first.Close())
		second, err := s.Evidence.OpenWriter("out")
		is.NoErr(err)
		is.NoErr(second.Close())
		is.Equal(s.List("out"), []string{".writer.lock"}) // the lock file may stay
	})

	t.Run("the lock file is private, and one open to others is made so", func(t *testing.T) {
		// flock needs only a descriptor open for reading: a lock file
		// another account can open is one it can hold.
		is := is.New(t)
		s := newSubject(t, map[string]string{"out/": "", "old/": "", "old/.writer.lock": ""})
		w, err := s.Evidence.OpenWriter("out")
		is.NoErr(err)
		is.Equal(s.Mode("out/.writer.lock"), fs.FileMode(0o600)) // created 0600
		is.NoErr(w.Close())
		for _, mode := range []fs.FileMode{0o644, 0o666, 0o604, 0o640, 0o700} {
			s.Chmod("old/.writer.lock", mode)
			w, err := s.Evidence.OpenWriter("old")
			is.NoErr(err)
			want := fs.FileMode(0o600)
			if mode&0o077 == 0 {
				want = mode // nothing for others: left as it is
			}
			is.Equal(s.Mode("old/.writer.lock"), want)
			is.NoErr(w.Close())
		}
	})

	t.Run("a commit never replaces an existing entry", func(t *testing.T) {
		for _, existing := range []string{"out/r1/", "out/r1"} {
			is := is.New(t)
			s := newSubject(t, map[string]string{"out/": "", existing: "keep"})
			w, err := s.Evidence.OpenWriter("out")
			is.NoErr(err)
			exists, err := w.Exists("r1")
			is.NoErr(err)
			is.True(exists)
			is.NoErr(w.Stage(runFiles))
			is.True(errors.Is(w.Commit("r1"), ports.ErrExists))
			is.NoErr(w.Close())
			is.Equal(s.List("out"), []string{".writer.lock", "r1"}) // pending removed, entry kept
			if !strings.HasSuffix(existing, "/") {
				b, err := s.Read("out/r1")
				is.NoErr(err)
				is.Equal(string(b), "keep")
			}
		}
	})

	t.Run("closing without a commit leaves no pending directory and keeps the lock file", func(t *testing.T) {
		// The lock file is never removed: a writer that unlinked it while
		// another process had it open would let two processes lock two
		// different files at once.
		is := is.New(t)
		s := newSubject(t, map[string]string{"runs/": ""})
		w, err := s.Evidence.OpenWriter("runs/new/deeper")
		is.NoErr(err)
		is.NoErr(w.Stage(runFiles))
		is.NoErr(w.Close())
		is.Equal(s.List("runs/new/deeper"), []string{".writer.lock"})
	})

	t.Run("closing without a commit keeps what others made", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{"out/": "", "out/other": "x"})
		w, err := s.Evidence.OpenWriter("out")
		is.NoErr(err)
		is.NoErr(w.Stage(runFiles))
		is.NoErr(w.Close())
		is.Equal(s.List("out"), []string{".writer.lock", "other"})
	})

	t.Run("nothing is created inside an existing run or pending directory", func(t *testing.T) {
		for _, name := range ports.RunFileNames() {
			for _, out := range []string{"runs/r1", "runs/r1/deeper"} {
				is := is.New(t)
				s := newSubject(t, map[string]string{"runs/r1/" + name: "{}"})
				_, err := s.Evidence.OpenWriter(out)
				is.True(errors.Is(err, ports.ErrInsideEvidence)) // a run holding name
				is.Equal(s.List("runs/r1"), []string{name})      // nothing added to it
			}
		}
		is := is.New(t)
		s := newSubject(t, map[string]string{"runs/.pending-x/": ""})
		_, err := s.Evidence.OpenWriter("runs/.pending-x/out")
		is.True(errors.Is(err, ports.ErrInsideEvidence))
		is.Equal(s.List("runs/.pending-x"), []string{})
		_, err = s.Evidence.OpenWriter("runs/.pending-new")
		is.True(errors.Is(err, ports.ErrInsideEvidence)) // a pending name is never created
		is.Equal(s.List("runs"), []string{".pending-x"})
	})

	t.Run("an output path under a file is refused", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{"out": "x"})
		_, err := s.Evidence.OpenWriter("out/runs")
		is.True(errors.Is(err, ports.ErrNotDir))
	})

	t.Run("read back reports what it found", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{
			"out/file":              "x",
			"out/r/result.json":     "0123456789",
			"out/r/receipt.json/":   "",
			"out/big/result.json":   strings.Repeat("x", 11),
			"out/extra/result.json": "{}",
			"out/extra/notes.txt":   "hi",
		})
		run, err := s.Evidence.ReadRun("out", "missing", names, 10)
		is.NoErr(err)
		is.True(!run.Exists)
		run, err = s.Evidence.ReadRun("nothing-here", "r", names, 10)
		is.NoErr(err)
		is.True(!run.Exists)
		run, err = s.Evidence.ReadRun("out", "file", names, 10)
		is.NoErr(err)
		is.True(run.Exists && !run.Dir)

		run, err = s.Evidence.ReadRun("out", "r", names, 10)
		is.NoErr(err)
		is.True(run.Exists && run.Dir && !run.Extra)
		is.NoErr(run.Files[0].Err)
		is.Equal(string(run.Files[0].Data), "0123456789")         // exactly the limit
		is.True(errors.Is(run.Files[1].Err, ports.ErrNotRegular)) // a directory
		is.True(errors.Is(run.Files[2].Err, ports.ErrMissing))

		run, err = s.Evidence.ReadRun("out", "big", names, 10)
		is.NoErr(err)
		is.True(errors.Is(run.Files[0].Err, ports.ErrTooLarge))

		run, err = s.Evidence.ReadRun("out", "extra", names, 10)
		is.NoErr(err)
		is.True(run.Extra) // notes.txt is not a run file
	})

	t.Run("listing finds the directories holding a regular result file, and writes nothing", func(t *testing.T) {
		is := is.New(t)
		files := map[string]string{
			"out/r1/result.json":            "0123456789",
			"out/r1/receipt.json":           "{}",
			"out/r2/result.json":            "{}",
			"out/.pending-x/result.json":    "{}",
			"out/.writer.lock":              "",
			"out/file":                      "x",
			"out/empty/":                    "",
			"out/receipt-only/receipt.json": "{}",
			"out/dir-result/result.json/":   "",
		}
		s := newSubject(t, files)
		before := s.List("out")
		runs, err := s.Evidence.ListRuns("out")
		is.NoErr(err)
		slices.SortFunc(runs, func(a, b ports.ListedRun) int { return strings.Compare(a.Name, b.Name) })
		// The port does not judge names: the app keeps those in the ID grammar.
		is.Equal(runs, []ports.ListedRun{{Name: ".pending-x", ResultBytes: 2}, {Name: "r1", ResultBytes: 10}, {Name: "r2", ResultBytes: 2}})
		is.Equal(s.List("out"), before) // nothing written

		runs, err = s.Evidence.ListRuns("nothing-here")
		is.NoErr(err)
		is.Equal(len(runs), 0) // a missing output directory lists nothing
	})
}

// FixedClock is a ports.Clock that always tells the same time.
type FixedClock time.Time

// Now implements ports.Clock.
func (c FixedClock) Now() time.Time { return time.Time(c) }

// FixedEngine is a ports.Engine with a fixed identity.
type FixedEngine ports.EngineIdentity

// Identity implements ports.Engine.
func (e FixedEngine) Identity() (ports.EngineIdentity, error) { return ports.EngineIdentity(e), nil }
