package porttest

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/ports"
)

// LedgerStore runs the ports.LedgerStore contract on Subject.Ledger, and
// the contract of the ports.Ledger it opens: each case opens the ledger
// as a call does. What only a real disk can show (another process's
// flock, a short write, a FIFO, a symlink or a hard link, a sparse file
// too large to read) is in osfs's own tests.
func LedgerStore(t *testing.T, newSubject Factory) {
	const wait = time.Second // never needed: nothing else holds the lock here, or the test fails

	t.Run("a missing or empty ledger has no last line", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{"log/": "", "log/empty.jsonl": ""})
		last, err := lastLine(s.Ledger, "log/missing.jsonl")
		is.NoErr(err)
		is.Equal(last, nil) // missing
		last, err = lastLine(s.Ledger, "log/empty.jsonl")
		is.NoErr(err)
		is.Equal(last, nil) // empty
		is.NoErr(appendOnce(s.Ledger, "log/empty.jsonl", wait, func(last []byte) ([]byte, error) {
			is.Equal(last, nil) // an empty ledger hands no last line to the record
			return []byte("first\n"), nil
		}))
		is.Equal(read(t, s, "log/empty.jsonl"), "first\n")
	})

	t.Run("the first append creates the ledger", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{"log/": ""})
		calls := 0
		is.NoErr(appendOnce(s.Ledger, "log/ledger.jsonl", wait, func(last []byte) ([]byte, error) {
			calls++
			is.Equal(last, nil)
			return []byte("first\n"), nil
		}))
		is.Equal(calls, 1) // the record is built exactly once
		is.Equal(read(t, s, "log/ledger.jsonl"), "first\n")
		is.Equal(s.List("log"), []string{"ledger.jsonl"}) // nothing else made beside it
	})

	t.Run("each append sees the line before it and adds its own", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, nil)
		var seen []string
		for _, line := range []string{"one\n", "two\n", "three\n"} {
			is.NoErr(appendOnce(s.Ledger, "ledger.jsonl", wait, func(last []byte) ([]byte, error) {
				seen = append(seen, string(last))
				return []byte(line), nil
			}))
		}
		is.Equal(seen, []string{"", "one\n", "two\n"}) // each record saw the previous line, newline included
		is.Equal(read(t, s, "ledger.jsonl"), "one\ntwo\nthree\n")
		last, err := lastLine(s.Ledger, "ledger.jsonl")
		is.NoErr(err)
		is.Equal(string(last), "three\n")
	})

	t.Run("the last line is found whatever comes before it", func(t *testing.T) {
		is := is.New(t)
		// 256 KiB without a newline, NULs and invalid UTF-8 included: no
		// scan from the start could parse it, and none is needed.
		garbage := strings.Repeat("\x00\xff not a record ", 256<<10/16)
		s := newSubject(t, map[string]string{"ledger.jsonl": garbage + "\nlast\n"})
		last, err := lastLine(s.Ledger, "ledger.jsonl")
		is.NoErr(err)
		is.Equal(string(last), "last\n")
		is.NoErr(appendOnce(s.Ledger, "ledger.jsonl", wait, func(last []byte) ([]byte, error) {
			is.Equal(string(last), "last\n")
			return []byte("next\n"), nil
		}))
		is.Equal(read(t, s, "ledger.jsonl"), garbage+"\nlast\nnext\n")
	})

	t.Run("a last line is handed over as it is, torn or empty", func(t *testing.T) {
		tests := []struct{ name, ledger, last string }{
			{"without a newline", "one\ntwo", "two"},
			{"an only line without a newline", "only", "only"},
			{"an empty line", "one\n\n", "\n"},
			{"a lone newline", "\n", "\n"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				is := is.New(t)
				s := newSubject(t, map[string]string{"ledger.jsonl": tt.ledger})
				last, err := lastLine(s.Ledger, "ledger.jsonl")
				is.NoErr(err)
				is.Equal(string(last), tt.last)
				refused := errors.New("refused")
				err = appendOnce(s.Ledger, "ledger.jsonl", wait, func(last []byte) ([]byte, error) {
					is.Equal(string(last), tt.last) // the append sees the same line
					return nil, refused
				})
				is.True(errors.Is(err, refused))                // the record's own error comes back
				is.Equal(read(t, s, "ledger.jsonl"), tt.ledger) // nothing appended
			})
		}
	})

	t.Run("a record that fails appends nothing", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{"ledger.jsonl": "one\n"})
		boom := errors.New("the record could not be built")
		err := appendOnce(s.Ledger, "ledger.jsonl", wait, func([]byte) ([]byte, error) { return nil, boom })
		is.True(errors.Is(err, boom)) // the record's own error comes back
		is.Equal(read(t, s, "ledger.jsonl"), "one\n")

		err = appendOnce(s.Ledger, "new.jsonl", wait, func([]byte) ([]byte, error) { return nil, boom })
		is.True(errors.Is(err, boom))
		if data, err := s.Read("new.jsonl"); err == nil {
			is.Equal(string(data), "") // a ledger it created holds no record
		}
	})

	t.Run("something other than a regular file is ErrNotRegular", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{"ledger.jsonl/": "", "ledger.jsonl/inside": "x"})
		_, err := lastLine(s.Ledger, "ledger.jsonl")
		is.True(errors.Is(err, ports.ErrNotRegular)) // LastLine
		err = appendOnce(s.Ledger, "ledger.jsonl", wait, func([]byte) ([]byte, error) {
			t.Error("the record was built for a directory")
			return []byte("x\n"), nil
		})
		is.True(errors.Is(err, ports.ErrNotRegular)) // Append
		err = scan(s.Ledger, "ledger.jsonl", func([]byte) error { return nil })
		is.True(errors.Is(err, ports.ErrNotRegular)) // Scan
		is.Equal(s.List("ledger.jsonl"), []string{"inside"})
	})

	t.Run("a scan hands over every line in order", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{"ledger.jsonl": "a\nb\n\nc", "empty.jsonl": ""})
		var lines []string
		is.NoErr(scan(s.Ledger, "ledger.jsonl", func(line []byte) error {
			lines = append(lines, string(line))
			return nil
		}))
		is.Equal(lines, []string{"a\n", "b\n", "\n", "c"}) // each with its newline, the torn last as it is

		calls := 0
		is.NoErr(scan(s.Ledger, "empty.jsonl", func([]byte) error { calls++; return nil }))
		is.Equal(calls, 0) // an empty ledger has no line
	})

	t.Run("a scan stops at the first error and returns it", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{"ledger.jsonl": "a\nb\nc\n"})
		stop := errors.New("bad line")
		var lines []string
		err := scan(s.Ledger, "ledger.jsonl", func(line []byte) error {
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
		// A check of a long ledger must not make the calls of that time
		// wait, and fail, behind it.
		is := is.New(t)
		s := newSubject(t, map[string]string{"ledger.jsonl": "one\ntwo\n"})
		var lines []string
		is.NoErr(scan(s.Ledger, "ledger.jsonl", func(line []byte) error {
			if len(lines) == 0 {
				is.NoErr(appendOnce(s.Ledger, "ledger.jsonl", wait, func([]byte) ([]byte, error) { return []byte("three\n"), nil })) // not held up
			}
			lines = append(lines, string(line))
			return nil
		}))
		is.Equal(lines, []string{"one\n", "two\n"}) // the ledger as the scan began
		is.Equal(read(t, s, "ledger.jsonl"), "one\ntwo\nthree\n")
	})

	t.Run("a held ledger excludes every other holder until it is released", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{"ledger.jsonl": "one\n"})
		held, err := lock(t, s.Ledger, "ledger.jsonl", wait)
		is.NoErr(err)
		last, err := held.LastLine()
		is.NoErr(err)
		is.Equal(string(last), "one\n") // the last line, under the hold
		_, err = lock(t, s.Ledger, "ledger.jsonl", 20*time.Millisecond)
		is.True(errors.Is(err, ports.ErrBusy)) // a second holder waits its wait, then gives up
		err = appendOnce(s.Ledger, "ledger.jsonl", 20*time.Millisecond, func([]byte) ([]byte, error) {
			t.Error("a record was built beside the hold")
			return []byte("x\n"), nil
		})
		is.True(errors.Is(err, ports.ErrBusy)) // so does an append
		is.NoErr(held.Append(func(last []byte) ([]byte, error) {
			is.Equal(string(last), "one\n")
			return []byte("two\n"), nil
		}))
		is.True(held.Append(func([]byte) ([]byte, error) { return []byte("again\n"), nil }) != nil) // one append per hold
		is.NoErr(held.Release())
		is.NoErr(held.Release()) // a second release does nothing
		is.Equal(read(t, s, "ledger.jsonl"), "one\ntwo\n")
		is.NoErr(appendOnce(s.Ledger, "ledger.jsonl", wait, func(last []byte) ([]byte, error) {
			is.Equal(string(last), "two\n")
			return []byte("three\n"), nil
		}))
		is.Equal(read(t, s, "ledger.jsonl"), "one\ntwo\nthree\n")
	})

	t.Run("a waiting holder gets the lock once it is released", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{"ledger.jsonl": "one\n"})
		held, err := lock(t, s.Ledger, "ledger.jsonl", wait)
		is.NoErr(err)
		done := make(chan error, 1)
		go func() {
			done <- appendOnce(s.Ledger, "ledger.jsonl", time.Minute, func(last []byte) ([]byte, error) {
				if string(last) != "two\n" {
					return nil, errors.New("the record was built before the hold's append")
				}
				return []byte("three\n"), nil
			})
		}()
		is.NoErr(held.Append(func([]byte) ([]byte, error) { return []byte("two\n"), nil }))
		is.NoErr(held.Release())
		is.NoErr(<-done)
		is.Equal(read(t, s, "ledger.jsonl"), "one\ntwo\nthree\n")
	})

	t.Run("a ledger is private, and one open to others is made so by its lock, never by a read", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{"old.jsonl": "one\n"})
		is.NoErr(appendOnce(s.Ledger, "new.jsonl", wait, func([]byte) ([]byte, error) { return []byte("first\n"), nil }))
		is.Equal(s.Mode("new.jsonl"), fs.FileMode(0o600)) // created 0600

		s.Chmod("old.jsonl", 0o644) // as an earlier version made it
		_, err := lastLine(s.Ledger, "old.jsonl")
		is.NoErr(err)
		is.NoErr(scan(s.Ledger, "old.jsonl", func([]byte) error { return nil }))
		is.Equal(s.Mode("old.jsonl"), fs.FileMode(0o644)) // reads change nothing
		held, err := lock(t, s.Ledger, "old.jsonl", wait)
		is.NoErr(err)
		is.Equal(s.Mode("old.jsonl"), fs.FileMode(0o600)) // the lock makes it private
		is.NoErr(held.Release())
		is.Equal(read(t, s, "old.jsonl"), "one\n") // and writes nothing
	})

	// protocol §11: the ledger's directory is opened once, and every later
	// access goes through that handle. Another process that may write in
	// the parent directory renames the ledger's directory away and puts
	// another in its place, holding a decoy ledger: the last line, the
	// lock, the append and the scan all still reach the ledger that was
	// opened, now under the other name, and the decoy is never touched.
	// (A symlink put in its place is osfs's own test: memory has none.)
	t.Run("a directory swapped after OpenLedger redirects no access", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{"log/ledger.jsonl": "one\n"})
		l := openLedger(t, s.Ledger, "log/ledger.jsonl")
		s.Rename("log", "log.real")
		s.Write("log/ledger.jsonl", "decoy\n")

		last, err := l.LastLine(context.Background())
		is.NoErr(err)
		is.Equal(string(last), "one\n") // LastLine
		held, err := l.Lock(context.Background(), wait)
		is.NoErr(err)
		last, err = held.LastLine()
		is.NoErr(err)
		is.Equal(string(last), "one\n") // the held ledger's LastLine
		is.NoErr(held.Append(func(last []byte) ([]byte, error) {
			is.Equal(string(last), "one\n") // the record is built on the opened ledger
			return []byte("two\n"), nil
		}))
		is.NoErr(held.Release())
		var lines []string
		is.NoErr(l.Scan(context.Background(), func(line []byte) error {
			lines = append(lines, string(line))
			return nil
		}))
		is.Equal(lines, []string{"one\n", "two\n"}) // Scan
		is.Equal(read(t, s, "log.real/ledger.jsonl"), "one\ntwo\n")
		is.Equal(read(t, s, "log/ledger.jsonl"), "decoy\n") // the decoy untouched
	})

	t.Run("a ledger created after its directory was swapped is created in the opened one", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{"log/": ""})
		l := openLedger(t, s.Ledger, "log/ledger.jsonl")
		s.Rename("log", "log.real")
		s.Write("log/", "")
		last, err := l.LastLine(context.Background())
		is.NoErr(err)
		is.Equal(last, nil) // still none
		held, err := l.Lock(context.Background(), wait)
		is.NoErr(err)
		is.NoErr(held.Append(func([]byte) ([]byte, error) { return []byte("first\n"), nil }))
		is.NoErr(held.Release())
		is.Equal(read(t, s, "log.real/ledger.jsonl"), "first\n")
		is.Equal(s.List("log"), []string{}) // nothing made where the path now leads
	})

	t.Run("a hold outlives its ledger's Close", func(t *testing.T) {
		// A server closes the ledger at its end; a call's hold taken
		// before still appends and releases.
		is := is.New(t)
		s := newSubject(t, map[string]string{"ledger.jsonl": "one\n"})
		l, err := s.Ledger.OpenLedger("ledger.jsonl")
		is.NoErr(err)
		held, err := l.Lock(context.Background(), wait)
		is.NoErr(err)
		is.NoErr(l.Close())
		is.NoErr(held.Append(func([]byte) ([]byte, error) { return []byte("two\n"), nil }))
		is.NoErr(held.Release())
		is.Equal(read(t, s, "ledger.jsonl"), "one\ntwo\n")
	})

	t.Run("a ledger whose directory is gone or a file cannot be opened", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, map[string]string{"file": "x"})
		_, err := s.Ledger.OpenLedger("missing/ledger.jsonl")
		is.True(errors.Is(err, ports.ErrMissing)) // no directory
		_, err = s.Ledger.OpenLedger("file/ledger.jsonl")
		is.True(errors.Is(err, ports.ErrNotDir)) // a file where the directory should be
		is.Equal(s.List("."), []string{"file"})  // nothing created
	})

	t.Run("a scan of a missing ledger is ErrMissing", func(t *testing.T) {
		is := is.New(t)
		s := newSubject(t, nil)
		err := scan(s.Ledger, "ledger.jsonl", func([]byte) error { return nil })
		is.True(errors.Is(err, ports.ErrMissing))
		is.Equal(s.List("."), []string{}) // and a scan creates nothing
	})
}

