package osfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/ports"
)

// On Windows the writer and the ledger are refused before anything is
// created, and sources are still read. CI compiles this test for
// windows/amd64; it runs on a Windows machine only.
func TestWindowsRefusesTheWriterAndTheLedgerAndWritesNothing(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	is.NoErr(os.MkdirAll(filepath.Join(dir, "data"), 0o755))
	is.NoErr(os.WriteFile(filepath.Join(dir, "data", "groups.csv"), []byte("x\n"), 0o644))
	ws, err := Open(dir)
	is.NoErr(err)
	defer ws.Close()
	_, err = ws.OpenWriter("runs")
	is.True(errors.Is(err, ports.ErrPlatform))
	_, err = ws.lastLineAt(context.Background(), "ledger.jsonl")
	is.True(errors.Is(err, ports.ErrPlatform))
	_, err = ws.lockAt(context.Background(), "ledger.jsonl", 0)
	is.True(errors.Is(err, ports.ErrPlatform))
	is.True(errors.Is(ws.scanAt(context.Background(), "ledger.jsonl", func([]byte) error { return nil }), ports.ErrPlatform))
	entries, err := os.ReadDir(dir)
	is.NoErr(err)
	is.Equal(len(entries), 1) // only data/: no runs/, no ledger
	data, err := ws.ReadSource("data/groups.csv", 10)
	is.NoErr(err)
	is.Equal(string(data), "x\n")
}
