package testutil_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/internal/testutil"
)

func TestSHA256Hex(t *testing.T) {
	is := is.New(t)
	is.Equal(testutil.SHA256Hex(nil), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") // sha256sum of nothing
	is.Equal(testutil.SHA256Hex([]byte("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
}

// The fixture is found from a package two levels down, and its copy is
// byte for byte the repository's four files.
func TestCopyFixture(t *testing.T) {
	is := is.New(t)
	is.Equal(filepath.Join(testutil.Root(t), "internal", "testutil"), mustWd(t))
	ws := testutil.CopyFixture(t, filepath.Join(t.TempDir(), "ws"))
	files := testutil.Fixture(t)
	is.Equal(len(files), 4)
	for _, name := range testutil.FixtureNames() {
		got, err := os.ReadFile(filepath.Join(ws, name))
		is.NoErr(err)
		is.Equal(string(got), string(files[name]))
		is.True(len(got) > 0)
	}
	is.True(strings.HasPrefix(string(files["data/groups.csv"]), "group_id,successes,eligible\n"))
	var names []string
	is.NoErr(filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(ws, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return err
	}))
	slices.Sort(names)
	is.Equal(names, []string{"contracts/metric-definitions.json", "data/customers.csv", "data/groups.csv", "data/transactions.csv"}) // nothing else
}

func mustWd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