// appendOnce appends one record as a call does: the ledger opened, the
// lock, one append through the hold, the release.
func appendOnce(store ports.LedgerStore, rel string, wait time.Duration, record func(last []byte) ([]byte, error)) error {
	l, err := store.OpenLedger(rel)
	if err != nil {
		return err
	}
	defer l.Close()
	held, err := l.Lock(context.Background(), wait)
	if err != nil {
		return err
	}
	defer held.Release()
	return held.Append(record)
}

// lastLine opens the ledger at rel and reads its last line.
func lastLine(store ports.LedgerStore, rel string) ([]byte, error) {
	l, err := store.OpenLedger(rel)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.LastLine(context.Background())
}

// scan opens the ledger at rel and scans it.
func scan(store ports.LedgerStore, rel string, line func([]byte) error) error {
	l, err := store.OpenLedger(rel)
	if err != nil {
		return err
	}
	defer l.Close()
	return l.Scan(context.Background(), line)
}

// lock opens the ledger at rel and takes its lock; the ledger is closed
// when the test ends.
func lock(t *testing.T, store ports.LedgerStore, rel string, wait time.Duration) (ports.HeldLedger, error) {
	t.Helper()
	l, err := store.OpenLedger(rel)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { l.Close() })
	return l.Lock(context.Background(), wait)
}

// openLedger opens the ledger at rel, failing the test if it cannot; it is
// closed when the test ends.
func openLedger(t *testing.T, store ports.LedgerStore, rel string) ports.Ledger {
	t.Helper()
	l, err := store.OpenLedger(rel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// read returns a workspace-relative file's bytes as a string.
func read(t *testing.T, s Subject, rel string) string {
	t.Helper()
	data, err := s.Read(rel)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
