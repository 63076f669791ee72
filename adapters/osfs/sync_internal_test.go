package osfs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/ports"
)

// Every fsync of a write is checked: whichever one fails, the run never
// becomes visible and no pending directory is left behind.
func TestAnyFailedSyncAbandonsTheCommit(t *testing.T) {
	files := []ports.File{{Name: "result.json", Data: []byte("1")}, {Name: "receipt.json", Data: []byte("2")}, {Name: "checksums.json", Data: []byte("3")}}
	// Stage syncs 3 files and the pending directory; Commit syncs out,
	// then runs/ (parent of the created out) and the workspace (parent of
	// the created runs/).
	const syncs = 4 + 3
	for failAt := 1; failAt <= syncs; failAt++ {
		is := is.New(t)
		dir := t.TempDir()
		ws, err := Open(dir)
		is.NoErr(err)
		var mu sync.Mutex // Stage syncs its files and directory at once
		calls := 0
		boom := errors.New("injected fsync failure")
		ws.sync = func(f *os.File) error {
			mu.Lock()
			calls++
			fail := calls == failAt
			mu.Unlock()
			if fail {
				return boom
			}
			return f.Sync()
		}
		w, err := ws.OpenWriter("runs/out")
		is.NoErr(err)
		err = w.Stage(files)
		if err == nil {
			err = w.Commit("r1")
		}
		is.True(errors.Is(err, boom)) // the failure is reported
		is.NoErr(w.Close())
		_, statErr := os.Lstat(filepath.Join(dir, "runs", "out", "r1"))
		is.True(errors.Is(statErr, os.ErrNotExist)) // no run is visible
		entries, _ := os.ReadDir(filepath.Join(dir, "runs", "out"))
		is.Equal(len(entries), 1) // no pending directory: only the lock file stays
		is.Equal(entries[0].Name(), ports.LockFile)
		ws.Close()
	}
}

// A failed fsync after the rename whose rename back fails too cannot be
// undone: Commit says so (ports.ErrMaybeCommitted, with both failures),
// the run stays visible and whole, and Close removes nothing of it.
// Whichever of the fsyncs after the rename fails, it is the same.
func TestACommitThatCannotBeTakenBackSaysItMayBeCommitted(t *testing.T) {
	files := []ports.File{{Name: "result.json", Data: []byte("1")}, {Name: "receipt.json", Data: []byte("2")}, {Name: "checksums.json", Data: []byte("3")}}
	for failAt := 5; failAt <= 7; failAt++ { // out, then runs/ and the workspace, which OpenWriter created
		is := is.New(t)
		dir := t.TempDir()
		ws, err := Open(dir)
		is.NoErr(err)
		var mu sync.Mutex
		calls := 0
		syncErr, renameErr := errors.New("injected fsync failure"), errors.New("injected rename failure")
		ws.sync = func(f *os.File) error {
			mu.Lock()
			calls++
			fail := calls == failAt
			mu.Unlock()
			if fail {
				return syncErr
			}
			return f.Sync()
		}
		rename := ws.rename
		ws.rename = func(d *os.File, from, to string) error {
			if from == "r1" {
				return renameErr
			}
			return rename(d, from, to)
		}
		w, err := ws.OpenWriter("runs/out")
		is.NoErr(err)
		is.NoErr(w.Stage(files))
		err = w.Commit("r1")
		is.True(errors.Is(err, ports.ErrMaybeCommitted)) // not "nothing committed"
		is.True(errors.Is(err, syncErr))                 // with both failures
		is.True(errors.Is(err, renameErr))
		is.NoErr(w.Close())
		entries, err := os.ReadDir(filepath.Join(dir, "runs", "out", "r1"))
		is.NoErr(err)
		is.Equal(len(entries), 3) // the run, whole, where it was committed
		entries, _ = os.ReadDir(filepath.Join(dir, "runs", "out"))
		is.Equal(len(entries), 2) // and the lock file: no pending directory
		ws.Close()
	}
}

func TestSyncsCoverFilesPendingDirOutputAndCreatedParents(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	ws, err := Open(dir)
	is.NoErr(err)
	defer ws.Close()
	var mu sync.Mutex
	var synced []string
	ws.sync = func(f *os.File) error {
		rel, _ := filepath.Rel(dir, f.Name())
		mu.Lock()
		synced = append(synced, filepath.ToSlash(rel))
		mu.Unlock()
		return f.Sync()
	}
	w, err := ws.OpenWriter("runs/out")
	is.NoErr(err)
	is.NoErr(w.Stage([]ports.File{{Name: "a.json", Data: []byte("1")}}))
	is.NoErr(w.Commit("r1"))
	is.NoErr(w.Close())
	is.Equal(len(synced), 5)
	staged := synced[:2] // the file and its directory, fsynced at once
	slices.Sort(staged)
	pending := staged[0]
	is.True(strings.HasPrefix(pending, "runs/out/"+ports.PendingPrefix))
	is.Equal(synced, []string{
		pending,             // the pending directory, before the rename
		pending + "/a.json", // the file, before the rename
		"runs/out",          // the output directory, after the rename
		"runs",              // parent of the created out
		".",                 // the workspace, parent of the created runs
	})
}

// Stage fsyncs its files and directory on goroutines of their own; a panic
// on one must not end the process (no recover of the caller reaches it) but
// fail the stage, which commits nothing.
func TestAPanickingStageSyncFailsTheStage(t *testing.T) {
	files := []ports.File{{Name: "result.json", Data: []byte("1")}, {Name: "receipt.json", Data: []byte("2")}, {Name: "checksums.json", Data: []byte("3")}}
	for panicAt := 1; panicAt <= 4; panicAt++ {
		is := is.New(t)
		dir := t.TempDir()
		ws, err := Open(dir)
		is.NoErr(err)
		var mu sync.Mutex
		calls := 0
		ws.sync = func(f *os.File) error {
			mu.Lock()
			calls++
			boom := calls == panicAt
			mu.Unlock()
			if boom {
				panic("injected")
			}
			return f.Sync()
		}
		w, err := ws.OpenWriter("runs/out")
		is.NoErr(err)
		is.True(w.Stage(files) != nil) // the stage fails
		is.NoErr(w.Close())
		entries, _ := os.ReadDir(filepath.Join(dir, "runs", "out"))
		is.Equal(len(entries), 1) // nothing but the lock file
		ws.Close()
	}
}
