package metricproof_test

import (
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/domain"
)

const module = "github.com/metricproof/metricproof"

// layers says what each top-level folder's packages may import, in the
// manner of Go's own src/go/build/deps_test.go. Dependencies point inward:
// driven adapters → ports; app → ports, domain; the driving adapters (the
// transports) → app; cmd wires everything. ports holds only interfaces
// and the standard library's types; contracts only embeds its files.
// Imports of a package's own layer (its subpackages) are allowed except
// where noted; the standard library is allowed except the I/O the domain
// must never do.
type layer struct {
	// internal lists the module's top-level folders this layer may import.
	internal []string
	// external lists the third-party module paths it may import.
	external []string
	// anything: no restriction at all (the composition roots).
	anything bool
}

func layers() map[string]layer {
	return map[string]layer{
		"":          {},
		"domain":    {internal: []string{"domain"}, external: []string{"github.com/cockroachdb/apd/v3"}},
		"ports":     {},
		"app":       {internal: []string{"domain", "ports", "app"}, external: []string{"github.com/go-json-experiment/json"}},
		"pure":      {internal: []string{"domain", "app"}, external: []string{"github.com/go-json-experiment/json"}},
		"helpers":   {internal: []string{"domain", "ports", "app"}, external: []string{"github.com/go-json-experiment/json"}},
		"adapters":  {internal: []string{"domain", "ports", "adapters"}, external: []string{"github.com/spf13/afero", "golang.org/x/sys/unix", "github.com/matryer/is"}},
		"confining": {internal: []string{"domain", "ports"}, external: []string{"github.com/landlock-lsm/go-landlock", "golang.org/x/sys/unix"}},
		"store":     {internal: []string{"domain", "ports", "adapters"}, external: []string{"github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go", "golang.org/x/sys/unix"}},
		"driving":   {internal: []string{"domain", "ports", "app", "adapters", "contracts"}, external: []string{"github.com/modelcontextprotocol/go-sdk", "github.com/go-json-experiment/json"}},
		"checker":   {internal: []string{"domain", "app"}, external: []string{"github.com/go-json-experiment/json", "github.com/modelcontextprotocol/go-sdk/jsonrpc"}},
		"remote":    {internal: []string{"ports", "adapters"}, external: []string{"github.com/modelcontextprotocol/go-sdk", "github.com/go-jose/go-jose/v4", "golang.org/x/sync/semaphore"}},
		"mcptest":   {internal: []string{"ports", "app", "adapters", "internal"}, external: []string{"github.com/matryer/is", "github.com/spf13/afero", "github.com/modelcontextprotocol/go-sdk/mcp"}},
		"contracts": {},
		"internal":  {internal: []string{"internal"}},
		"wiring":    {anything: true},
		"devtools":  {anything: true},
		"cmd":       {anything: true},
	}
}

// drivingAdapters are the transports, the command line they share
// (adapters/cli) and the reviewer's page that the report command renders
// from the app's values: they drive the app, so they may import it (the
// driven adapters never do); the transports never import one another.
func drivingAdapters() []string {
	return []string{module + "/adapters/stdio", module + "/adapters/mcp", cliPackage, module + "/adapters/report"}
}

// remotePackages are the HTTP front of the remote MCP server and its token
// verifier (with its test issuer): driving-side infrastructure that the MCP
// transport or the composition root uses. They never import the app; the
// front imports the verifier, and nothing else of the adapters.
func remotePackages() []string {
	return []string{module + "/adapters/remote", module + "/adapters/oauth"}
}

// inRemote reports whether pkg is one of remotePackages or below one.
func inRemote(pkg string) bool {
	for _, r := range remotePackages() {
		if pkg == r || strings.HasPrefix(pkg, r+"/") {
			return true
		}
	}
	return false
}

// wirePackage composes the real-disk adapters into the app's ports, for
// cmd/tool-runner and for tests that run the program in their own
// process: a composition root, which no layer but cmd imports.
const wirePackage = module + "/internal/wire"

// testutilPackage holds the helpers the tests of several packages share
// (the shipped fixture, SHA256 hex): only tests import it, never a
// package's own code, not even cmd's.
const testutilPackage = module + "/internal/testutil"

// toolsFolder holds the developer tools (the benchmark, the one-shot
// differ, the build command they share): programs a developer runs, not
// the product, so they may import anything, and nothing but other tools
// and tests imports them.
const toolsFolder = module + "/internal/tools/"

