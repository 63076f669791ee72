package testutil_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
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

// A written key pair is what protocol §10 reads: a PKCS#8 PEM private key,
// mode 0600, whose public key is the SPKI PEM beside it, mode 0644, in a
// directory made 0700.
func TestWriteKeyPair(t *testing.T) {
	is := is.New(t)
	dir := filepath.Join(t.TempDir(), "keys")
	priv, err := testutil.WriteKeyPair(dir, "k")
	is.NoErr(err)
	fi, err := os.Stat(dir)
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), os.FileMode(0o700))
	for _, f := range []struct {
		name, typ string
		mode      os.FileMode
	}{{"k.pem", "PRIVATE KEY", 0o600}, {"k.pub.pem", "PUBLIC KEY", 0o644}} {
		fi, err := os.Stat(filepath.Join(dir, f.name))
		is.NoErr(err)
		is.Equal(fi.Mode().Perm(), f.mode) // f.name's mode
		data, err := os.ReadFile(filepath.Join(dir, f.name))
		is.NoErr(err)
		block, rest := pem.Decode(data)
		is.True(block != nil && len(rest) == 0)
		is.Equal(block.Type, f.typ)
		if f.typ == "PRIVATE KEY" {
			key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			is.NoErr(err)
			is.True(priv.Equal(key)) // the key returned
		} else {
			key, err := x509.ParsePKIXPublicKey(block.Bytes)
			is.NoErr(err)
			is.True(priv.Public().(ed25519.PublicKey).Equal(key)) // its public key
		}
	}
}
