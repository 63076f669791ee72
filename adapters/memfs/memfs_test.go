package memfs_test

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/adapters/memfs"
	"github.com/metricproof/metricproof/adapters/porttest"
)

const root = "/work/ws"

func subject(t *testing.T, files map[string]string) porttest.Subject {
	t.Helper()
	fsys := afero.NewMemMapFs()
	write := func(rel, data string) {
		p := path.Join(root, rel)
		if strings.HasSuffix(rel, "/") {
			if err := fsys.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := fsys.MkdirAll(path.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := afero.WriteFile(fsys, p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("./", "")
	for name, data := range files {
		write(name, data)
	}
	ws, err := memfs.New(fsys, root)
	if err != nil {
		t.Fatal(err)
	}
	return porttest.Subject{
		Sources:  ws,
		Paths:    ws,
		Evidence: ws,
		Marker:   ws.Marker,
		Abs:      func(rel string) string { return path.Join(root, rel) },
		List: func(rel string) []string {
			entries, err := afero.ReadDir(fsys, path.Join(root, rel))
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
		Read:  func(rel string) ([]byte, error) { return afero.ReadFile(fsys, path.Join(root, rel)) },
		Write: write,
	}
}

func TestSourceReaderContract(t *testing.T)  { porttest.SourceReader(t, subject) }
func TestPathResolverContract(t *testing.T)  { porttest.PathResolver(t, subject) }
func TestCancellerContract(t *testing.T)     { porttest.Canceller(t, subject) }
func TestEvidenceStoreContract(t *testing.T) { porttest.EvidenceStore(t, subject) }
