//go:build unix

package osfs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/adapters/osfs"
	"github.com/metricproof/metricproof/ports"
)

// Only a real disk has symlinks and FIFOs; these cases complete the
// contract suite for osfs.

// layout makes a workspace and a sibling "outside" directory holding a file.
func layout(t *testing.T) (ws, outside string) {
	t.Helper()
	base := t.TempDir()
	ws = filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(ws, "data"), filepath.Join(ws, "runs"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(ws, "data", "real.csv"), filepath.Join(outside, "secret.csv")} {
		if err := os.WriteFile(f, []byte("bytes"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws, outside
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, dir string) *osfs.Workspace {
	t.Helper()
	ws, err := osfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func TestSourcesThroughSymlinks(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, ws, outside string)
		want  error
	}{
		{"a relative link inside is followed", func(t *testing.T, ws, _ string) {
			symlink(t, "real.csv", filepath.Join(ws, "data", "x.csv"))
		}, nil},
		{"an absolute link outside escapes", func(t *testing.T, ws, outside string) {
			symlink(t, filepath.Join(outside, "secret.csv"), filepath.Join(ws, "data", "x.csv"))
		}, ports.ErrOutside},
		{"a relative link climbing out escapes", func(t *testing.T, ws, _ string) {
			symlink(t, "../../outside/secret.csv", filepath.Join(ws, "data", "x.csv"))
		}, ports.ErrOutside},
		{"a linked folder outside escapes", func(t *testing.T, ws, outside string) {
			if err := os.Remove(filepath.Join(ws, "data", "real.csv")); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(ws, "data")); err != nil {
				t.Fatal(err)
			}
			symlink(t, outside, filepath.Join(ws, "data"))
			symlink(t, "secret.csv", filepath.Join(outside, "x.csv"))
		}, ports.ErrOutside},
		{"an absolute link that stays inside is followed", func(t *testing.T, ws, _ string) {
			symlink(t, filepath.Join(ws, "data", "real.csv"), filepath.Join(ws, "data", "x.csv"))
		}, nil},
		{"a relative link that climbs out and back in is followed", func(t *testing.T, ws, _ string) {
			symlink(t, "../../ws/data/real.csv", filepath.Join(ws, "data", "x.csv"))
		}, nil},
		{"a dangling link is missing", func(t *testing.T, ws, _ string) {
			symlink(t, "nothing.csv", filepath.Join(ws, "data", "x.csv"))
		}, ports.ErrMissing},
		{"a FIFO is refused without blocking", func(t *testing.T, ws, _ string) {
			if err := syscall.Mkfifo(filepath.Join(ws, "data", "x.csv"), 0o644); err != nil {
				t.Skip("no FIFOs here:", err)
			}
		}, ports.ErrNotRegular},
		// open(2) of a socket fails (ENXIO) where a FIFO's or a device's
		// succeeds: it is still a file that is not regular, not an I/O
		// failure.
		{"a socket is refused as not regular", func(t *testing.T, ws, _ string) {
			if err := syscall.Mknod(filepath.Join(ws, "data", "x.csv"), syscall.S_IFSOCK|0o644, 0); err != nil {
				t.Skip("no socket nodes here:", err)
			}
		}, ports.ErrNotRegular},
		{"a symlink to a socket is refused as not regular", func(t *testing.T, ws, _ string) {
			if err := syscall.Mknod(filepath.Join(ws, "data", "sock"), syscall.S_IFSOCK|0o644, 0); err != nil {
				t.Skip("no socket nodes here:", err)
			}
			symlink(t, "sock", filepath.Join(ws, "data", "x.csv"))
		}, ports.ErrNotRegular},
		{"a character device is refused as not regular", func(t *testing.T, ws, _ string) {
			if err := syscall.Mknod(filepath.Join(ws, "data", "x.csv"), syscall.S_IFCHR|0o644, int(unix.Mkdev(1, 3))); err != nil {
				t.Skip("no device nodes for this user:", err) // /dev/null's numbers; root only
			}
		}, ports.ErrNotRegular},
		{"a device node without a driver is refused as not regular", func(t *testing.T, ws, _ string) {
			// open(2) of it fails with ENXIO, as a socket's does.
			if err := syscall.Mknod(filepath.Join(ws, "data", "x.csv"), syscall.S_IFCHR|0o644, int(unix.Mkdev(4095, 4095))); err != nil {
				t.Skip("no device nodes for this user:", err)
			}
		}, ports.ErrNotRegular},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ws, outside := layout(t)
			tt.setup(t, ws, outside)
			done := make(chan struct{})
			var got []byte
			var err error
			go func() {
				got, err = open(t, ws).ReadSource("data/x.csv", 1024)
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("ReadSource blocked")
			}
			if tt.want == nil {
				is.NoErr(err)
				is.Equal(string(got), "bytes")
				return
			}
			is.True(errors.Is(err, tt.want)) // the port's named error
		})
	}
}

