//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// The commands the scripts of testdata/script add to testscript's own.
// Each checks one thing every story needs and fails the script with a
// sentence saying what it saw:
//
//	exits N PROG [ARGS...]   run PROG as exec does (standard input from
//	                         stdin) and fail unless it exits with status N;
//	                         stdout and stderr hold its output, as after exec
//	answer [FIELD=VALUE...]  the last command answered as every tool call
//	                         must (see cmdAnswer), with these fields
//	replace FILE OLD NEW     replace the first OLD in FILE by NEW; OLD must
//	                         be there
//	snapshot DIR NAME        record every entry under DIR (mode, time,
//	                         bytes, link) as NAME
//	unchanged DIR NAME       fail unless DIR is exactly as NAME recorded it
//	keypair DIR NAME         write a new Ed25519 key pair: DIR/NAME.pem
//	                         (PKCS#8, 0600) and DIR/NAME.pub.pem (SPKI, 0644)
//
// None of them takes "!".
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"exits":     cmdExits,
		"answer":    cmdAnswer,
		"replace":   cmdReplace,
		"snapshot":  cmdSnapshot,
		"unchanged": cmdUnchanged,
		"keypair":   cmdKeypair,
	}
}

// snapshotsKey is where a script's snapshots live in its Env.Values: a
// map from NAME to the snapshot, one map per script.
type snapshotsKey struct{}

// noNeg fails the script when a command that cannot be negated was.
func noNeg(ts *testscript.TestScript, neg bool, name string) {
	if neg {
		ts.Fatalf("unsupported: ! %s", name)
	}
}

// cmdExits is "exits N PROG [ARGS...]".
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "exits")
	if len(args) < 2 {
		ts.Fatalf("usage: exits N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil || want < 0 {
		ts.Fatalf("exits: %q is not an exit status", args[0])
	}
	got := 0
	var ee *exec.ExitError
	switch err := ts.Exec(args[1], args[2:]...); {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		got = ee.ExitCode()
	default:
		ts.Fatalf("%s did not exit: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// cmdAnswer is "answer [FIELD=VALUE...]": the last command's standard
// output is exactly one line of compact JSON, its standard error is
// empty, and neither holds $WORK (where every workspace of a script lies)
// nor anything else that looks like an absolute path. FIELD is a dotted
// path into the object (error.code) and must be present; VALUE is JSON
// (null, false, 2, "a b") or else a plain string (INVALID_OPTIONS, r1).
func cmdAnswer(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "answer")
	stdout, stderr := ts.ReadFile("stdout"), ts.ReadFile("stderr")
	if stderr != "" {
		ts.Fatalf("stderr is not empty: %q", stderr)
	}
	line, ok := strings.CutSuffix(stdout, "\n")
	if !ok || strings.Contains(line, "\n") {
		ts.Fatalf("want exactly one line on stdout, got %q", stdout)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(line)); err != nil {
		ts.Fatalf("stdout is not JSON: %v", err)
	}
	if compact.String() != line {
		ts.Fatalf("stdout is not compact JSON: %s", line)
	}
	for _, work := range workDirs(ts) {
		if strings.Contains(line, work) {
			ts.Fatalf("the answer holds the script's absolute path %s", work)
		}
	}
	if abs := absolutePath.FindString(line); abs != "" {
		ts.Fatalf("the answer holds an absolute path %q", abs)
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		ts.Fatalf("stdout is not JSON: %v", err)
	}
	for _, arg := range args {
		path, want, ok := strings.Cut(arg, "=")
		if !ok || path == "" {
			ts.Fatalf("answer: %q is not FIELD=VALUE", arg)
		}
		got, err := json.Marshal(lookup(ts, doc, path))
		ts.Check(err)
		if string(got) != jsonOf(ts, want) {
			ts.Fatalf("%s is %s, want %s", path, got, jsonOf(ts, want))
		}
	}
}

// workDirs is $WORK, and its real path when a symlink leads to it.
func workDirs(ts *testscript.TestScript) []string {
	work := ts.Getenv("WORK")
	dirs := []string{work}
	if real, err := filepath.EvalSymlinks(work); err == nil && real != work {
		dirs = append(dirs, real)
	}
	return dirs
}

// lookup is the value at the dotted path in doc; the path must be there.
func lookup(ts *testscript.TestScript, doc any, path string) any {
	v := doc
	names := strings.Split(path, ".")
	for i, name := range names {
		obj, ok := v.(map[string]any)
		if !ok {
			ts.Fatalf("the answer has no field %s: %s is not an object", path, strings.Join(names[:i], "."))
		}
		if v, ok = obj[name]; !ok {
			ts.Fatalf("the answer has no field %s", path)
		}
	}
	return v
}

// jsonOf is want as compact JSON: itself when it is JSON, else a string.
func jsonOf(ts *testscript.TestScript, want string) string {
	var compact bytes.Buffer
	if json.Compact(&compact, []byte(want)) == nil {
		return compact.String()
	}
	b, err := json.Marshal(want)
	ts.Check(err)
	return string(b)
}

// cmdReplace is "replace FILE OLD NEW"; FILE keeps its mode.
func cmdReplace(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "replace")
	if len(args) != 3 || args[1] == "" {
		ts.Fatalf("usage: replace FILE OLD NEW")
	}
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	if !bytes.Contains(data, []byte(args[1])) {
		ts.Fatalf("%s holds no %q", args[0], args[1])
	}
	ts.Check(os.WriteFile(path, bytes.Replace(data, []byte(args[1]), []byte(args[2]), 1), 0o644))
}

// snapshots is this script's snapshots by name.
func snapshots(ts *testscript.TestScript) map[string]map[string]fsEntry {
	return ts.Value(snapshotsKey{}).(map[string]map[string]fsEntry)
}

// cmdSnapshot is "snapshot DIR NAME".
func cmdSnapshot(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "snapshot")
	if len(args) != 2 {
		ts.Fatalf("usage: snapshot DIR NAME")
	}
	snap, err := readTree(ts.MkAbs(args[0]))
	ts.Check(err)
	snapshots(ts)[args[1]] = snap
}

// cmdUnchanged is "unchanged DIR NAME".
func cmdUnchanged(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "unchanged")
	if len(args) != 2 {
		ts.Fatalf("usage: unchanged DIR NAME")
	}
	before, ok := snapshots(ts)[args[1]]
	if !ok {
		ts.Fatalf("no snapshot named %s", args[1])
	}
	after, err := readTree(ts.MkAbs(args[0]))
	ts.Check(err)
	if changes := treeChanges(before, after); len(changes) > 0 {
		ts.Fatalf("%s is not as %s recorded it:\n%s", args[0], args[1], strings.Join(changes, "\n"))
	}
}

// cmdKeypair is "keypair DIR NAME".
func cmdKeypair(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "keypair")
	if len(args) != 2 {
		ts.Fatalf("usage: keypair DIR NAME")
	}
	_, err := writeKeyPair(ts.MkAbs(args[0]), args[1])
	ts.Check(err)
}
