// Package testutil holds the few helpers the tests of several packages
// share: the shipped fixture (the repository's data/ and contracts/ files
// that protocol §7 describes), its copy into a workspace, the SHA256 of
// bytes as lowercase hex, signing key files as protocol §10 reads them,
// the switch of the long suites, and a buffer a test reads while a server
// writes to it. It is for tests only; the standard library alone.
package testutil

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// LongEnv names the environment variable that runs the long suites:
// bursts of hundreds of processes, kill and signal sweeps, races that must
// be seen to happen, peak memory, builds from scratch. They take minutes,
// and what they assert (a race observed, a peak RSS, every call of a burst
// answered within the ledger's wait) holds on a machine that is not
// otherwise loaded, so a plain go test ./... skips them and .ci/run sets
// it (docs/development.md). An environment variable rather than a build
// tag keeps one build and works with go test -run as it is.
const LongEnv = "METRICPROOF_LONG"

// Long reports whether the long suites run: LongEnv is "1".
func Long() bool { return os.Getenv(LongEnv) == "1" }

// SkipUnlessLong skips t, a long test, unless LongEnv is set, saying in one
// line how to run it.
func SkipUnlessLong(t testing.TB) {
	t.Helper()
	if Long() {
		return
	}
	t.Skip(howToRunLong(t.Name(), packageDir(t)))
}

// howToRunLong is the one line a skipped long test logs.
func howToRunLong(test, dir string) string {
	return fmt.Sprintf("long test: run it with %s=1 go test -run '^%s$' %s", LongEnv, test, dir)
}

// packageDir is the working directory (a test's is its package's)
// relative to the repository, as go test takes it: "./cmd/tool-runner".
func packageDir(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	rel, err := filepath.Rel(Root(t), wd)
	if err != nil || rel == "." {
		return "."
	}
	return "./" + filepath.ToSlash(rel)
}

// FixtureNames are the shipped fixture's four files, relative to the
// repository and to a workspace alike.
func FixtureNames() []string {
	return []string{"data/transactions.csv", "data/groups.csv", "data/customers.csv", "contracts/metric-definitions.json"}
}

// Root is the repository: the nearest directory at or above the working
// directory (a test's is its package's) that holds go.mod.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod at or above the working directory")
		}
		dir = parent
	}
}

// Fixture reads the shipped fixture: each file's bytes by its name.
func Fixture(t testing.TB) map[string][]byte {
	t.Helper()
	root := Root(t)
	files := map[string][]byte{}
	for _, name := range FixtureNames() {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	return files
}

// CopyFixture writes the shipped fixture into the workspace dir and
// returns dir.
func CopyFixture(t testing.TB, dir string) string {
	t.Helper()
	if err := WriteFiles(dir, Fixture(t)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// WriteFiles writes each file at its slash-separated name under dir:
// directories 0755, files 0644 (less the umask), as a checkout has them.
func WriteFiles(dir string, files map[string][]byte) error {
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// SHA256Hex is the SHA256 of b as 64 lowercase hex digits.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// WriteKeyPair makes an Ed25519 key pair with crypto/ed25519 and writes it
// as WriteKeyFiles does.
func WriteKeyPair(dir, name string) (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return priv, WriteKeyFiles(dir, name, priv)
}

// WriteKeyFiles writes priv as dir/name.pem (PKCS#8 PEM, mode 0600) and
// its public key as dir/name.pub.pem (SPKI PEM, mode 0644), whatever the
// umask, making dir (0700) if it is missing.
func WriteKeyFiles(dir, name string, priv crypto.Signer) error {
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		return err
	}
	if err := writeModeFile(filepath.Join(dir, name+".pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}), 0o600); err != nil {
		return err
	}
	return writeModeFile(filepath.Join(dir, name+".pub.pem"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644)
}

// writeModeFile writes data at path with exactly mode, whatever the
// umask, making its directory (0700) if it is missing.
func writeModeFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}
