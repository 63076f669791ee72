package memfs_test

import (
	"testing"

	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/adapters/memfs"
	"github.com/metricproof/metricproof/adapters/porttest"
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
	return tree.Subject(ws, ws, ws, ws.Marker)
}

func TestSourceReaderContract(t *testing.T)  { porttest.SourceReader(t, subject) }
func TestPathResolverContract(t *testing.T)  { porttest.PathResolver(t, subject) }
func TestCancellerContract(t *testing.T)     { porttest.Canceller(t, subject) }
func TestEvidenceStoreContract(t *testing.T) { porttest.EvidenceStore(t, subject) }