func TestResolveFollowsSymlinks(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, ws, outside string)
		path  string
		want  ports.Location
		err   error
	}{
		{"a link to data resolves to data", func(t *testing.T, ws, _ string) {
			symlink(t, "data", filepath.Join(ws, "out"))
		}, "out", ports.Location{Rel: "data", Exists: true, Dir: true}, nil},
		{"a link to a new folder inside data", func(t *testing.T, ws, _ string) {
			symlink(t, "data/new", filepath.Join(ws, "out"))
		}, "out/run", ports.Location{Rel: "data/new/run"}, nil},
		{"an absolute link inside", func(t *testing.T, ws, _ string) {
			symlink(t, filepath.Join(ws, "runs"), filepath.Join(ws, "out"))
		}, "out/demo", ports.Location{Rel: "runs/demo"}, nil},
		{"a link to the workspace", func(t *testing.T, ws, _ string) {
			symlink(t, ".", filepath.Join(ws, "out"))
		}, "out", ports.Location{Rel: ".", Exists: true, Dir: true}, nil},
		{"a link outside", func(t *testing.T, ws, outside string) {
			symlink(t, outside, filepath.Join(ws, "out"))
		}, "out/demo", ports.Location{}, ports.ErrOutside},
		{"a relative link climbing out", func(t *testing.T, ws, _ string) {
			symlink(t, "../outside", filepath.Join(ws, "out"))
		}, "out", ports.Location{}, ports.ErrOutside},
		{"a link then dot-dot steps back from the target", func(t *testing.T, ws, _ string) {
			if err := os.MkdirAll(filepath.Join(ws, "deep", "er"), 0o755); err != nil {
				t.Fatal(err)
			}
			symlink(t, "deep/er", filepath.Join(ws, "out"))
		}, "out/../runs", ports.Location{Rel: "deep/runs"}, nil},
		// Out of the workspace and back in: the kernel follows the link from
		// the filesystem root, then continues with what follows it, so
		// upabs/ws/runs is runs, however the link is written.
		{"an absolute link up and a path back in", func(t *testing.T, ws, _ string) {
			symlink(t, filepath.Dir(ws), filepath.Join(ws, "upabs"))
		}, "upabs/ws/runs", ports.Location{Rel: "runs", Exists: true, Dir: true}, nil},
		{"a relative link up and a path back in", func(t *testing.T, ws, _ string) {
			symlink(t, "..", filepath.Join(ws, "uprel"))
		}, "uprel/ws/runs", ports.Location{Rel: "runs", Exists: true, Dir: true}, nil},
		{"an absolute link up and a new folder back in", func(t *testing.T, ws, _ string) {
			symlink(t, filepath.Dir(ws), filepath.Join(ws, "upabs"))
		}, "upabs/ws/runs/new/deeper", ports.Location{Rel: "runs/new/deeper"}, nil},
		{"an absolute link up and a path that stays out", func(t *testing.T, ws, _ string) {
			symlink(t, filepath.Dir(ws), filepath.Join(ws, "upabs"))
		}, "upabs/outside/x", ports.Location{}, ports.ErrOutside},
		{"an absolute link up, in again, and through a link inside", func(t *testing.T, ws, _ string) {
			symlink(t, filepath.Dir(ws), filepath.Join(ws, "upabs"))
			symlink(t, "data", filepath.Join(ws, "in"))
		}, "upabs/ws/in", ports.Location{Rel: "data", Exists: true, Dir: true}, nil},
		// After a climb, ".." still steps back from where a link led, never
		// lexically: ws/lk/.. is ws/deep, not ws.
		{"a relative link up, then a link and dot-dot back in", func(t *testing.T, ws, _ string) {
			symlink(t, "..", filepath.Join(ws, "uprel"))
			if err := os.MkdirAll(filepath.Join(ws, "deep", "er"), 0o755); err != nil {
				t.Fatal(err)
			}
			symlink(t, "deep/er", filepath.Join(ws, "lk"))
		}, "uprel/ws/lk/../runs", ports.Location{Rel: "deep/runs"}, nil},
		{"an absolute link up, then a link and dot-dot back in", func(t *testing.T, ws, _ string) {
			symlink(t, filepath.Dir(ws), filepath.Join(ws, "upabs"))
			if err := os.MkdirAll(filepath.Join(ws, "deep", "er"), 0o755); err != nil {
				t.Fatal(err)
			}
			symlink(t, "deep/er", filepath.Join(ws, "lk"))
		}, "upabs/ws/lk/../runs", ports.Location{Rel: "deep/runs"}, nil},
		{"a loop", func(t *testing.T, ws, _ string) {
			symlink(t, "b", filepath.Join(ws, "a"))
			symlink(t, "a", filepath.Join(ws, "b"))
		}, "a", ports.Location{}, syscall.ELOOP},
		{"an absolute path with a file in the way inside", func(t *testing.T, ws, _ string) {}, "ABS:data/real.csv/x", ports.Location{}, ports.ErrNotDir},
		{"an absolute path with a file in the way outside", func(t *testing.T, ws, outside string) {}, "OUT:secret.csv/x", ports.Location{}, ports.ErrOutside},
		{"an absolute path whose link steps back outside", func(t *testing.T, ws, outside string) {
			if err := os.MkdirAll(filepath.Join(outside, "dir"), 0o755); err != nil {
				t.Fatal(err)
			}
			symlink(t, filepath.Join(outside, "dir"), filepath.Join(ws, "link"))
		}, "ABS:link/../x", ports.Location{}, ports.ErrOutside},
		{"an absolute path reached through an outside link", func(t *testing.T, ws, outside string) {
			symlink(t, filepath.Join(ws, "runs"), filepath.Join(outside, "to-runs"))
		}, "", ports.Location{Rel: "runs", Exists: true, Dir: true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ws, outside := layout(t)
			tt.setup(t, ws, outside)
			p := tt.path
			switch {
			case p == "":
				p = filepath.Join(outside, "to-runs")
			case strings.HasPrefix(p, "ABS:"):
				p = ws + "/" + strings.TrimPrefix(p, "ABS:") // not filepath.Join: that would clean away link/..
			case strings.HasPrefix(p, "OUT:"):
				p = outside + "/" + strings.TrimPrefix(p, "OUT:")
			}
			got, err := open(t, ws).Resolve(p)
			is.True(errors.Is(err, tt.err)) // the named error
			if tt.err == nil {
				is.Equal(got, tt.want)
			}
		})
	}
}

