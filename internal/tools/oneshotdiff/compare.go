package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// callTimeout bounds one call of the runner; a call that takes longer is a
// difference of its own ("did not finish"), never a hang of this command.
const callTimeout = 2 * time.Minute

// outcome is what one build did in one case: each call's answer, then the
// workspace's files.
type outcome struct {
	calls []answer
	files []entry
}

type answer struct {
	args           []string
	stdout, stderr []byte
	exit           int
}

type entry struct {
	path string
	kind string // "dir", "file", "symlink"
	mode fs.FileMode
	data []byte // a file's bytes, masked; a symlink's target
}

type diff struct {
	name, detail string
}

type results struct {
	cases, calls int
	diffs        []diff
}

// compare runs every case whose name matches only (all when empty) with
// both builds, each in its own fresh workspace under dir.
func compare(cases []testCase, a, b, dir, only string) (results, error) {
	var filter *regexp.Regexp
	if only != "" {
		var err error
		if filter, err = regexp.Compile(only); err != nil {
			return results{}, fmt.Errorf("-run: %w", err)
		}
	}
	var res results
	for i, c := range cases {
		if filter != nil && !filter.MatchString(c.name) {
			continue
		}
		oa, err := play(c, a, filepath.Join(dir, fmt.Sprint(i), "a"))
		if err != nil {
			return results{}, fmt.Errorf("%s: %w", c.name, err)
		}
		ob, err := play(c, b, filepath.Join(dir, fmt.Sprint(i), "b"))
		if err != nil {
			return results{}, fmt.Errorf("%s: %w", c.name, err)
		}
		_ = os.RemoveAll(filepath.Join(dir, fmt.Sprint(i)))
		res.cases++
		res.calls += len(oa.calls)
		if d := differ(oa, ob); d != "" {
			res.diffs = append(res.diffs, diff{name: c.name, detail: d})
		}
	}
	return res, nil
}

// play runs case c with the runner at bin in a fresh workspace dir/ws.
func play(c testCase, bin, dir string) (outcome, error) {
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return outcome{}, err
	}
	for name, data := range c.files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return outcome{}, err
		}
		mode := fs.FileMode(0o644)
		if strings.HasPrefix(name, "keys/") {
			mode = 0o600 // a signing key must be private
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			return outcome{}, err
		}
	}
	var o outcome
	for _, s := range c.steps {
		if s.do != nil {
			if err := s.do(ws); err != nil {
				return outcome{}, fmt.Errorf("changing the workspace: %w", err)
			}
			continue
		}
		stdin := s.stdin
		if s.stdinFn != nil {
			var err error
			if stdin, err = s.stdinFn(ws); err != nil {
				return outcome{}, err
			}
		}
		o.calls = append(o.calls, runOnce(bin, ws, s.args, stdin))
	}
	files, err := snapshot(ws)
	if err != nil {
		return outcome{}, err
	}
	o.files = files
	return o, nil
}

// runOnce runs the runner once in ws.
func runOnce(bin, ws string, args []string, stdin []byte) answer {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = ws
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	a := answer{args: args, stdout: mask(stdout.Bytes(), stdoutMasks()), stderr: stderr.Bytes()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		a.exit = -1
		a.stderr = append(a.stderr, "oneshotdiff: the call did not finish"...)
	case errors.As(err, &ee):
		a.exit = ee.ExitCode()
	case err != nil:
		a.exit = -2
		a.stderr = append(a.stderr, ("oneshotdiff: " + err.Error())...)
	}
	return a
}

// A masking rule replaces what matches re with repl in the files it
// applies to.
type maskRule struct {
	re   *regexp.Regexp
	repl string
}

func rule(re, repl string) maskRule { return maskRule{regexp.MustCompile(re), repl} }

// stdoutMasks hide what differs between any two runs in a runner's
// standard output: the ledger command's head hashes a record's time.
func stdoutMasks() []maskRule {
	return []maskRule{rule(`"head":"[0-9a-f]{64}"`, `"head":"…"`)}
}