// cliPackage parses the command line for both transports: the one adapter
// the transports may import.
const cliPackage = module + "/adapters/cli"

// purePackages are the app's helpers that do one job each with no I/O:
// they import the standard library (without I/O or the clock; the ledger
// imports time to parse a record's), the domain and one another, never the
// app, the ports or a module.
func purePackages() []string {
	return []string{module + "/app/attest", module + "/app/jsonout", module + "/app/jsonvalue", module + "/app/ledger", module + "/app/protocol"}
}

// helperPackages do one job each for the use cases over the ports (the
// run's saved files, the operator's places, a port failure's wording):
// they import the ports, the domain, the pure packages
// and one another, never the app itself or its call layer, so the use
// cases depend on them and not the other way.
func helperPackages() []string {
	return []string{module + "/app/evidence", module + "/app/place", module + "/app/remedy"}
}

// landlockPackage confines the process with Landlock (protocol §16): a
// driven adapter of its own row, the one package that may import
// go-landlock, and only the domain's source names and the ports besides.
// No adapter, app or transport imports it (their rows forbid it); the
// composition roots do.
const landlockPackage = module + "/adapters/landlock"

// messagePackage is MCP's checker of one message (protocol §9.7): a pure
// function over bytes, its own row. It imports the domain and
// app/protocol (the request limit, SHA256), the JSON decoder and the SDK's
// JSON-RPC package, no I/O; only the MCP server (adapters/mcp and below)
// imports it.
const messagePackage = module + "/adapters/mcp/message"

// mcphttpPackage is MCP's Streamable HTTP transport: a driving adapter
// over the MCP server (adapters/mcp), behind the HTTP front; the one
// transport that imports another adapter's package, and the only one
// that imports the front and the token verifier.
const mcphttpPackage = module + "/adapters/mcp/mcphttp"

// mcptestPackage is the harness the tests of the MCP server and of its
// HTTP transport share (an in-memory workspace, the call layer over it, a
// raw stdio session): like testutil, which it alone of the non-test code
// may import, only tests import it; it composes the adapters as a test
// does, but never the real disk's (internal/wire).
const mcptestPackage = module + "/adapters/mcp/internal/mcptest"

// storePackage keeps the evidence and the ledger in S3-compatible object
// storage: a driven adapter like the others, and the one that may import
// the S3 client (its s3test, which starts a real server for tests, too).
const storePackage = module + "/adapters/s3store"

// layerOf names the row of the table a package's folder belongs to.
func layerOf(top, pkg string) string {
	if slices.Contains(purePackages(), pkg) {
		return "pure"
	}
	if slices.Contains(helperPackages(), pkg) {
		return "helpers"
	}
	if pkg == landlockPackage {
		return "confining"
	}
	if pkg == messagePackage {
		return "checker"
	}
	if pkg == mcptestPackage {
		return "mcptest"
	}
	if pkg == storePackage || strings.HasPrefix(pkg, storePackage+"/") {
		return "store"
	}
	if pkg == wirePackage {
		return "wiring"
	}
	if strings.HasPrefix(pkg, toolsFolder) {
		return "devtools"
	}
	if inRemote(pkg) {
		return "remote"
	}
	for _, d := range drivingAdapters() {
		if pkg == d || strings.HasPrefix(pkg, d+"/") {
			return "driving"
		}
	}
	return top
}

// pureDomain lists standard packages the domain may not import: files,
// processes, the network, the clock.
func pureDomain() []string {
	return []string{"os", "io/fs", "io/ioutil", "path/filepath", "net", "net/http", "syscall", "time", "runtime/debug", "os/exec", "log", "embed"}
}

