package osfs_test

import (
	"testing"

	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/adapters/osfs"
	"github.com/metricproof/metricproof/adapters/porttest"
)

// newSubject builds a workspace in a fresh temporary directory on disk.
func newSubject(t *testing.T, files map[string]string) porttest.Subject {
	t.Helper()
	tree := porttest.Tree{T: t, Fs: afero.NewOsFs(), Root: t.TempDir()}
	tree.Fill(files)
	ws, err := osfs.Open(tree.Root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	s := tree.Subject(ws, ws, ws, ws.Marker)
	s.Ledger = ws
	return s
}

func TestSourceReaderContract(t *testing.T)  { porttest.SourceReader(t, newSubject) }
func TestPathResolverContract(t *testing.T)  { porttest.PathResolver(t, newSubject) }
func TestCancellerContract(t *testing.T)     { porttest.Canceller(t, newSubject) }
func TestEvidenceStoreContract(t *testing.T) { porttest.EvidenceStore(t, newSubject) }
func TestLedgerStoreContract(t *testing.T)   { porttest.LedgerStore(t, newSubject) }