func TestWorkspaceReachedThroughASymlink(t *testing.T) {
	is := is.New(t)
	ws, outside := layout(t)
	link := filepath.Join(outside, "ws-link")
	symlink(t, ws, link)
	w := open(t, link)
	got, err := w.ReadSource("data/real.csv", 1024)
	is.NoErr(err)
	is.Equal(string(got), "bytes")
	loc, err := w.Resolve(filepath.Join(link, "runs"))
	is.NoErr(err)
	is.Equal(loc, ports.Location{Rel: "runs", Exists: true, Dir: true})
}

// The workspace path is resolved as the kernel resolves it: link/.. is the
// parent of the link's target, not the folder holding the link.
func TestWorkspacePathFollowsSymlinksBeforeDotDot(t *testing.T) {
	is := is.New(t)
	ws, outside := layout(t)
	is.NoErr(os.MkdirAll(filepath.Join(outside, "dir"), 0o755))
	symlink(t, filepath.Join(outside, "dir"), filepath.Join(ws, "link"))
	w := open(t, ws+"/link/..")
	_, err := w.ReadSource("secret.csv", 1024) // outside/secret.csv: the kernel's link/..
	is.NoErr(err)
}

func TestAMarkerBehindAFileIsAbsentNotAnError(t *testing.T) {
	is := is.New(t)
	ws, _ := layout(t)
	w := open(t, ws)
	for _, p := range []string{"data/real.csv/stop", ws + "/data/real.csv/stop"} {
		c, err := w.Marker(p).Cancelled(context.Background())
		is.NoErr(err)
		is.True(!c)
	}
}