// fileMasks hide, by file name, what differs between any two runs of the
// same case: the receipt's time and engine, and everything that hashes
// them.
func fileMasks(name string) []maskRule {
	switch name {
	case "receipt.json":
		return []maskRule{
			rule(`"created_at": "[^"]*"`, `"created_at": "…"`),
			rule(`"engine_sha256": "[0-9a-f]{64}"`, `"engine_sha256": "…"`),
			rule(`"(go_version|module_version|vcs_revision)": (null|"[^"]*")`, `"$1": …`),
			rule(`"vcs_modified": (true|false|null)`, `"vcs_modified": …`),
		}
	case "checksums.json":
		return []maskRule{rule(`"receipt.json": "[0-9a-f]{64}"`, `"receipt.json": "…"`)}
	case "attestation.json":
		return []maskRule{rule(`"payload": "[^"]*"`, `"payload": "…"`), rule(`"sig": "[^"]*"`, `"sig": "…"`)}
	}
	return nil
}

// ledgerMasks hide a ledger record's time, and what hashes it or the
// engine.
func ledgerMasks() []maskRule {
	return []maskRule{
		rule(`"prev":"[0-9a-f]{64}"`, `"prev":"…"`),
		rule(`"time":"[^"]*"`, `"time":"…"`),
		rule(`"engine_sha256":"[0-9a-f]{64}"`, `"engine_sha256":"…"`),
	}
}

func mask(data []byte, rules []maskRule) []byte {
	for _, r := range rules {
		data = r.re.ReplaceAll(data, []byte(r.repl))
	}
	return data
}

// pendingName matches a pending directory's random name.
var pendingName = regexp.MustCompile(`\.pending-[0-9a-f]+`)

// snapshot lists every entry under ws, sorted, with its bytes masked.
func snapshot(ws string) ([]entry, error) {
	var entries []entry
	err := filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(ws, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := entry{path: pendingName.ReplaceAllString(filepath.ToSlash(rel), ".pending-…"), mode: info.Mode().Perm()}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			e.kind = "symlink"
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			e.data = []byte(target)
		case d.IsDir():
			e.kind = "dir"
		default:
			e.kind = "file"
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rules := fileMasks(d.Name())
			if bytes.HasPrefix(data, []byte(`{"seq":`)) {
				rules = ledgerMasks()
			}
			e.data = mask(data, rules)
		}
		entries = append(entries, e)
		return nil
	})
	slices.SortFunc(entries, func(x, y entry) int { return strings.Compare(x.path, y.path) })
	return entries, err
}

// differ names the first difference between two outcomes of one case, or
// returns "".
func differ(a, b outcome) string {
	for i := range max(len(a.calls), len(b.calls)) {
		if i >= len(a.calls) || i >= len(b.calls) {
			return fmt.Sprintf("call %d: only one build made it", i+1)
		}
		x, y := a.calls[i], b.calls[i]
		where := fmt.Sprintf("call %d (%s)", i+1, strings.Join(x.args, " "))
		switch {
		case !bytes.Equal(x.stdout, y.stdout):
			return fmt.Sprintf("%s: stdout differs%s", where, bytesDiff(x.stdout, y.stdout))
		case x.exit != y.exit:
			return fmt.Sprintf("%s: exit %d, then %d", where, x.exit, y.exit)
		case !bytes.Equal(x.stderr, y.stderr):
			return fmt.Sprintf("%s: stderr differs%s", where, bytesDiff(x.stderr, y.stderr))
		}
	}
	paths := func(es []entry) map[string]entry {
		m := map[string]entry{}
		for _, e := range es {
			m[e.path] = e
		}
		return m
	}
	pa, pb := paths(a.files), paths(b.files)
	for _, e := range a.files {
		f, ok := pb[e.path]
		switch {
		case !ok:
			return fmt.Sprintf("file %s: only the base has it", e.path)
		case e.kind != f.kind:
			return fmt.Sprintf("file %s: a %s, then a %s", e.path, e.kind, f.kind)
		case e.mode != f.mode:
			return fmt.Sprintf("file %s: mode %04o, then %04o", e.path, e.mode, f.mode)
		case !bytes.Equal(e.data, f.data):
			return fmt.Sprintf("file %s: bytes differ%s", e.path, bytesDiff(e.data, f.data))
		}
	}
	for _, e := range b.files {
		if _, ok := pa[e.path]; !ok {
			return fmt.Sprintf("file %s: only the head has it", e.path)
		}
	}
	return ""
}

// bytesDiff shows where two byte strings part, with a little context
// around that point in each.
func bytesDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(i-60, 0)
	excerpt := func(s []byte) string {
		return fmt.Sprintf("%q", s[min(from, len(s)):min(i+100, len(s))])
	}
	return fmt.Sprintf(" at byte %d\n  base: %s\n  head: %s", i, excerpt(a), excerpt(b))
}
