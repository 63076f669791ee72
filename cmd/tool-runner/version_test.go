//go:build unix

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/metricproof/metricproof/adapters/landlock"
	"github.com/metricproof/metricproof/contracts"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/internal/tools/buildcmd"
)

// versionSchema compiles contracts/schemas/version.schema.json with the
// schemas it refers to.
func versionSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	for _, name := range contracts.SchemaNames() {
		data, _ := contracts.Schema(name)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(contracts.SchemaIDBase+name+".schema.json", doc); err != nil {
			t.Fatal(err)
		}
	}
	s, err := c.Compile(contracts.SchemaIDBase + "version.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// versionOf runs "exe version" and checks its line: one compact JSON line
// on stdout, nothing on stderr, exit 0, valid against its schema, naming
// the SHA256 of exe's bytes and what this kernel confines (protocol §16),
// or nothing confined with METRICPROOF_LANDLOCK=off in env.
func versionOf(t *testing.T, exe string, env ...string) (line []byte, v map[string]any) {
	t.Helper()
	is := is.New(t)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(exe, "version")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	is.NoErr(cmd.Run()) // exit 0
	is.Equal(stderr.String(), "")
	line = stdout.Bytes()
	is.True(bytes.HasSuffix(line, []byte("\n")) && bytes.Count(line, []byte("\n")) == 1) // one line
	var compact bytes.Buffer
	is.NoErr(json.Compact(&compact, line))
	is.Equal(compact.String(), strings.TrimSuffix(string(line), "\n")) // compact
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	is.NoErr(err)
	if err := versionSchema(t).Validate(doc); err != nil {
		t.Fatalf("version line %s\n%v", line, err)
	}
	is.NoErr(json.Unmarshal(line, &v))
	data, err := os.ReadFile(exe)
	is.NoErr(err)
	sum := sha256.Sum256(data)
	is.Equal(v["engine_sha256"], hex.EncodeToString(sum[:])) // sha256sum of the binary
	is.Equal(v["go_version"], runtime.Version())
	settings := v["settings"].(map[string]any)
	is.Equal(settings["GOOS"], runtime.GOOS)
	is.Equal(settings["GOARCH"], runtime.GOARCH)
	k := landlock.Kernel(slices.Contains(env, "METRICPROOF_LANDLOCK=off"))
	is.Equal(v["confinement"], map[string]any{"landlock_abi": float64(k.LandlockABI), "filesystem": k.Filesystem, "network": k.Network, "scoped": k.Scoped})
	return line, v
}

func TestVersionNamesTheRunningEngine(t *testing.T) {
	versionOf(t, runnerPath(t))
}

// The operator's switch shows in the version line: nothing confined, the
// kernel's ABI still named.
func TestVersionShowsConfinementTurnedOff(t *testing.T) {
	is := is.New(t)
	_, on := versionOf(t, runnerPath(t))
	_, off := versionOf(t, runnerPath(t), "METRICPROOF_LANDLOCK=off")
	c := off["confinement"].(map[string]any)
	is.Equal(c["landlock_abi"], on["confinement"].(map[string]any)["landlock_abi"]) // the kernel's, either way
	is.True(!c["filesystem"].(bool) && !c["network"].(bool) && !c["scoped"].(bool))
}

// cloneAt clones the repository at root into dir and checks out rev,
// detached: a clean clone, as an operator or an auditor makes one.
func cloneAt(t *testing.T, root, dir, rev string) {
	t.Helper()
	for _, args := range [][]string{
		{"clone", "--quiet", "--no-checkout", root, dir},
		{"-C", dir, "checkout", "--quiet", "--detach", rev},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// headOf returns the commit the checkout at root has checked out, or skips
// the test where there is none.
func headOf(t *testing.T, root string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: this test clones the repository's HEAD")
	}
	rev, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout with a commit (git rev-parse HEAD: %v)", err)
	}
	return strings.TrimSpace(string(rev))
}

// The auditor's recipe, docs/rebuild.sh, which README and docs/engine.md
// show, run as an auditor runs it (issue 25): a clean clone of this
// repository's HEAD built with README's command on a machine whose Go sets
// GOFLAGS=-buildvcs=false (the flag on the command line wins) names its
// revision and is rebuildable; a run it makes is rebuilt from its receipt
// and verified by the recipe, and its mcp server says nothing on stderr.
// An engine built without a revision says so in its version line and in
// one line on stderr at mcp start, and the recipe stops on its run's
// receipt with its message, exit 2, building nothing.
func TestTheAuditorsRecipeRebuildsAndVerifiesARun(t *testing.T) {
	testutil.SkipUnlessLong(t)
	if testing.Short() {
		t.Skip("clones and builds the repository three times")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh: the recipe is a POSIX shell script")
	}
	is := is.New(t)
	root := testutil.Root(t)
	rev := headOf(t, root)
	src := filepath.Join(t.TempDir(), "operator", "metricproof")
	cloneAt(t, root, src, rev)
	trap := "GOFLAGS=-buildvcs=false" // what this machine's go env sets, set here for any machine
	exe := filepath.Join(src, "bin", "tool-runner")
	build := buildcmd.Command(src, exe, "./cmd/tool-runner")
	build.Env = append(build.Env, trap)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", buildcmd.Line, err, out)
	}
	_, v := versionOf(t, exe)
	is.Equal(v["vcs_revision"], rev)         // README's build names the checkout's revision
	is.Equal(v["vcs_modified"], false)       // of a clean checkout
	is.Equal(v["rebuildable"], true)         // and says it can be rebuilt
	is.Equal(v["rebuild_blockers"], []any{}) // with nothing against it

	ws := fixture(t)
	is.Equal(mcpStartStderr(t, exe, ws), "") // a healthy session of a rebuildable engine says nothing on stderr
	run := func(exe, id string) string {
		o := callWith(t, exe, ws, inspectRequest("i-"+id), "--workspace", ws)
		is.Equal(o.exit, 0)
		o = callWith(t, exe, ws, analyzeRequest(id, o.result()["source_digest"].(string)), "--workspace", ws, "--output-dir", "runs")
		is.Equal(o.exit, 0)
		return filepath.Join(ws, "runs", id, "receipt.json")
	}
	recipe := func(receipt string) (exit int, stdout, stderr string) {
		var out, errOut bytes.Buffer
		cmd := exec.Command("sh", filepath.Join(root, "docs", "rebuild.sh"), receipt, ws, "runs", root)
		cmd.Env = append(os.Environ(), trap)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
	}

	exit, stdout, stderr := recipe(run(exe, "audited-001"))
	if exit != 0 {
		t.Fatalf("the recipe exited %d\nstdout: %s\nstderr: %s", exit, stdout, stderr)
	}
	is.True(strings.Contains(stdout, `"run_id":"audited-001","integrity":"verified"`)) // verified by the rebuilt engine
	is.True(strings.Contains(stderr, "the rebuilt engine is the run's"))               // after comparing the engines

	// An engine built without its revision: its version line says so, and
	// the recipe stops on its run's receipt with its message.
	unstamped := filepath.Join(src, "bin", "unstamped")
	build = exec.Command("go", append([]string{"build", "-buildvcs=false"}, buildcmd.Args(unstamped, "./cmd/tool-runner")[2:]...)...)
	build.Dir, build.Env = src, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=false: %v\n%s", err, out)
	}
	_, v = versionOf(t, unstamped)
	is.Equal(v["vcs_revision"], nil)
	is.Equal(v["rebuildable"], false)
	is.Equal(v["rebuild_blockers"], []any{"no_vcs_revision"})
	warning := mcpStartStderr(t, unstamped, ws)
	is.Equal(strings.Count(warning, "\n"), 1)                                                                // one line at mcp start
	is.True(strings.HasPrefix(warning, "warning: no run this engine makes can be rebuilt from its receipt")) // says so
	is.True(strings.Contains(warning, "-buildvcs=true"))                                                     // and what to do
	exit, stdout, stderr = recipe(run(unstamped, "unstamped-001"))
	is.Equal(exit, 2)
	is.Equal(stdout, "")
	is.True(strings.HasPrefix(stderr, "rebuild.sh: the receipt names no VCS revision")) // its message, first
	is.True(!strings.Contains(stderr, "cloning"))                                       // and nothing tried
}