func TestOpenRefusesWhatIsNotADirectory(t *testing.T) {
	is := is.New(t)
	ws, _ := layout(t)
	_, err := osfs.Open(filepath.Join(ws, "nothing"))
	is.True(errors.Is(err, ports.ErrMissing))
	_, err = osfs.Open(filepath.Join(ws, "data", "real.csv"))
	is.True(errors.Is(err, ports.ErrNotDir))
	_, err = osfs.Open("")
	is.True(errors.Is(err, ports.ErrMissing))
}

func TestSavedFilesAreNeverReadThroughSymlinks(t *testing.T) {
	is := is.New(t)
	ws, outside := layout(t)
	run := filepath.Join(ws, "runs", "r1")
	is.NoErr(os.MkdirAll(run, 0o755))
	is.NoErr(os.WriteFile(filepath.Join(run, "result.json"), []byte("{}"), 0o644))
	symlink(t, "result.json", filepath.Join(run, "receipt.json"))                          // inside
	symlink(t, filepath.Join(outside, "secret.csv"), filepath.Join(run, "checksums.json")) // outside
	symlink(t, "r1", filepath.Join(ws, "runs", "r2"))

	w := open(t, ws)
	names := []string{"result.json", "receipt.json", "checksums.json"}
	got, err := w.ReadRun("runs", "r1", names, 1024)
	is.NoErr(err)
	is.NoErr(got.Files[0].Err)
	is.True(errors.Is(got.Files[1].Err, ports.ErrNotRegular))
	is.True(errors.Is(got.Files[2].Err, ports.ErrNotRegular))

	got, err = w.ReadRun("runs", "r2", names, 1024)
	is.NoErr(err)
	is.True(got.Exists && !got.Dir) // a symlinked run directory is not a run directory
}

// A run directory or result file that is a symlink is not listed: a read
// of it would be refused.
func TestListedRunsAreNeverSymlinks(t *testing.T) {
	is := is.New(t)
	ws, outside := layout(t)
	run := filepath.Join(ws, "runs", "r1")
	is.NoErr(os.MkdirAll(run, 0o755))
	is.NoErr(os.WriteFile(filepath.Join(run, "result.json"), []byte("{}"), 0o644))
	symlink(t, "r1", filepath.Join(ws, "runs", "r2"))                               // a symlinked run
	symlink(t, outside, filepath.Join(ws, "runs", "r3"))                            // one leading outside
	is.NoErr(os.MkdirAll(filepath.Join(ws, "runs", "r4"), 0o755))                   // a run whose result
	symlink(t, "../r1/result.json", filepath.Join(ws, "runs", "r4", "result.json")) // is a symlink

	runs, err := open(t, ws).ListRuns("runs")
	is.NoErr(err)
	is.Equal(runs, []ports.ListedRun{{Name: "r1", ResultBytes: 2}})
}

