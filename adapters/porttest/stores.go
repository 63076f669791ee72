package porttest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// The suites in this file hold an evidence store and a ledger store to
// what the app relies on, through the ports alone: no helper looks at
// where or how the adapter keeps anything. Every adapter passes them, a
// store on a disk and one in S3-compatible object storage alike (where
// there is no directory, no lock and no file mode). What only a
// filesystem has (the writer lock, modes, pending directories removed,
// entries that are not runs) is in EvidenceStore and LedgerStore above.

// Runs runs the promises about runs every ports.EvidenceStore keeps.
// newStore returns a fresh, empty store for each call.
func Runs(t *testing.T, newStore func(t *testing.T) ports.EvidenceStore) {
	names := []string{ports.ResultFile, ports.ReceiptFile, ports.ChecksumsFile}
	files := func(tag string) []ports.File {
		return []ports.File{
			{Name: ports.ResultFile, Data: []byte(`{"r":"` + tag + "\"}\n")},
			{Name: ports.ReceiptFile, Data: []byte("{}\n")},
			{Name: ports.ChecksumsFile, Data: []byte("[]\n")},
		}
	}
	commit := func(store ports.EvidenceStore, dir, runID string, fs []ports.File) error {
		w, err := store.OpenWriter(dir)
		if err != nil {
			return err
		}
		defer w.Close()
		if err := w.Stage(fs); err != nil {
			return err
		}
		return w.Commit(runID)
	}

	t.Run("a run is visible only once committed, then whole and byte for byte", func(t *testing.T) {
		is := is.New(t)
		store := newStore(t)
		want := files("a")
		w, err := store.OpenWriter("runs/demo")
		is.NoErr(err)
		exists, err := w.Exists("r1")
		is.NoErr(err)
		is.True(!exists)
		is.NoErr(w.Stage(want))
		run, err := store.ReadRun("runs/demo", "r1", names, 1024)
		is.NoErr(err)
		is.True(!run.Exists)                                // staged is not committed
		is.Equal(runIDs(t, store, "runs/demo"), []string{}) // nor listed
		is.NoErr(w.Commit("r1"))
		is.NoErr(w.Close())
		seen := map[string]bool{}
		for _, name := range names {
			where := w.Where("r1", name)
			is.True(strings.HasSuffix(where, "/"+name)) // each file is named where it lies,
			is.True(!seen[where])                       // each in its own place
			seen[where] = true
		}

		run, err = store.ReadRun("runs/demo", "r1", names, 1024)
		is.NoErr(err)
		is.True(run.Exists && run.Dir && !run.Extra)
		is.Equal(len(run.Files), len(names))
		for i, f := range run.Files {
			is.NoErr(f.Err)
			is.Equal(f.Name, names[i])
			is.Equal(string(f.Data), string(want[i].Data))
		}
		listed, err := store.ListRuns("runs/demo")
		is.NoErr(err)
		listed = slices.DeleteFunc(listed, func(r ports.ListedRun) bool { return !domain.ValidID(r.Name) })
		is.Equal(listed, []ports.ListedRun{{Name: "r1", ResultBytes: int64(len(want[0].Data))}})
	})

	t.Run("a committed run is never replaced", func(t *testing.T) {
		is := is.New(t)
		store := newStore(t)
		is.NoErr(commit(store, "out", "r1", files("first")))
		w, err := store.OpenWriter("out")
		is.NoErr(err)
		exists, err := w.Exists("r1")
		is.NoErr(err)
		is.True(exists)
		is.NoErr(w.Stage(files("second")))
		is.True(errors.Is(w.Commit("r1"), ports.ErrExists))
		is.NoErr(w.Close())
		run, err := store.ReadRun("out", "r1", names, 1024)
		is.NoErr(err)
		is.Equal(string(run.Files[0].Data), `{"r":"first"}`+"\n") // the first commit stands
	})

	t.Run("an attempt abandoned before its commit leaves nothing visible and blocks no retry", func(t *testing.T) {
		// As a process killed between its stage and its commit does.
		is := is.New(t)
		store := newStore(t)
		w, err := store.OpenWriter("out")
		is.NoErr(err)
		is.NoErr(w.Stage(files("lost")))
		is.NoErr(w.Close())
		run, err := store.ReadRun("out", "r1", names, 1024)
		is.NoErr(err)
		is.True(!run.Exists)
		is.Equal(runIDs(t, store, "out"), []string{})

		is.NoErr(commit(store, "out", "r1", files("retry")))
		run, err = store.ReadRun("out", "r1", names, 1024)
		is.NoErr(err)
		is.Equal(string(run.Files[0].Data), `{"r":"retry"}`+"\n")
	})

	t.Run("of writers racing for one run ID exactly one commits, and the run is its files", func(t *testing.T) {
		is := is.New(t)
		store := newStore(t)
		const writers = 8
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() { errs[i] = commit(store, "out", "r1", files(fmt.Sprint(i))) })
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				is.Equal(winner, -1) // a second commit succeeded
				winner = i
			case errors.Is(err, ports.ErrExists), errors.Is(err, ports.ErrBusy):
			default:
				t.Fatalf("writer %d: %v", i, err)
			}
		}
		is.True(winner >= 0) // someone committed
		run, err := store.ReadRun("out", "r1", names, 1024)
		is.NoErr(err)
		is.Equal(string(run.Files[0].Data), fmt.Sprintf(`{"r":"%d"}`+"\n", winner))
	})

	t.Run("a read reports each file as it is, within the limit", func(t *testing.T) {
		is := is.New(t)
		store := newStore(t)
		is.NoErr(commit(store, "out", "two", []ports.File{{Name: ports.ResultFile, Data: []byte("0123456789")}, {Name: ports.ReceiptFile, Data: []byte("01234567890")}}))
		run, err := store.ReadRun("out", "two", names, 10)
		is.NoErr(err)
		is.True(run.Exists && run.Dir && !run.Extra)
		is.NoErr(run.Files[0].Err)
		is.Equal(string(run.Files[0].Data), "0123456789")       // exactly the limit
		is.True(errors.Is(run.Files[1].Err, ports.ErrTooLarge)) // one byte over
		is.True(errors.Is(run.Files[2].Err, ports.ErrMissing))  // never written
		run, err = store.ReadRun("out", "two", names[:1], 10)
		is.NoErr(err)
		is.True(run.Extra) // the run holds a file not asked for

		for _, where := range [][2]string{{"out", "nothing"}, {"nowhere", "two"}} {
			run, err = store.ReadRun(where[0], where[1], names, 10)
			is.NoErr(err)
			is.True(!run.Exists) // no such run, no such directory
		}
		listed, err := store.ListRuns("nowhere")
		is.NoErr(err)
		is.Equal(len(listed), 0)
	})

	t.Run("runs of one directory are listed and no other", func(t *testing.T) {
		is := is.New(t)
		store := newStore(t)
		is.NoErr(commit(store, "out", "r1", files("1")))
		is.NoErr(commit(store, "out", "r2", files("22")))
		is.NoErr(commit(store, "out/deeper", "r3", files("3")))
		is.NoErr(commit(store, "other", "r4", files("4")))
		listed, err := store.ListRuns("out")
		is.NoErr(err)
		listed = slices.DeleteFunc(listed, func(r ports.ListedRun) bool { return !domain.ValidID(r.Name) })
		slices.SortFunc(listed, func(a, b ports.ListedRun) int { return strings.Compare(a.Name, b.Name) })
		is.Equal(listed, []ports.ListedRun{{Name: "r1", ResultBytes: int64(len(files("1")[0].Data))}, {Name: "r2", ResultBytes: int64(len(files("22")[0].Data))}})
	})

	t.Run("an output directory inside a pending directory is refused", func(t *testing.T) {
		is := is.New(t)
		store := newStore(t)
		_, err := store.OpenWriter("runs/" + ports.PendingPrefix + "x/out")
		is.True(errors.Is(err, ports.ErrInsideEvidence))
	})
}

