package buildcmd_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/report"
	"github.com/metricproof/metricproof/internal/tools/buildcmd"
)

// The reviewer's page names the build command in its rebuild sentence
// (protocol §13); the adapter cannot import a developer tool, so it keeps a
// copy, held to the one command here.
func TestTheReviewersPageNamesTheOneCommand(t *testing.T) {
	is.New(t).Equal(report.BuildCommand, buildcmd.Line)
}

// shellWords splits a command line as sh would for the words Line uses:
// spaces separate words, double quotes group and are removed.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	quoted, started := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, started = !quoted, true
		case r == ' ' && !quoted:
			if started {
				words = append(words, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteRune(r)
			started = true
		}
	}
	if started {
		words = append(words, cur.String())
	}
	return words
}

func TestLineIsTheCommandThatArgsRun(t *testing.T) {
	is := is.New(t)
	want := append([]string{"CGO_ENABLED=0", "go"}, buildcmd.Args("bin/tool-runner", "./cmd/tool-runner")...)
	is.Equal(shellWords(buildcmd.Line), want)
	is.Equal(shellWords(`a "-s -w" b`), []string{"a", "-s -w", "b"}) // the splitter can tell
}

// repoFile reads a file of the repository, from this package's folder.
func repoFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// goBuild finds every go build or go install given with options, with
// whatever comes before it on its line.
var goBuild = regexp.MustCompile("(?m)^.*\\bgo (build|install) -[^\n`]*")

// wellBuilt reports whether a go build or go install line uses the
// command's environment and flags.
func wellBuilt(line string) bool {
	i := strings.Index(line, "go build ")
	if i < 0 {
		i = strings.Index(line, "go install ")
	}
	return strings.HasSuffix(line[:i], "CGO_ENABLED=0 ") &&
		strings.Contains(line[i:], ` -buildvcs=true -trimpath -ldflags="-s -w" `)
}

func TestEveryPlaceBuildsTheRunnerWithTheOneCommand(t *testing.T) {
	is := is.New(t)
	for _, name := range []string{"README.md", ".ci/run"} {
		is.True(strings.Contains(repoFile(t, name), buildcmd.Line)) // README and CI give the command exactly
	}
	docs, err := filepath.Glob(filepath.Join("..", "..", "..", "docs", "*.md"))
	is.NoErr(err)
	files := []string{"README.md", ".ci/run", "docs/rebuild.sh"}
	for _, d := range docs {
		files = append(files, "docs/"+filepath.Base(d))
	}
	for _, name := range files {
		for _, line := range goBuild.FindAllString(repoFile(t, name), -1) {
			if !wellBuilt(line) {
				t.Errorf("%s: %q builds without CGO_ENABLED=0 and -trimpath -ldflags=\"-s -w\" (use %s)", name, line, buildcmd.Line)
			}
		}
	}
	// The check can fail.
	is.True(!wellBuilt("CGO_ENABLED=0 go build -o bin/tool-runner ./cmd/tool-runner"))
	is.True(!wellBuilt(`go build -trimpath -ldflags="-s -w" -o x .`))
	is.True(!wellBuilt(`CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o bin/tool-runner ./cmd/tool-runner`)) // no stamp under GOFLAGS=-buildvcs=false
	is.True(wellBuilt(buildcmd.Line))
}
