package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/internal/testutil"
)

// TestOneBuildAgainstItselfDiffersNowhere runs the whole case set with one
// build on both sides: any difference is a case whose answers or files
// change from run to run, which would hide a real difference or invent
// one.
func TestOneBuildAgainstItselfDiffersNowhere(t *testing.T) {
	testutil.SkipUnlessLong(t)
	if testing.Short() {
		t.Skip("builds tool-runner and runs every case twice")
	}
	is := is.New(t)
	repo, err := repoRoot()
	is.NoErr(err)
	dir := t.TempDir()
	bin, err := build(repo, filepath.Join(dir, "tool-runner"))
	is.NoErr(err)
	cases, err := caseSet(repo)
	is.NoErr(err)
	res, err := compare(cases, bin, bin, filepath.Join(dir, "ws"), "")
	is.NoErr(err)
	for _, d := range res.diffs {
		t.Errorf("%s: %s", d.name, d.detail)
	}
	is.Equal(res.cases, len(cases)) // every case ran
	is.True(res.calls > 500)        // the case set is the large one, not a stub
}

// TestMasksHideOnlyWhatDiffersBetweenRuns: two runs of one case differ in
// a receipt's time and engine and in what hashes them; anything else that
// differs is reported.
func TestMasksHideOnlyWhatDiffersBetweenRuns(t *testing.T) {
	receipt := func(runID, created, engine string) entry {
		return entry{path: "runs/r1/receipt.json", kind: "file", mode: 0o644, data: mask([]byte(`{
  "run_id": "`+runID+`",
  "engine_sha256": "`+engine+`",
  "created_at": "`+created+`",
  "build": {"go_version": "go1.26.8", "module_version": "(devel)", "vcs_revision": null, "vcs_modified": true}
}
`), fileMasks("receipt.json"))}
	}
	e1, e2 := "1111111111111111111111111111111111111111111111111111111111111111", "2222222222222222222222222222222222222222222222222222222222222222"
	tests := []struct {
		name   string
		a, b   entry
		differ bool
	}{
		{"another time and engine", receipt("r1", "2026-12-01T10:00:00Z", e1), receipt("r1", "2026-12-01T11:00:00.5Z", e2), false},
		{"another run ID", receipt("r1", "2026-12-01T10:00:00Z", e1), receipt("r2", "2026-12-01T10:00:00Z", e1), true},
		{"another mode", receipt("r1", "2026-12-01T10:00:00Z", e1), func() entry {
			e := receipt("r1", "2026-12-01T10:00:00Z", e1)
			e.mode = 0o600
			return e
		}(), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			d := differ(outcome{files: []entry{tc.a}}, outcome{files: []entry{tc.b}})
			is.Equal(d != "", tc.differ) // d says why
		})
	}
}

// TestACallThatDiffersIsNamed: a difference in standard output, the exit
// status or standard error names the call.
func TestACallThatDiffersIsNamed(t *testing.T) {
	is := is.New(t)
	base := answer{args: []string{"--workspace", "."}, stdout: []byte(`{"ok":true}` + "\n")}
	for _, other := range []answer{
		{args: base.args, stdout: []byte(`{"ok":false}` + "\n")},
		{args: base.args, stdout: base.stdout, exit: 1},
		{args: base.args, stdout: base.stdout, stderr: []byte("x")},
	} {
		d := differ(outcome{calls: []answer{base}}, outcome{calls: []answer{other}})
		is.True(d != "")
	}
	is.Equal(differ(outcome{calls: []answer{base}}, outcome{calls: []answer{base}}), "")
}

// TestTheFixtureIsReadFromTheRepository: the case set starts from the
// shipped fixture's own bytes.
func TestTheFixtureIsReadFromTheRepository(t *testing.T) {
	is := is.New(t)
	repo, err := repoRoot()
	is.NoErr(err)
	got, err := readFixture(repo)
	is.NoErr(err)
	want, err := os.ReadFile(filepath.Join(repo, "data", "groups.csv"))
	is.NoErr(err)
	is.Equal(got["data/groups.csv"], want)
}
