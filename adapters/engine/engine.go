// Package engine identifies the running engine: the SHA256 of the
// executable's own bytes and the build facts Go recorded in it.
package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/metricproof/metricproof/ports"
)

// Self identifies the process's own executable, hashing it once: the
// image does not change while the process runs.
type Self struct {
	identity func() (ports.EngineIdentity, error)
}

var _ ports.Engine = (*Self)(nil)

// New returns the running engine, not yet hashed.
func New() *Self { return &Self{identity: sync.OnceValues(identify)} }

// Identity implements ports.Engine: the first call hashes the executable,
// later and concurrent ones wait for it and return what it found (a panic
// of the first is the panic of every call, never a zero identity).
func (s *Self) Identity() (ports.EngineIdentity, error) { return s.identity() }

// identify hashes the running executable (protocol §6). On Linux it reads
// /proc/self/exe, which is the image actually running even if the file at
// its path was replaced since; elsewhere the resolved os.Executable path.
func identify() (ports.EngineIdentity, error) {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		exe, err := os.Executable()
		if err != nil {
			return ports.EngineIdentity{}, err
		}
		if exe, err = filepath.EvalSymlinks(exe); err != nil {
			return ports.EngineIdentity{}, err
		}
		if f, err = os.Open(exe); err != nil {
			return ports.EngineIdentity{}, err
		}
	}
	defer f.Close()
	sum, err := sumFile(f)
	if err != nil {
		return ports.EngineIdentity{}, err
	}
	id := BuildFacts()
	id.SHA256 = hex.EncodeToString(sum)
	return id, nil
}

// SumFile returns the SHA256 of the file at path, read as the engine
// reads its own executable (a read-only mapping where the platform has
// one): what "tool-runner version" and the receipt's engine_sha256 are.
func SumFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return sumFile(f)
}

// sumRead hashes f with plain reads: the way on platforms without mmap,
// and for files mmap refuses.
func sumRead(f *os.File) ([]byte, error) {
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// BuildFacts returns what the Go toolchain recorded in this binary: its Go
// version, module version, and VCS revision and dirty flag where the build
// stamped them.
func BuildFacts() ports.EngineIdentity {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ports.EngineIdentity{}
	}
	id := ports.EngineIdentity{GoVersion: info.GoVersion, ModuleVersion: info.Main.Version}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			id.VCSRevision = s.Value
		case "vcs.modified":
			if v, err := strconv.ParseBool(s.Value); err == nil {
				id.VCSModified = &v
			}
		}
	}
	return id
}

// Settings returns every build setting Go recorded in this binary, key to
// value, as "go version -m" lists them (-trimpath, CGO_ENABLED, GOOS,
// GOARCH, GOAMD64, vcs.revision, …): how to rebuild this engine. Empty
// when the binary holds no build information.
func Settings() map[string]string {
	settings := map[string]string{}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
	}
	return settings
}
