package memfs_test

import (
	"errors"
	"os"
	"testing"

	"github.com/matryer/is"
	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/adapters/memfs"
	"github.com/metricproof/metricproof/adapters/porttest"
	"github.com/metricproof/metricproof/ports"
)

// subject builds a workspace at /work/ws of a fresh MemMapFs.
func subject(t *testing.T, files map[string]string) porttest.Subject {
	t.Helper()
	tree := porttest.Tree{T: t, Fs: afero.NewMemMapFs(), Root: "/work/ws"}
	tree.Fill(files)
	ws, err := memfs.New(tree.Fs, tree.Root)
	if err != nil {
		t.Fatal(err)
	}
	s := tree.Subject(ws, ws, ws, ws.Marker)
	s.Ledger = ws
	return s
}

func TestSourceReaderContract(t *testing.T)  { porttest.SourceReader(t, subject) }
func TestPathResolverContract(t *testing.T)  { porttest.PathResolver(t, subject) }
func TestCancellerContract(t *testing.T)     { porttest.Canceller(t, subject) }
func TestEvidenceStoreContract(t *testing.T) { porttest.EvidenceStore(t, subject) }
func TestLedgerStoreContract(t *testing.T)   { porttest.LedgerStore(t, subject) }

// statFails is a MemMapFs whose Stat fails for one path, as a disk fault
// would.
type statFails struct {
	afero.Fs
	path string
}

// errStat is the failure statFails injects.
var errStat = errors.New("input/output error")

func (s statFails) Stat(name string) (os.FileInfo, error) {
	if name == s.path {
		return nil, errStat
	}
	return s.Fs.Stat(name)
}

// A failed look at the run's name before the commit is that failure, not a
// collision: nothing stands there that the operator must move.
func TestAFailedStatBeforeTheCommitIsNotACollision(t *testing.T) {
	is := is.New(t)
	fs := statFails{Fs: afero.NewMemMapFs(), path: "/work/ws/runs/r1"}
	is.NoErr(fs.MkdirAll("/work/ws/runs", 0o755))
	ws, err := memfs.New(fs, "/work/ws")
	is.NoErr(err)
	w, err := ws.OpenWriter("runs")
	is.NoErr(err)
	defer w.Close()
	is.NoErr(w.Stage([]ports.File{{Name: "result.json", Data: []byte("{}\n")}}))
	err = w.Commit("r1")
	is.True(errors.Is(err, errStat))          // that failure, reported
	is.True(!errors.Is(err, ports.ErrExists)) // not OUTPUT_COLLISION
}
