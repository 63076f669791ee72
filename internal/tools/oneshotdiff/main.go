// Command oneshotdiff compares every one-shot answer of two builds of
// tool-runner: the protocol promises that no response byte changes unless
// the contract says so, and this is how a change shows it kept that
// promise.
//
// It builds tool-runner twice with README's build command, from a base
// revision of the repository (by default HEAD) and from the working tree
// (or a second revision), then runs every case of its case set with each
// build in a fresh copy of the case's workspace: hostile requests
// (testdata/requests.json), fixture variants (testdata/sources.json),
// option faults, the analyze and verify stories, a damage matrix, signed
// runs, the call ledger, and the maximum inputs of protocol §8. For every
// step it compares standard output byte for byte, the exit status and
// standard error; at the end of a case it compares every file the
// workspace holds (path, mode and bytes), with the few values that differ
// between any two runs masked: a receipt's created_at, engine_sha256 and
// build facts, and what hashes them (checksums, attestations, ledger
// records' time, prev and engine_sha256, the ledger command's head).
//
// It prints one line per case that differs, with the first difference,
// and a summary; it exits 0 when nothing differs, 1 when something does,
// 2 when it could not run. Run it from inside the repository:
//
//	go run ./internal/tools/oneshotdiff                  # HEAD against the working tree
//	go run ./internal/tools/oneshotdiff -base e07eaff    # a base revision against the working tree
//	go run ./internal/tools/oneshotdiff -base A -head B  # two revisions
//	go run ./internal/tools/oneshotdiff -v               # every difference in full
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/metricproof/metricproof/internal/tools/buildcmd"
)

const usage = `usage: oneshotdiff [-base REV] [-head REV] [-run REGEXP] [-v]

Builds tool-runner from the base revision (default HEAD) and from the
working tree (or -head REV) with README's build command, runs every case
of the one-shot case set with both, and reports each case whose standard
output, exit status, standard error or written files differ (values that
differ between any two runs, such as a receipt's created_at, are masked).
Exit status: 0 when nothing differs, 1 when something does, 2 when it could
not run. Run it from inside the repository.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("oneshotdiff", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	base := fs.String("base", "HEAD", "")
	head := fs.String("head", "", "")
	only := fs.String("run", "", "")
	verbose := fs.Bool("v", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = io.WriteString(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "oneshotdiff: %v\n%s", err, usage)
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "oneshotdiff: no positional arguments\n%s", usage)
		return 2
	}
	repo, err := repoRoot()
	if err != nil {
		fmt.Fprintf(stderr, "oneshotdiff: %v\n", err)
		return 2
	}
	tmp, err := os.MkdirTemp("", "oneshotdiff-")
	if err != nil {
		fmt.Fprintf(stderr, "oneshotdiff: %v\n", err)
		return 2
	}
	defer os.RemoveAll(tmp)

	a, err := buildRevision(repo, *base, filepath.Join(tmp, "a"))
	if err != nil {
		fmt.Fprintf(stderr, "oneshotdiff: building %s: %v\n", *base, err)
		return 2
	}
	var b string
	if *head == "" {
		b, err = build(repo, filepath.Join(tmp, "b", "tool-runner"))
	} else {
		b, err = buildRevision(repo, *head, filepath.Join(tmp, "b"))
	}
	if err != nil {
		fmt.Fprintf(stderr, "oneshotdiff: building the head: %v\n", err)
		return 2
	}
	cases, err := caseSet(repo)
	if err != nil {
		fmt.Fprintf(stderr, "oneshotdiff: %v\n", err)
		return 2
	}
	headName := "the working tree"
	if *head != "" {
		headName = *head
	}
	fmt.Fprintf(stdout, "oneshotdiff: %s against %s\n", *base, headName)
	res, err := compare(cases, a, b, filepath.Join(tmp, "ws"), *only)
	if err != nil {
		fmt.Fprintf(stderr, "oneshotdiff: %v\n", err)
		return 2
	}
	for _, d := range res.diffs {
		if *verbose {
			fmt.Fprintf(stdout, "DIFF %s\n%s\n", d.name, indent(d.detail))
		} else {
			fmt.Fprintf(stdout, "DIFF %s: %s\n", d.name, firstLine(d.detail))
		}
	}
	fmt.Fprintf(stdout, "oneshotdiff: %d cases (%d calls), %d differ\n", res.cases, res.calls, len(res.diffs))
	if len(res.diffs) > 0 {
		return 1
	}
	return 0
}

// repoRoot is the top of the repository holding the working directory.
func repoRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("not inside a git repository: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// buildRevision checks rev out into dir (git worktree, detached, removed
// afterwards) and builds its tool-runner there.
func buildRevision(repo, rev, dir string) (string, error) {
	src := filepath.Join(dir, "src")
	if out, err := exec.Command("git", "-C", repo, "worktree", "add", "--detach", "--quiet", src, rev).CombinedOutput(); err != nil {
		return "", fmt.Errorf("git worktree add: %v: %s", err, out)
	}
	defer func() {
		_ = exec.Command("git", "-C", repo, "worktree", "remove", "--force", src).Run()
	}()
	return build(src, filepath.Join(dir, "tool-runner"))
}

// build builds the tool-runner of the module at src into out, with
// README's build command.
func build(src, out string) (string, error) {
	cmd := buildcmd.Command(src, out, "./cmd/tool-runner")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build: %v: %s", err, errb.String())
	}
	return out, nil
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