// The app hands OpenWriter a directory its write boundary approved, already
// resolved. Should a component have been swapped for a symlink since (here:
// "out", now a link into data/), the writer refuses rather than write where
// the link leads.
func TestTheWriterRefusesADirectorySwappedForASymlink(t *testing.T) {
	is := is.New(t)
	ws, _ := layout(t)
	symlink(t, "data", filepath.Join(ws, "out"))
	w := open(t, ws)
	_, err := w.OpenWriter("out")
	is.True(err != nil)
	_, err = w.OpenWriter("out/new/deeper")
	is.True(err != nil)
	entries, err := os.ReadDir(filepath.Join(ws, "data"))
	is.NoErr(err)
	is.Equal(len(entries), 1) // only real.csv: no lock file or folder made in data/
}

// The ledger's directory is opened once (protocol §11). A directory on its
// path swapped for a symlink before OpenLedger opens it (after the app
// resolved the path) is ports.ErrMoved, never followed, even to a place
// inside the workspace; swapped after, every access still reaches the
// directory that was opened. A symlink put at the ledger's own name is
// not a ledger (ports.ErrNotRegular), and nothing is read or written
// through it.
func TestTheLedgerIsNeverReachedThroughASwappedSymlink(t *testing.T) {
	setup := func(t *testing.T) (ws string, w *osfs.Workspace) {
		t.Helper()
		ws, _ = layout(t)
		for _, d := range []string{"logs/l", "runs/r0"} {
			if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(ws, "logs", "l", "ledger.jsonl"), []byte("one\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return ws, open(t, ws)
	}
	lines := func(l ports.Ledger) ([]string, error) {
		var got []string
		err := l.Scan(context.Background(), func(line []byte) error {
			got = append(got, string(line))
			return nil
		})
		return got, err
	}

	for _, target := range []string{"../runs/r0", "../data", "l.real"} {
		t.Run("the directory swapped before the open, for a link to "+target, func(t *testing.T) {
			is := is.New(t)
			ws, w := setup(t)
			is.NoErr(os.Rename(filepath.Join(ws, "logs", "l"), filepath.Join(ws, "logs", "l.real")))
			symlink(t, target, filepath.Join(ws, "logs", "l"))
			_, err := w.OpenLedger("logs/l/ledger.jsonl")
			is.True(errors.Is(err, ports.ErrMoved)) // never followed
		})
		t.Run("the directory swapped after the open, for a link to "+target, func(t *testing.T) {
			is := is.New(t)
			ws, w := setup(t)
			l, err := w.OpenLedger("logs/l/ledger.jsonl")
			is.NoErr(err)
			defer l.Close()
			is.NoErr(os.Rename(filepath.Join(ws, "logs", "l"), filepath.Join(ws, "logs", "l.real")))
			symlink(t, target, filepath.Join(ws, "logs", "l"))

			last, err := l.LastLine(context.Background())
			is.NoErr(err)
			is.Equal(string(last), "one\n")
			held, err := l.Lock(context.Background(), time.Second)
			is.NoErr(err)
			is.NoErr(held.Append(func([]byte) ([]byte, error) { return []byte("two\n"), nil }))
			is.NoErr(held.Release())
			got, err := lines(l)
			is.NoErr(err)
			is.Equal(got, []string{"one\n", "two\n"})
			data, err := os.ReadFile(filepath.Join(ws, "logs", "l.real", "ledger.jsonl"))
			is.NoErr(err)
			is.Equal(string(data), "one\ntwo\n") // in the directory that was opened
			for _, d := range []string{"runs/r0", "data"} {
				_, err := os.Lstat(filepath.Join(ws, d, "ledger.jsonl"))
				is.True(errors.Is(err, os.ErrNotExist)) // nothing where a link leads
			}
		})
	}

	t.Run("a symlink at the ledger's name", func(t *testing.T) {
		is := is.New(t)
		ws, w := setup(t)
		l, err := w.OpenLedger("logs/l/ledger.jsonl")
		is.NoErr(err)
		defer l.Close()
		ledger := filepath.Join(ws, "logs", "l", "ledger.jsonl")
		is.NoErr(os.Rename(ledger, ledger+".real"))
		symlink(t, "ledger.jsonl.real", ledger)
		_, err = l.LastLine(context.Background())
		is.True(errors.Is(err, ports.ErrNotRegular)) // LastLine
		_, err = l.Lock(context.Background(), time.Second)
		is.True(errors.Is(err, ports.ErrNotRegular)) // Lock
		_, err = lines(l)
		is.True(errors.Is(err, ports.ErrNotRegular)) // Scan
		data, err := os.ReadFile(ledger + ".real")
		is.NoErr(err)
		is.Equal(string(data), "one\n") // untouched
	})
}

// Found by FuzzResolve: an absolute path that steps back with ".." from
// below a file is ENOTDIR for the kernel, so it is for Resolve, as the
// same path relative to the workspace already was; and outside the
// workspace it is outside. A cancel file at data/transactions.csv/x/..
// therefore never exists.
func TestDotDotBelowAFileIsNotADirectory(t *testing.T) {
	ws, outside := layout(t)
	w := open(t, ws)
	for _, tt := range []struct {
		path string
		err  error
	}{
		{ws + "/data/real.csv/x/..", ports.ErrNotDir}, // not filepath.Join, which cleans ".." away
		{"data/real.csv/x/..", ports.ErrNotDir},
		{outside + "/secret.csv/x/..", ports.ErrOutside},
	} {
		is := is.New(t)
		_, err := w.Resolve(tt.path)
		if !errors.Is(err, tt.err) {
			t.Errorf("Resolve(%q): %v, want %v", tt.path, err, tt.err)
		}
		is.True(err != nil)
	}
}

// Found by FuzzResolve: a "." or a trailing slash after a name asks that
// name to be a directory, as the kernel does ("file/." and "file/" are
// ENOTDIR), also when it comes from a link's target; a link to a file,
// absolute or not, still resolves to that file. The same rows without
// links are porttest's PathResolver contract.
func TestADotOrASlashAfterAFileIsNotADirectory(t *testing.T) {
	ws, _ := layout(t)
	symlink(t, "data/real.csv/.", filepath.Join(ws, "dotlink"))
	symlink(t, "data/real.csv/", filepath.Join(ws, "slashlink"))
	symlink(t, filepath.Join(ws, "data", "real.csv"), filepath.Join(ws, "abslink"))
	w := open(t, ws)
	file := ports.Location{Rel: "data/real.csv", Exists: true, Regular: true}
	for _, tt := range []struct {
		path string
		want ports.Location
		err  error
	}{
		{ws + "/data/real.csv/.", ports.Location{}, ports.ErrNotDir},
		{ws + "/data/real.csv/", ports.Location{}, ports.ErrNotDir},
		{"dotlink", ports.Location{}, ports.ErrNotDir},
		{"slashlink", ports.Location{}, ports.ErrNotDir},
		{"abslink", file, nil},
		{"abslink/", ports.Location{}, ports.ErrNotDir},
	} {
		got, err := w.Resolve(tt.path)
		if !errors.Is(err, tt.err) || err == nil && got != tt.want {
			t.Errorf("Resolve(%q) = %+v, %v; want %+v, %v", strings.TrimPrefix(tt.path, ws), got, err, tt.want, tt.err)
		}
	}
}
