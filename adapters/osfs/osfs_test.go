package osfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metricproof/metricproof/adapters/osfs"
	"github.com/metricproof/metricproof/adapters/porttest"
)

// newSubject builds a workspace in a fresh temporary directory on disk.
func newSubject(t *testing.T, files map[string]string) porttest.Subject {
	t.Helper()
	dir := t.TempDir()
	write := func(rel, data string) {
		p := filepath.Join(dir, rel)
		if strings.HasSuffix(rel, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range files {
		write(name, data)
	}
	ws, err := osfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return porttest.Subject{
		Sources:  ws,
		Paths:    ws,
		Evidence: ws,
		Marker:   ws.Marker,
		Abs:      func(rel string) string { return filepath.Join(dir, rel) },
		List: func(rel string) []string {
			entries, err := os.ReadDir(filepath.Join(dir, rel))
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			return porttest.SortedNames(names)
		},
		Read:  func(rel string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, rel)) },
		Write: write,
	}
}

func TestSourceReaderContract(t *testing.T)  { porttest.SourceReader(t, newSubject) }
func TestPathResolverContract(t *testing.T)  { porttest.PathResolver(t, newSubject) }
func TestCancellerContract(t *testing.T)     { porttest.Canceller(t, newSubject) }
func TestEvidenceStoreContract(t *testing.T) { porttest.EvidenceStore(t, newSubject) }