// check reports whether a package in folder top may import imp.
func check(top, pkg, imp string) error {
	top = layerOf(top, pkg)
	l, ok := layers()[top]
	if !ok {
		return fmt.Errorf("%s: folder %q is not in the layer table; add it to ARCHITECTURE.md and layers()", pkg, top)
	}
	if imp == testutilPackage && top != "mcptest" || imp == mcptestPackage {
		return fmt.Errorf("%s imports %s: only tests do", pkg, imp)
	}
	if strings.HasPrefix(imp, toolsFolder) && top != "devtools" {
		return fmt.Errorf("%s imports %s: only the developer tools and tests do", pkg, imp)
	}
	if l.anything {
		return nil
	}
	if imp == wirePackage {
		return fmt.Errorf("%s imports %s: only the composition roots (cmd) do", pkg, imp)
	}
	if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
		target, _, _ := strings.Cut(rest, "/")
		if !slices.Contains(l.internal, target) {
			return fmt.Errorf("%s imports %s: %s may not depend on %s", pkg, imp, top, target)
		}
		if top == "pure" && target == "app" && !slices.Contains(purePackages(), imp) {
			return fmt.Errorf("%s imports %s: a pure package imports only the domain and other pure packages", pkg, imp)
		}
		if top == "checker" && target == "app" && imp != module+"/app/protocol" {
			return fmt.Errorf("%s imports %s: the checker imports only app/protocol of the app", pkg, imp)
		}
		if imp == messagePackage && pkg != module+"/adapters/mcp" && !strings.HasPrefix(pkg, module+"/adapters/mcp/") {
			return fmt.Errorf("%s imports %s: only the MCP server runs its checker", pkg, imp)
		}
		if top == "helpers" && target == "app" && !slices.Contains(purePackages(), imp) && !slices.Contains(helperPackages(), imp) {
			return fmt.Errorf("%s imports %s: a helper of the use cases imports only the pure packages and other helpers of app", pkg, imp)
		}
		if top == "remote" && target == "adapters" && !strings.HasPrefix(imp, module+"/adapters/oauth") && !strings.HasPrefix(rest, "adapters/internal/") {
			return fmt.Errorf("%s imports %s: the remote front imports only the token verifier of the adapters", pkg, imp)
		}
		if (top == "adapters" || top == "driving" || top == "store") && target == "adapters" && !strings.HasPrefix(rest, "adapters/internal/") && !strings.HasSuffix(pkg, "/porttest") &&
			!(top == "driving" && (imp == cliPackage || imp == messagePackage || pkg == mcphttpPackage && (inRemote(imp) || imp == module+"/adapters/mcp"))) {
			return fmt.Errorf("%s imports %s: adapters never import each other", pkg, imp)
		}
		return nil
	}
	first, _, _ := strings.Cut(imp, "/")
	if !strings.Contains(first, ".") { // the standard library
		if (top == "domain" || top == "checker") && slices.Contains(pureDomain(), imp) || top == "pure" && !(imp == "time" && pkg == module+"/app/ledger") && slices.Contains(pureDomain(), imp) {
			return fmt.Errorf("%s imports %s: the domain and the pure packages do no I/O and read no clock", pkg, imp)
		}
		return nil
	}
	for _, ext := range l.external {
		if imp == ext || strings.HasPrefix(imp, ext+"/") {
			return nil
		}
	}
	return fmt.Errorf("%s imports %s: %s may not depend on that module", pkg, imp, top)
}

// TestDependenciesPointInward checks every package's non-test imports
// against the layer table.
func TestDependenciesPointInward(t *testing.T) {
	is := is.New(t)
	packages := 0
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if dir != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "runs") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(dir, 0)
		if _, none := err.(*build.NoGoError); none {
			return nil
		}
		if err != nil {
			return err
		}
		packages++
		top, _, _ := strings.Cut(filepath.ToSlash(dir), "/")
		if top == "." {
			top = ""
		}
		path := module
		if dir != "." {
			path += "/" + filepath.ToSlash(dir)
		}
		for _, imp := range pkg.Imports {
			if err := check(top, path, imp); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	is.NoErr(err)
	is.True(packages > 10) // the walk found the tree
}

