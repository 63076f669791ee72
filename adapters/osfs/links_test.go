//go:build unix

package osfs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/osfs"
	"github.com/metricproof/metricproof/ports"
)

// A lock file (the writer lock, the ledger) that is a second name of a
// file outside the workspace is refused with ports.ErrLinked through its
// open descriptor, before its mode is changed or a byte written: the
// outside file keeps its mode 0644 and its bytes. Only a real disk has
// hard links.
func TestAHardLinkedLockFileIsRefusedBeforeAnyChange(t *testing.T) {
	tests := []struct {
		name string
		rel  string // where the second name goes
		use  func(ws *osfs.Workspace) error
	}{
		{"the writer lock", "runs/" + ports.LockFile, func(ws *osfs.Workspace) error {
			w, err := ws.OpenWriter("runs")
			if err == nil {
				w.Close()
			}
			return err
		}},
		{"the ledger's last line", "ledger.jsonl", func(ws *osfs.Workspace) error {
			l, err := ws.OpenLedger("ledger.jsonl")
			if err != nil {
				return err
			}
			defer l.Close()
			_, err = l.LastLine(context.Background())
			return err
		}},
		{"the ledger's lock", "ledger.jsonl", func(ws *osfs.Workspace) error {
			l, err := ws.OpenLedger("ledger.jsonl")
			if err != nil {
				return err
			}
			defer l.Close()
			held, err := l.Lock(context.Background(), time.Second)
			if err != nil {
				return err
			}
			defer held.Release()
			return held.Append(func([]byte) ([]byte, error) { return []byte("record\n"), nil })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ws, outside := layout(t)
			shared := filepath.Join(outside, "team.cfg")
			is.NoErr(os.WriteFile(shared, []byte("shared\n"), 0o644))
			is.NoErr(os.Link(shared, filepath.Join(ws, tt.rel)))

			err := tt.use(open(t, ws))
			is.True(errors.Is(err, ports.ErrLinked)) // refused, by name
			fi, err := os.Stat(shared)
			is.NoErr(err)
			is.Equal(fi.Mode().Perm(), os.FileMode(0o644)) // its mode untouched
			data, err := os.ReadFile(shared)
			is.NoErr(err)
			is.Equal(string(data), "shared\n") // and its bytes
		})
	}
}

// Reading the whole ledger (tool-runner ledger, report) writes nothing and
// changes no mode, so it reads a ledger of any link count: an operator may
// keep a second name of it, and a check of it still tells what it holds.
func TestAScanReadsAHardLinkedLedger(t *testing.T) {
	is := is.New(t)
	ws, outside := layout(t)
	shared := filepath.Join(outside, "copy.jsonl")
	is.NoErr(os.WriteFile(shared, []byte("one\n"), 0o644))
	is.NoErr(os.Link(shared, filepath.Join(ws, "ledger.jsonl")))
	var lines []string
	l, err := open(t, ws).OpenLedger("ledger.jsonl")
	is.NoErr(err)
	defer l.Close()
	is.NoErr(l.Scan(context.Background(), func(line []byte) error {
		lines = append(lines, string(line))
		return nil
	}))
	is.Equal(lines, []string{"one\n"})
}
