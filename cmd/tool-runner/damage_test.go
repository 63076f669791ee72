//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

// TestVerifyKnowsTheEngineByItsBytes is what of verify_result's damage
// matrix only the real binary can show (the rest is app's
// TestVerifyNamesEachDamageOnBothFileSystems, over both file systems):
// the engine is known by its bytes, not its path. Run r1 is committed
// with the installed runner and verified with a copy of it plus one
// trailing byte (ENGINE_CHANGED, exit 1, not retryable) and with a
// byte-identical copy elsewhere (verified), and verify changes nothing
// in the workspace or outside it.
func TestVerifyKnowsTheEngineByItsBytes(t *testing.T) {
	eng := damageEngines(t)
	for _, c := range []struct {
		name   string
		engine func(damageEngineSet) string
		code   string
	}{
		{"the engine plus one trailing byte", func(e damageEngineSet) string { return e.altered }, "ENGINE_CHANGED"},
		{"a byte-identical copy of the engine elsewhere", func(e damageEngineSet) string { return e.identical }, ""},
	} {
		t.Run(c.name+" "+damageVerdict(c.code), func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			r := damageCommitRun(t)
			r.engine = c.engine(eng)
			before := r.photograph()
			o := r.verify()
			if c.code == "" {
				r.assertVerified(o)
			} else {
				is.Equal(o.exit, 1)
				is.Equal(o.resp["ok"], false)
				is.Equal(o.resp["status"], "error")
				is.Equal(o.resp["tool"], "verify_result")
				is.Equal(o.resp["result"], nil)
				is.Equal(o.resp["artifacts"], map[string]any{})
				is.Equal(o.code(), c.code)
				is.Equal(isRetryable(o), false)
			}
			r.assertUnchanged(before)
		})
	}
}

// TestVerifyAcceptsAnUndamagedRun is the matrix's control: the undamaged
// run verifies, lists every check in the protocol's order, gives the same answer
// twice, and leaves the tree as it found it.
func TestVerifyAcceptsAnUndamagedRun(t *testing.T) {
	is := is.New(t)
	r := damageCommitRun(t)
	before := r.photograph()
	o := r.verify()
	r.assertVerified(o)
	is.Equal(o.result()["checks"], []any{"run_present", "saved_files_valid", "receipt_bound", "result_bound", "sources_unchanged", "engine_unchanged", "result_recomputed"})
	again := r.verify()
	is.Equal(again.raw, o.raw) // verifying is repeatable
	r.assertUnchanged(before)
}

// damageVerdict names a row's expected answer.
func damageVerdict(code string) string {
	if code == "" {
		return "still verifies"
	}
	return "gives " + code
}

// damageEngineSet holds the runner binaries the engine rows verify with,
// made once before any case runs.
type damageEngineSet struct {
	identical string // a byte-identical copy of the installed runner
	altered   string // the same with one byte appended (an ELF still runs)
}

// damageEngines copies the installed runner twice, each under the name
// "tool-runner" so that TestMain dispatches it as the runner.
func damageEngines(t *testing.T) damageEngineSet {
	t.Helper()
	data, err := os.ReadFile(runnerPath(t))
	if err != nil {
		t.Fatal(err)
	}
	put := func(data []byte) string {
		p := filepath.Join(t.TempDir(), "tool-runner")
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return damageEngineSet{identical: put(data), altered: put(append(data, 0))}
}

// damagedRun is run r1, committed by the real binary into runs/ of a
// fresh fixture workspace, for one case to damage and verify.
type damagedRun struct {
	t       *testing.T
	ws      string // the workspace
	outside string // a scratch directory outside the workspace
	runID   string // the run verify_result is asked for
	digest  string // the source digest a successful verify reports
	engine  string // the runner verify runs; "" is the installed one
}

func damageCommitRun(t *testing.T) *damagedRun {
	t.Helper()
	ws := fixture(t)
	o := analyze(t, ws, "runs", "r1")
	digest, _ := o.result()["source_digest"].(string)
	return &damagedRun{t: t, ws: ws, outside: t.TempDir(), runID: "r1", digest: digest}
}

// verify runs verify_result on the run with --output-dir runs.
func (r *damagedRun) verify() outcome {
	r.t.Helper()
	args := []string{"--workspace", r.ws, "--output-dir", "runs"}
	if r.engine == "" {
		return call(r.t, r.ws, verifyRequest("v1", r.runID), args...)
	}
	return callWith(r.t, r.engine, r.ws, verifyRequest("v1", r.runID), args...)
}

// assertVerified checks a successful verify_result of r1.
func (r *damagedRun) assertVerified(o outcome) {
	r.t.Helper()
	is := is.NewRelaxed(r.t)
	if o.exit != 0 {
		r.t.Fatalf("verify_result failed: %s", o.raw)
	}
	is.Equal(o.resp["ok"], true)
	is.Equal(o.resp["status"], "success")
	is.Equal(o.resp["error"], nil)
	res := o.result()
	is.Equal(res["run_id"], "r1")
	is.Equal(res["integrity"], "verified")
	is.Equal(res["source_digest"], r.digest)
	is.Equal(res["release_eligible"], false) // the fixture is blocked
	is.Equal(res["human_approval"], "not_granted")
	is.Equal(len(res["checks"].([]any)), 7) // every check ran
}

// damageIndented is v as two-space indented JSON and a newline.
func damageIndented(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// photograph records every entry under the workspace and the outside
// scratch directory.
func (r *damagedRun) photograph() map[string]fsEntry {
	r.t.Helper()
	tree := map[string]fsEntry{}
	for root, label := range map[string]string{r.ws: "workspace", r.outside: "outside"} {
		for p, e := range snapshotTree(r.t, root) {
			tree[label+"/"+p] = e
		}
	}
	return tree
}

// assertUnchanged fails the test for every entry verify_result added,
// removed or altered since before.
func (r *damagedRun) assertUnchanged(before map[string]fsEntry) {
	r.t.Helper()
	sameTree(r.t, before, r.photograph())
}
