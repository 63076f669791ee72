package engine_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"runtime"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/engine"
)

func TestIdentityIsTheHashOfThisExecutable(t *testing.T) {
	is := is.New(t)
	exe, err := os.Executable()
	is.NoErr(err)
	data, err := os.ReadFile(exe)
	is.NoErr(err)
	sum := sha256.Sum256(data)

	self := engine.New()
	id, err := self.Identity()
	is.NoErr(err)
	is.Equal(id.SHA256, hex.EncodeToString(sum[:]))
	is.Equal(id.GoVersion, runtime.Version())
	again, err := self.Identity() // hashed once, the same answer
	is.NoErr(err)
	is.Equal(again, id)
}