// mcpStartStderr starts "exe mcp" on the workspace ws with its input
// closed, a session that ends at once, and returns what it wrote on
// stderr; the server must exit 0.
func mcpStartStderr(t *testing.T, exe, ws string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(exe, "mcp", "--workspace", ws, "--output-dir", "runs")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s mcp: %v\n%s", exe, err, stderr.Bytes())
	}
	if stdout.Len() > 0 {
		t.Errorf("an mcp session with no input wrote %q", stdout.Bytes())
	}
	return stderr.String()
}

// Two clones of this commit at different paths, built with README's
// command, give byte-identical runners (issue 18): one built with this
// machine's build cache, the other with an empty one of its own, so
// neither reuses the other's work. Each one's version line is the same and
// names its bytes, and a run analyzed by one verifies with the other.
func TestTwoClonesBuildTheSameEngine(t *testing.T) {
	testutil.SkipUnlessLong(t)
	if testing.Short() {
		t.Skip("builds the runner twice, once with an empty build cache (about a minute or more)")
	}
	is := is.New(t)
	root := testutil.Root(t)
	rev := headOf(t, root)
	tmp := t.TempDir()
	var runners []string
	for i, dir := range []string{filepath.Join(tmp, "a"), filepath.Join(tmp, "elsewhere", "b-at-another-depth")} {
		src := filepath.Join(dir, "metricproof")
		cloneAt(t, root, src, rev)
		exe := filepath.Join(dir, "bin", "tool-runner")
		cmd := buildcmd.Command(src, exe, "./cmd/tool-runner")
		if i == 1 {
			cmd.Env = append(cmd.Env, "GOCACHE="+filepath.Join(tmp, "empty-cache"))
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", buildcmd.Line, err, out)
		}
		runners = append(runners, exe)
	}
	a, err := os.ReadFile(runners[0])
	is.NoErr(err)
	b, err := os.ReadFile(runners[1])
	is.NoErr(err)
	if !bytes.Equal(a, b) {
		t.Fatalf("the two clones built different runners (%d and %d bytes)", len(a), len(b))
	}
	lineA, v := versionOf(t, runners[0])
	lineB, _ := versionOf(t, runners[1])
	is.Equal(string(lineA), string(lineB)) // the same version line
	is.Equal(v["vcs_revision"], rev)       // naming the clones' revision

	ws := fixture(t)
	o := callWith(t, runners[0], ws, inspectRequest("i1"), "--workspace", ws)
	is.Equal(o.exit, 0)
	digest := o.result()["source_digest"].(string)
	o = callWith(t, runners[0], ws, analyzeRequest("r1", digest), "--workspace", ws, "--output-dir", "runs")
	is.Equal(o.exit, 0)
	o = callWith(t, runners[1], ws, verifyRequest("v1", "r1"), "--workspace", ws, "--output-dir", "runs")
	if o.exit != 0 {
		t.Fatalf("the other clone's runner does not verify the run: %s", o.raw)
	}
	is.Equal(o.result()["integrity"], "verified")
	// And the check can fail: the test binary is another engine.
	o = call(t, ws, verifyRequest("v2", "r1"), "--workspace", ws, "--output-dir", "runs")
	is.Equal(o.code(), "ENGINE_CHANGED")
}
