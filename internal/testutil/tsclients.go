package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TSClientsEnv names the environment variable that makes a test needing
// the official TypeScript MCP clients fail, never skip, when node or the
// clients are missing: .ci/run installs them and sets it.
const TSClientsEnv = "METRICPROOF_REQUIRE_TS"

// TSClientsDir is where the TypeScript clients and their driver script
// live, from the repository's root; npm ci --prefix installs them there.
const TSClientsDir = "adapters/remote/testdata/tsclient"

// TSClients returns node's path and the directory of the TypeScript
// clients' driver (client.mjs), or skips t saying how to install them
// (fails it instead under TSClientsEnv=1).
func TSClients(t testing.TB) (node, dir string) {
	t.Helper()
	dir = filepath.Join(Root(t), filepath.FromSlash(TSClientsDir))
	missing := func(why string) {
		t.Helper()
		if os.Getenv(TSClientsEnv) == "1" {
			t.Fatalf("%s (%s=1 requires them)", why, TSClientsEnv)
		}
		t.Skip(why)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("no node: the TypeScript clients were not run (apt-get install nodejs npm)")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "client")); err != nil {
		missing("the TypeScript clients are not installed: npm ci --prefix " + TSClientsDir)
	}
	return node, dir
}
