package metricproof_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// The docs name the tests that hold the program to each promise
// (docs/guarantees.md above all). A test renamed or moved into a script
// leaves a citation that promises nothing: five did once. Every Test…,
// Fuzz… and Benchmark… name the docs cite must be a function of some
// _test.go file in the tree.

// citedName is how the docs cite a test: its whole Go name (a subtest's
// parent, or a -run pattern, is cited by the name of its function).
var citedName = regexp.MustCompile(`\b(?:Test|Fuzz|Benchmark)[A-Z0-9_][A-Za-z0-9_]*`)

// citedScript is how the docs cite one script of cmd/tool-runner's
// TestScripts: TestScripts/NAME runs testdata/script/NAME.txtar.
var citedScript = regexp.MustCompile(`\bTestScripts/([A-Za-z0-9_-]+)`)

// citation is one name a doc cites, and where.
type citation struct {
	name, file string
	line       int
}

// citations lists the test names that text, the doc file, cites.
func citations(file, text string) []citation {
	var cs []citation
	for i, line := range strings.Split(text, "\n") {
		for _, name := range citedName.FindAllString(line, -1) {
			cs = append(cs, citation{name: name, file: file, line: i + 1})
		}
	}
	return cs
}

// definedTests lists the Test…, Fuzz… and Benchmark… functions of every
// _test.go file under root, build tags aside, as go build would walk it
// (testdata and folders starting with "." or "_" skipped).
func definedTests(root string) (map[string]bool, error) {
	defined := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && citedName.MatchString(fn.Name.Name) {
				defined[fn.Name.Name] = true
			}
		}
		return nil
	})
	return defined, err
}

// citedDocs are the files whose citations are checked: every doc, the
// front page and the codemap.
func citedDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append(docs, "README.md", "ARCHITECTURE.md")
}

func TestEveryTestTheDocsCiteExists(t *testing.T) {
	is := is.New(t)
	defined, err := definedTests(".")
	is.NoErr(err)
	is.True(defined["TestEveryTestTheDocsCiteExists"]) // the walk found this file
	is.True(defined["FuzzSession"])                    // and others, deep down
	cited := 0
	for _, doc := range citedDocs(t) {
		data, err := os.ReadFile(doc)
		is.NoErr(err)
		for _, c := range citations(doc, string(data)) {
			cited++
			if !defined[c.name] {
				t.Errorf("%s:%d cites %s, which no _test.go file defines: cite the test that now holds the promise", c.file, c.line, c.name)
			}
		}
		for _, m := range citedScript.FindAllStringSubmatch(string(data), -1) {
			script := filepath.Join("cmd", "tool-runner", "testdata", "script", m[1]+".txtar")
			if _, err := os.Stat(script); err != nil {
				t.Errorf("%s cites %s, and there is no %s: cite the script that now holds the promise", doc, m[0], script)
			}
		}
	}
	is.True(cited > 50) // the docs do cite tests: a regexp that found none would prove nothing
}

// The citations found in a doc, and the names the check would refuse.
func TestCitationsAreFoundWhereverTheDocsWriteThem(t *testing.T) {
	defined := map[string]bool{"TestA": true, "FuzzB": true, "BenchmarkC": true}
	tests := []struct {
		text    string
		cited   []string
		missing []string
	}{
		{"`TestA` and `FuzzB` (`./app`)", []string{"TestA", "FuzzB"}, nil},
		{"go test -run '^TestA$' -bench BenchmarkC ./x", []string{"TestA", "BenchmarkC"}, nil},
		{"TestA/subtest, TestAB", []string{"TestA", "TestAB"}, []string{"TestAB"}},
		{"Testing, Fuzzing, Benchmarks, testA: prose, not names", nil, nil},
		{"`TestCollisionLeavesTheExistingEntryUntouched`", []string{"TestCollisionLeavesTheExistingEntryUntouched"}, []string{"TestCollisionLeavesTheExistingEntryUntouched"}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			is := is.New(t)
			var cited, missing []string
			for _, c := range citations("doc.md", tt.text) {
				cited = append(cited, c.name)
				if !defined[c.name] {
					missing = append(missing, c.name)
				}
			}
			is.Equal(cited, tt.cited)
			is.Equal(missing, tt.missing)
		})
	}
	is := is.New(t)
	cs := citations("doc.md", "one\ntwo TestA\n")
	is.Equal(fmt.Sprintf("%s:%d", cs[0].file, cs[0].line), "doc.md:2")
	is.True(!slices.ContainsFunc(cs, func(c citation) bool { return c.name != "TestA" }))
}