// The table itself can fail: each of these breaks a rule.
func TestTheLayerTableRefusesWrongImports(t *testing.T) {
	tests := []struct{ top, pkg, imp string }{
		{"domain", module + "/domain", "os"},
		{"domain", module + "/domain", "time"},
		{"domain", module + "/domain", "github.com/spf13/afero"},
		{"domain", module + "/domain", module + "/app/jsonvalue"},
		{"domain", module + "/domain", "github.com/go-json-experiment/json/jsontext"},
		{"domain", module + "/domain", module + "/ports"},
		{"ports", module + "/ports", module + "/app"},
		{"ports", module + "/ports", module + "/domain"},
		{"adapters", module + "/adapters/stdio", module + "/adapters/mcp"},
		{"adapters", module + "/adapters/mcp", module + "/adapters/stdio"},
		{"adapters", module + "/adapters/mcp", module + "/adapters/osfs"},
		{"adapters", module + "/adapters/osfs", "github.com/modelcontextprotocol/go-sdk/mcp"},
		{"adapters", module + "/adapters/memfs", module + "/contracts"},
		{"app", module + "/app", module + "/contracts"},
		{"contracts", module + "/contracts", module + "/domain"},
		{"ports", module + "/ports", module + "/adapters/osfs"},
		{"app", module + "/app", module + "/adapters/osfs"},
		{"app", module + "/app", "github.com/spf13/afero"},
		{"adapters", module + "/adapters/osfs", module + "/app"},
		{"adapters", module + "/adapters/osfs", module + "/adapters/memfs"},
		{"adapters", module + "/adapters/osfs", module + "/cmd/tool-runner"},
		{"adapters", module + "/adapters/report", module + "/adapters/stdio"},
		{"adapters", module + "/adapters/report", module + "/adapters/memfs"},
		{"adapters", module + "/adapters/stdio", module + "/adapters/report"},
		{"adapters", module + "/adapters/report", "github.com/spf13/afero"},
		{"adapters", module + "/adapters/osfs", cliPackage},
		{"adapters", cliPackage, module + "/adapters/stdio"},
		{"app", module + "/app", cliPackage},
		{"app", module + "/app", wirePackage},
		{"adapters", module + "/adapters/stdio", wirePackage},
		{"adapters", module + "/adapters/osfs", wirePackage},
		{"internal", module + "/internal/testinputs", wirePackage},
		{"app", module + "/app/attest", module + "/app"},
		{"app", module + "/app/attest", module + "/ports"},
		{"app", module + "/app/attest", "os"},
		{"app", module + "/app/attest", "github.com/spf13/afero"},
		{"app", module + "/app/ledger", "os"},
		{"app", module + "/app/ledger", module + "/app"},
		{"app", module + "/app/ledger", module + "/ports"},
		{"app", module + "/app/protocol", module + "/app"},
		{"app", module + "/app/protocol", "time"},
		{"app", module + "/app/jsonout", "os"},
		{"app", module + "/app/jsonout", module + "/app"},
		{"app", module + "/app/call", module + "/adapters/stdio"},
		{"app", module + "/app/evidence", module + "/app"},
		{"app", module + "/app/evidence", module + "/app/call"},
		{"app", module + "/app/evidence", module + "/adapters/osfs"},
		{"app", module + "/app/evidence", "github.com/spf13/afero"},
		{"app", module + "/app/place", module + "/app"},
		{"app", module + "/app/remedy", module + "/app/call"},
		{"app", module + "/app/call", "github.com/modelcontextprotocol/go-sdk/mcp"},
		{"internal", module + "/internal/testinputs", module + "/domain"},
		{"internal", module + "/internal/testinputs", "github.com/matryer/is"},
		{"app", module + "/app", module + "/internal/testinputs"},
		{"domain", module + "/domain", module + "/internal/testinputs"},
		{"tools", module + "/tools/x", "fmt"},
		{"cmd", module + "/cmd/tool-runner", testutilPackage},
		{"cmd", module + "/cmd/tool-runner", module + "/internal/tools/buildcmd"},
		{"adapters", module + "/adapters/report", module + "/internal/tools/buildcmd"},
		{"app", module + "/app", testutilPackage},
		{"adapters", module + "/adapters/mcp", mcptestPackage},
		{"adapters", mcphttpPackage, mcptestPackage},
		{"cmd", module + "/cmd/tool-runner", mcptestPackage},
		{"adapters", mcptestPackage, wirePackage},
		{"adapters", mcptestPackage, module + "/domain"},
		{"adapters", mcptestPackage, "github.com/aws/aws-sdk-go-v2/service/s3"},
		{"adapters", module + "/adapters/osfs", "github.com/landlock-lsm/go-landlock/landlock"},
		{"adapters", module + "/adapters/stdio", landlockPackage},
		{"adapters", module + "/adapters/osfs", landlockPackage},
		{"app", module + "/app", landlockPackage},
		{"adapters", landlockPackage, module + "/adapters/osfs"},
		{"adapters", landlockPackage, module + "/app"},
		{"adapters", landlockPackage, "github.com/spf13/afero"},
		{"adapters", module + "/adapters/remote", module + "/app"},
		{"adapters", module + "/adapters/oauth", module + "/app/protocol"},
		{"adapters", module + "/adapters/remote", module + "/adapters/osfs"},
		{"adapters", module + "/adapters/remote", module + "/adapters/mcp"},
		{"adapters", module + "/adapters/remote", "github.com/spf13/afero"},
		{"adapters", module + "/adapters/oauth", "github.com/go-json-experiment/json"},
		{"adapters", module + "/adapters/osfs", module + "/adapters/remote"},
		{"adapters", module + "/adapters/osfs", "github.com/go-jose/go-jose/v4"},
		{"app", module + "/app", module + "/adapters/oauth"},
		{"adapters", module + "/adapters/osfs", "github.com/aws/aws-sdk-go-v2/service/s3"},
		{"adapters", module + "/adapters/mcp", "github.com/aws/aws-sdk-go-v2/service/s3"},
		{"app", module + "/app", "github.com/aws/aws-sdk-go-v2/service/s3"},
		{"adapters", storePackage, module + "/app"},
		{"adapters", storePackage, module + "/adapters/osfs"},
		{"adapters", messagePackage, module + "/app"},
		{"adapters", messagePackage, module + "/app/call"},
		{"adapters", messagePackage, module + "/ports"},
		{"adapters", messagePackage, module + "/adapters/remote"},
		{"adapters", messagePackage, "github.com/modelcontextprotocol/go-sdk/mcp"},
		{"adapters", messagePackage, "os"},
		{"adapters", messagePackage, "net/http"},
		{"adapters", module + "/adapters/stdio", messagePackage},
		{"adapters", module + "/adapters/remote", messagePackage},
		{"adapters", module + "/adapters/mcpx", messagePackage}, // a name that only begins like adapters/mcp (refused today by "adapters never import each other" too)
		{"adapters", module + "/adapters/mcp", module + "/adapters/remote"},
		{"adapters", module + "/adapters/mcp", module + "/adapters/oauth"},
		{"adapters", module + "/adapters/stdio", module + "/adapters/mcp"},
		{"adapters", mcphttpPackage, module + "/adapters/stdio"},
		{"adapters", mcphttpPackage, module + "/adapters/osfs"},
		{"adapters", storePackage + "/s3test", module + "/adapters/memfs"},
	}
	for _, tt := range tests {
		if check(tt.top, tt.pkg, tt.imp) == nil {
			t.Errorf("%s importing %s was allowed", tt.pkg, tt.imp)
		}
	}
	for _, ok := range []struct{ top, pkg, imp string }{
		{"domain", module + "/domain", "github.com/cockroachdb/apd/v3"},
		{"app", module + "/app", module + "/app/jsonvalue"},
		{"app", module + "/app/jsonvalue", "github.com/go-json-experiment/json/jsontext"},
		{"adapters", module + "/adapters/osfs", module + "/adapters/internal/bounded"},
		{"adapters", module + "/adapters/porttest", module + "/adapters/memfs"},
		{"cmd", module + "/cmd/tool-runner", module + "/adapters/osfs"},
		{"internal", module + "/internal/tools/bench", module + "/internal/testinputs"},
		{"internal", module + "/internal/tools/bench", "github.com/modelcontextprotocol/go-sdk/mcp"},
		{"internal", module + "/internal/tools/oneshotdiff", module + "/internal/tools/buildcmd"},
		{"internal", module + "/internal/testinputs", "encoding/json"},
		{"internal", testutilPackage, "testing"},
		{"adapters", mcptestPackage, testutilPackage},
		{"adapters", mcptestPackage, module + "/adapters/mcp"},
		{"adapters", mcptestPackage, module + "/adapters/memfs"},
		{"adapters", mcptestPackage, "github.com/matryer/is"},
		{"adapters", module + "/adapters/stdio", module + "/app"},
		{"adapters", module + "/adapters/mcp", module + "/app"},
		{"adapters", module + "/adapters/mcp", module + "/contracts"},
		{"adapters", module + "/adapters/mcp", "github.com/modelcontextprotocol/go-sdk/mcp"},
		{"adapters", module + "/adapters/mcp", "github.com/go-json-experiment/json/jsontext"},
		{"adapters", module + "/adapters/mcp", messagePackage},
		{"adapters", mcphttpPackage, messagePackage},
		{"app", module + "/app", module + "/app/attest"},
		{"app", module + "/app/call", module + "/app"},
		{"app", module + "/app/evidence", module + "/app/attest"},
		{"app", module + "/app/evidence", module + "/ports"},
		{"app", module + "/app/evidence", "time"},
		{"app", module + "/app/place", module + "/app/remedy"},
		{"app", module + "/app/remedy", module + "/ports"},
		{"adapters", module + "/adapters/report", module + "/app/evidence"},
		{"app", module + "/app/jsonout", "github.com/go-json-experiment/json/jsontext"},
		{"adapters", module + "/adapters/stdio", cliPackage},
		{"adapters", module + "/adapters/mcp", cliPackage},
		{"adapters", cliPackage, module + "/app"},
		{"app", module + "/app/attest", module + "/domain"},
		{"app", module + "/app/attest", "crypto/ed25519"},
		{"app", module + "/app/ledger", "time"},
		{"app", module + "/app/ledger", module + "/app/attest"},
		{"app", module + "/app/ledger", module + "/app/protocol"},
		{"adapters", module + "/adapters/mcp", module + "/app/protocol"},
		{"adapters", module + "/adapters/report", module + "/app"},
		{"internal", wirePackage, module + "/adapters/osfs"},
		{"internal", wirePackage, module + "/app"},
		{"adapters", module + "/adapters/report", "html/template"},
		{"adapters", landlockPackage, "github.com/landlock-lsm/go-landlock/landlock/syscall"},
		{"adapters", landlockPackage, module + "/ports"},
		{"adapters", landlockPackage, module + "/domain"},
		{"internal", wirePackage, landlockPackage},
		{"cmd", module + "/cmd/tool-runner", landlockPackage},
		{"adapters", module + "/adapters/remote", module + "/adapters/oauth"},
		{"adapters", module + "/adapters/remote", "github.com/modelcontextprotocol/go-sdk/auth"},
		{"adapters", module + "/adapters/oauth", "github.com/go-jose/go-jose/v4/jwt"},
		{"adapters", module + "/adapters/oauth/oauthtest", "github.com/go-jose/go-jose/v4"},
		{"adapters", module + "/adapters/oauth", module + "/ports"},
		{"adapters", mcphttpPackage, module + "/adapters/mcp"},
		{"adapters", mcphttpPackage, module + "/adapters/remote"},
		{"adapters", mcphttpPackage, module + "/adapters/oauth"},
		{"adapters", storePackage, "github.com/aws/aws-sdk-go-v2/service/s3"},
		{"adapters", storePackage, "github.com/aws/smithy-go/transport/http"},
		{"adapters", storePackage, module + "/adapters/internal/bounded"},
		{"adapters", storePackage + "/s3test", "github.com/aws/aws-sdk-go-v2/credentials"},
		{"cmd", module + "/cmd/tool-runner", storePackage},
		{"adapters", module + "/adapters/mcp", messagePackage},
		{"adapters", messagePackage, module + "/app/protocol"},
		{"adapters", messagePackage, "github.com/modelcontextprotocol/go-sdk/jsonrpc"},
		{"adapters", messagePackage, "github.com/go-json-experiment/json/jsontext"},
	} {
		if err := check(ok.top, ok.pkg, ok.imp); err != nil {
			t.Errorf("wrongly refused: %v", err)
		}
	}
}