// runIDs lists the runs of dir that the app would take for runs: those
// named in the run ID grammar (the port does not judge names).
func runIDs(t *testing.T, store ports.EvidenceStore, dir string) []string {
	t.Helper()
	listed, err := store.ListRuns(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, r := range listed {
		if domain.ValidID(r.Name) {
			ids = append(ids, r.Name)
		}
	}
	slices.Sort(ids)
	return ids
}

// Records runs the promises about records every ports.LedgerStore keeps.
// newStore returns a fresh, empty store for each call.
func Records(t *testing.T, newStore func(t *testing.T) ports.LedgerStore) {
	const wait = time.Minute // generous: nothing here waits unless it fails
	ctx := context.Background()
	// Each use opens the ledger, as a one-shot call does.
	ledgerOf := func(store ports.LedgerStore, rel string) ports.Ledger {
		t.Helper()
		l, err := store.OpenLedger(rel)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	lastLine := func(store ports.LedgerStore, rel string) ([]byte, error) {
		return ledgerOf(store, rel).LastLine(ctx)
	}
	lock := func(store ports.LedgerStore, rel string, wait time.Duration) (ports.HeldLedger, error) {
		return ledgerOf(store, rel).Lock(ctx, wait)
	}
	scanLedger := func(store ports.LedgerStore, rel string, line func([]byte) error) error {
		return ledgerOf(store, rel).Scan(ctx, line)
	}
	appendLine := func(store ports.LedgerStore, rel string, record func(last []byte) ([]byte, error)) error {
		held, err := lock(store, rel, wait)
		if err != nil {
			return err
		}
		defer held.Release()
		return held.Append(record)
	}
	scan := func(t *testing.T, store ports.LedgerStore, rel string) []string {
		t.Helper()
		var lines []string
		if err := scanLedger(store, rel, func(line []byte) error {
			lines = append(lines, string(line))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return lines
	}

	t.Run("a new ledger has no line, and its first append sees none", func(t *testing.T) {
		is := is.New(t)
		store := newStore(t)
		last, err := lastLine(store, "ledger.jsonl")
		is.NoErr(err)
		is.Equal(last, nil)
		is.True(errors.Is(scanLedger(store, "ledger.jsonl", func([]byte) error { return nil }), ports.ErrMissing))
		calls := 0
		is.NoErr(appendLine(store, "ledger.jsonl", func(last []byte) ([]byte, error) {
			calls++
			is.Equal(last, nil)
			return []byte("first\n"), nil
		}))
		is.Equal(calls, 1) // built once when nothing competes
		is.Equal(scan(t, store, "ledger.jsonl"), []string{"first\n"})
	})

	t.Run("each append sees the line before it, and the last line is the last appended", func(t *testing.T) {
		is := is.New(t)
		store := newStore(t)
		var seen []string
		for _, line := range []string{"one\n", "two\n", "three\n"} {
			is.NoErr(appendLine(store, "ledger.jsonl", func(last []byte) ([]byte, error) {
				seen = append(seen, string(last))
				return []byte(line), nil
			}))
		}
		is.Equal(seen, []string{"", "one\n", "two\n"})
		is.Equal(scan(t, store, "ledger.jsonl"), []string{"one\n", "two\n", "three\n"})
		last, err := lastLine(store, "ledger.jsonl")
		is.NoErr(err)
		is.Equal(string(last), "three\n")
		held, err := lock(store, "ledger.jsonl", wait)
		is.NoErr(err)
		last, err = held.LastLine()
		is.NoErr(err)
		is.Equal(string(last), "three\n") // through a hold too
		is.NoErr(held.Release())
	})

	t.Run("a record that fails appends nothing, and a hold appends once", func(t *testing.T) {
		is := is.New(t)
		store := newStore(t)
		boom := errors.New("the record could not be built")
		is.True(errors.Is(appendLine(store, "ledger.jsonl", func([]byte) ([]byte, error) { return nil, boom }), boom))
		last, err := lastLine(store, "ledger.jsonl")
		is.NoErr(err)
		is.Equal(last, nil) // nothing appended to a new ledger
		is.NoErr(appendLine(store, "ledger.jsonl", func([]byte) ([]byte, error) { return []byte("one\n"), nil }))
		is.True(errors.Is(appendLine(store, "ledger.jsonl", func([]byte) ([]byte, error) { return nil, boom }), boom))
		is.Equal(scan(t, store, "ledger.jsonl"), []string{"one\n"}) // nor to an old one

		held, err := lock(store, "ledger.jsonl", wait)
		is.NoErr(err)
		is.NoErr(held.Append(func([]byte) ([]byte, error) { return []byte("two\n"), nil }))
		is.True(held.Append(func([]byte) ([]byte, error) { return []byte("again\n"), nil }) != nil) // one append per hold
		is.NoErr(held.Release())
		is.NoErr(held.Release()) // a second release does nothing
		is.Equal(scan(t, store, "ledger.jsonl"), []string{"one\n", "two\n"})
	})

	t.Run("a scan stops at the first error and returns it", func(t *testing.T) {
		is := is.New(t)
		store := newStore(t)
		for _, line := range []string{"a\n", "b\n", "c\n"} {
			is.NoErr(appendLine(store, "ledger.jsonl", func([]byte) ([]byte, error) { return []byte(line), nil }))
		}
		stop := errors.New("bad line")
		var lines []string
		err := scanLedger(store, "ledger.jsonl", func(line []byte) error {
			lines = append(lines, string(line))
			if len(lines) == 2 {
				return stop
			}
			return nil
		})
		is.True(errors.Is(err, stop))
		is.Equal(lines, []string{"a\n", "b\n"})
	})

	t.Run("a scan shows the ledger as it began and holds no append up", func(t *testing.T) {
		is := is.New(t)
		store := newStore(t)
		for _, line := range []string{"one\n", "two\n"} {
			is.NoErr(appendLine(store, "ledger.jsonl", func([]byte) ([]byte, error) { return []byte(line), nil }))
		}
		var lines []string
		is.NoErr(scanLedger(store, "ledger.jsonl", func(line []byte) error {
			if len(lines) == 0 {
				is.NoErr(appendLine(store, "ledger.jsonl", func([]byte) ([]byte, error) { return []byte("three\n"), nil }))
			}
			lines = append(lines, string(line))
			return nil
		}))
		is.Equal(lines, []string{"one\n", "two\n"})
		is.Equal(scan(t, store, "ledger.jsonl"), []string{"one\n", "two\n", "three\n"})
	})

	t.Run("concurrent appenders each land once, each linked to the line before it", func(t *testing.T) {
		// A flock orders them on a disk; on a store a loser of the
		// race for the next record builds its record again. Either way
		// every record is built from the line just before it.
		is := is.New(t)
		store := newStore(t)
		const appenders = 12
		link := func(id int) func(last []byte) ([]byte, error) {
			return func(last []byte) ([]byte, error) {
				return fmt.Appendf(nil, "%d %x\n", id, sha256.Sum256(last)), nil
			}
		}
		errs := make([]error, appenders)
		var wg sync.WaitGroup
		for i := range appenders {
			wg.Go(func() { errs[i] = appendLine(store, "ledger.jsonl", link(i)) })
		}
		wg.Wait()
		for _, err := range errs {
			is.NoErr(err)
		}
		lines := scan(t, store, "ledger.jsonl")
		is.Equal(len(lines), appenders)
		ids := map[string]bool{}
		prev := ""
		for _, line := range lines {
			id, sum, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
			is.True(!ids[id]) // no record twice
			ids[id] = true
			is.Equal(sum, fmt.Sprintf("%x", sha256.Sum256([]byte(prev)))) // built from the line before it
			prev = line
		}
	})
}
