package report_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/spf13/afero"
)

// The release verdict stands beside the integrity verdict in the page's
// first line, and the HTML page is green only for a run that verified and
// may be released: a verified run with blockers is amber, a fault red.
func TestTheReleaseVerdictIsAsProminentAndNeverGreenWhenBlocked(t *testing.T) {
	tests := []struct {
		name    string
		blocked bool
		h1      string
	}{
		{"not eligible", true, `<h1 class="blocked">Run <code>r1</code>: verified — <strong>release: not eligible</strong> (2 blockers)</h1>`},
		{"eligible", false, `<h1 class="verified">Run <code>r1</code>: verified — <strong>release: eligible</strong></h1>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			w := newWorkspace(t)
			if !tt.blocked {
				w.edit("data/transactions.csv", func(s string) string { return strings.Replace(s, "T4,C4,3,,0", "T4,C4,3,1,0", 1) })
				w.edit("data/customers.csv", func(s string) string { return strings.Replace(s, "C2,wholesale\n", "", 1) })
			}
			w.analyze("r1")
			page, _, exit := w.report("--output-dir", "runs", "--run-id", "r1", "--format", "html")
			is.Equal(exit, 0)
			is.True(strings.Contains(page, "\n"+tt.h1+"\n"))                          // the two verdicts, one line
			is.Equal(strings.Contains(page, `class="verified"`), !tt.blocked)         // green only when eligible
			is.True(strings.Contains(page, "h1.verified { border-color: #1a7f37; }")) // and green is the verified class
			md, _, _ := w.report("--output-dir", "runs", "--run-id", "r1")
			first, _, _ := strings.Cut(md, "\n")
			is.True(strings.Contains(first, "release: ")) // in Markdown's first line too
			is.Equal(strings.Contains(first, "not eligible"), tt.blocked)
		})
	}
	// A fault is red, and never shows a release.
	is := is.New(t)
	w := newWorkspace(t)
	w.analyze("r1")
	w.edit("runs/r1/result.json", func(s string) string { return s + " " })
	page, _, exit := w.report("--output-dir", "runs", "--run-id", "r1", "--format", "html")
	is.Equal(exit, 1)
	is.True(strings.Contains(page, `<h1 class="fault">`))
	is.True(!strings.Contains(page, "release: "))
}

// Digit grouping is the page's: result.json keeps the exact amounts.
func TestAmountsAreGroupedOnThePageOnly(t *testing.T) {
	is := is.New(t)
	w := newWorkspace(t)
	w.edit("data/transactions.csv", func(s string) string { return strings.Replace(s, "T1,C1,2,100.00,0.10", "T1,C1,1000,9007855.54,0", 1) })
	w.analyze("r1")
	page, _, _ := w.report("--output-dir", "runs", "--run-id", "r1")
	is.True(strings.Contains(page, "| Revenue, known subtotal | 9,007,855,500 fictional currency units |")) // grouped
	result, err := afero.ReadFile(w.fs, wsRoot+"/runs/r1/result.json")
	is.NoErr(err)
	is.True(strings.Contains(string(result), `"known_subtotal": "9007855500"`)) // exact
	is.True(!strings.Contains(string(result), "9,007"))
}

// The page says what "synthetic" claims as docs/data.md says it: of the
// contract, not of the operator's data.
func TestThePageDoesNotCallTheOperatorsDataSynthetic(t *testing.T) {
	is := is.New(t)
	w := newWorkspace(t)
	w.analyze("r1")
	page, _, _ := w.report("--output-dir", "runs", "--run-id", "r1")
	for _, claim := range []string{"over synthetic data", "no figure describes a real business", "not money"} {
		is.True(!strings.Contains(page, claim)) // what issue 25 found false of operator data
	}
	is.True(strings.Contains(page, `of the contract, not of the data, which is the operator's`))
}

// Under the evidence, a verified run's engine is said to be rebuildable or
// not, from the build settings of the engine running the report (the
// run's own, byte for byte, since it verified), each blocker in words.
func TestTheEvidenceSaysWhetherTheEngineCanBeRebuilt(t *testing.T) {
	unstamped := maps.Clone(readmeSettings())
	for _, k := range []string{"vcs", "vcs.revision", "vcs.time", "vcs.modified"} {
		delete(unstamped, k)
	}
	goRun := maps.Clone(unstamped)
	delete(goRun, "-trimpath")
	tests := []struct {
		name     string
		settings map[string]string
		row      string
		says     []string
	}{
		{"README's build", readmeSettings(), "| Rebuildable | yes: ", []string{"To rebuild the engine: check out revision"}},
		{"GOFLAGS=-buildvcs=false", unstamped, "| Rebuildable | **no: the engine that made this run cannot be rebuilt from its receipt** |",
			[]string{"The build recorded no VCS revision", "-buildvcs=true"}},
		{"go run", goRun, "| Rebuildable | **no: ", []string{"The build recorded no VCS revision", "The build did not use -trimpath"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			w := newWorkspace(t)
			w.analyze("r1")
			w.settings = tt.settings
			page, _, exit := w.report("--output-dir", "runs", "--run-id", "r1")
			is.Equal(exit, 0)
			is.True(strings.Contains(page, tt.row))
			for _, s := range tt.says {
				is.True(strings.Contains(page, s))
			}
			is.Equal(strings.Contains(page, "To rebuild the engine"), tt.name == "README's build") // no recipe for what cannot be rebuilt
		})
	}
}