// The shipped fixture is byte for byte the text of protocol §7, so --workspace .
// works from a fresh clone and every document's numbers hold.
func TestTheShippedFixtureIsSpecSection7(t *testing.T) {
	is := is.New(t)
	want := map[string]string{
		"data/transactions.csv": "transaction_id,customer_id,quantity,unit_price,discount\nT1,C1,2,100.00,0.10\nT2,C2,-1,90.00,0\nT3,C3,1,50.00,0\nT4,C4,3,,0\nT5,C5,4,12.50,1\n",
		"data/groups.csv":       "group_id,successes,eligible\nG1,45,50\nG2,46,60\n",
		"data/customers.csv":    "customer_id,segment\nC1,retail\nC2,retail\nC2,wholesale\nC3,wholesale\nC4,retail\nC5,online\n",
	}
	for name, text := range want {
		got, err := os.ReadFile(name)
		is.NoErr(err)
		is.Equal(string(got), text) // LF endings, trailing newline
	}
	got, err := os.ReadFile("contracts/metric-definitions.json")
	is.NoErr(err)
	is.Equal(string(got), domain.Contract) // the engine's contract is the shipped file
	is.True(strings.HasPrefix(string(got), "{\n  \"definition_id\": \"synthetic-v1\",\n  \"synthetic\": true,\n"))
	is.True(strings.HasSuffix(string(got), "\"human_approval\": \"not_granted\"}\n}\n"))
}
