//go:build unix

package main

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/metricproof/metricproof/internal/testutil"
)

// The commands the scripts of testdata/script add to testscript's own.
// Each does one thing the stories need (a check, or a file laid out as a
// fault needs it) and fails the script with a sentence saying what it
// saw:
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
//	entries DIR [NAME...]    fail unless DIR holds exactly these entries
//	chop FILE N              cut the last N bytes off FILE
//	keeplines FILE N         cut FILE back to its first N lines, as
//	                         docs/ledger.md's repair does
//	recorded LEDGER N [INPUT]
//	                         fail unless LEDGER holds exactly N records,
//	                         chained by this test's own hashes (seq 1...,
//	                         prev the SHA256 of the line before), the last
//	                         recording the last command's answer on
//	                         stdout (see cmdRecorded); INPUT is the file
//	                         its standard input was, none when it was not
//	                         all read
//	verified LEDGER N        fail unless stdout is exactly the ledger
//	                         command's {"ledger":"verified","records":N,
//	                         "head":H}, H the SHA256 of LEDGER's last line
//	                         (64 zeros for an empty ledger)
//	keygen KIND DIR NAME     write a new key pair of KIND (ed25519, rsa or
//	                         ec): DIR/NAME.pem (PKCS#8 PEM, 0600) and
//	                         DIR/NAME.pub.pem (SPKI PEM, 0644)
//	unpem PEM OUT            write the bytes of PEM's first block to OUT
//	pem TYPE IN OUT [K=V...] write IN's bytes to OUT as one PEM block of
//	                         TYPE with these headers
//	cat OUT FILE...          write the FILEs one after another to OUT
//	mkfifo PATH              make a FIFO (0600) at PATH
//	unread INPUTS N PROG [ARGS...]
//	                         run PROG once per file of the comma-separated
//	                         INPUTS as its standard input, and once more
//	                         with standard input left open and never
//	                         written; fail unless every run exits N and
//	                         all print the same bytes, which stdout and
//	                         stderr then hold: PROG answered before
//	                         reading standard input
//	noleak FILE...           fail if stdout or stderr holds a secret of a
//	                         FILE (a regular file): a base64 line of it,
//	                         and for each PEM block the base64 and hex of
//	                         its bytes and of an Ed25519 key's seed and
//	                         public key; other FILEs (a FIFO, a
//	                         directory, nothing) are never opened
//
// None of them takes "!".
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"exits":     cmdExits,
		"answer":    cmdAnswer,
		"replace":   cmdReplace,
		"snapshot":  cmdSnapshot,
		"unchanged": cmdUnchanged,
		"entries":   cmdEntries,
		"chop":      cmdChop,
		"keeplines": cmdKeeplines,
		"recorded":  cmdRecorded,
		"verified":  cmdVerified,
		"keygen":    cmdKeygen,
		"unpem":     cmdUnpem,
		"pem":       cmdPem,
		"cat":       cmdCat,
		"mkfifo":    cmdMkfifo,
		"unread":    cmdUnread,
		"noleak":    cmdNoleak,
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

// jsonOf is want as compact JSON, an object's keys sorted as the
// answer's are compared: itself when it is JSON, else a string.
func jsonOf(ts *testscript.TestScript, want string) string {
	dec := json.NewDecoder(strings.NewReader(want))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) == nil && !dec.More() {
		b, err := json.Marshal(v)
		ts.Check(err)
		return string(b)
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

// cmdEntries is "entries DIR [NAME...]".
func cmdEntries(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "entries")
	if len(args) == 0 {
		ts.Fatalf("usage: entries DIR [NAME...]")
	}
	des, err := os.ReadDir(ts.MkAbs(args[0]))
	ts.Check(err)
	var got []string
	for _, de := range des {
		got = append(got, de.Name())
	}
	want := slices.Sorted(slices.Values(args[1:]))
	if !slices.Equal(got, want) {
		ts.Fatalf("%s holds %q, want %q", args[0], got, want)
	}
}

// cmdChop is "chop FILE N".
func cmdChop(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "chop")
	n, err := strconv.Atoi(argAt(args, 1))
	if len(args) != 2 || err != nil || n < 0 {
		ts.Fatalf("usage: chop FILE N")
	}
	data := ts.ReadFile(args[0])
	if n > len(data) {
		ts.Fatalf("%s holds fewer than %d bytes", args[0], n)
	}
	ts.Check(os.Truncate(ts.MkAbs(args[0]), int64(len(data)-n)))
}

// cmdKeeplines is "keeplines FILE N".
func cmdKeeplines(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "keeplines")
	n, err := strconv.Atoi(argAt(args, 1))
	if len(args) != 2 || err != nil || n < 0 {
		ts.Fatalf("usage: keeplines FILE N")
	}
	lines := splitLines(ts.ReadFile(args[0]))
	if n > len(lines) {
		ts.Fatalf("%s holds fewer than %d lines", args[0], n)
	}
	ts.Check(os.Truncate(ts.MkAbs(args[0]), int64(len(strings.Join(lines[:n], "")))))
}

// argAt is args[i], or "" when there is none.
func argAt(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

// cmdRecorded is "recorded LEDGER N [INPUT]". Each line must be one line
// of compact JSON with exactly a record's keys in their order (protocol
// §11). The last record must carry a canonical RFC 3339 UTC time,
// transport stdio, the request_id, tool and status of the answer, its
// error code (null on success), the SHA256 of the answer's line without
// its newline, of INPUT's bytes (null without INPUT), and of the
// tool-runner on PATH.
func cmdRecorded(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "recorded")
	n, err := strconv.Atoi(argAt(args, 1))
	if len(args) < 2 || len(args) > 3 || err != nil || n < 1 {
		ts.Fatalf("usage: recorded LEDGER N [INPUT]")
	}
	lines := splitLines(ts.ReadFile(args[0]))
	if len(lines) != n {
		ts.Fatalf("%s holds %d lines, want %d", args[0], len(lines), n)
	}
	prev := zeros
	var last map[string]any
	for i, line := range lines {
		body, ok := strings.CutSuffix(line, "\n")
		keys, values, err := objectKeys(body)
		var compact bytes.Buffer
		switch {
		case !ok:
			ts.Fatalf("line %d of %s does not end in a newline", i+1, args[0])
		case err != nil:
			ts.Fatalf("line %d of %s is not a JSON object: %v", i+1, args[0], err)
		case !slices.Equal(keys, recordKeys()):
			ts.Fatalf("line %d of %s has keys %v, want %v", i+1, args[0], keys, recordKeys())
		case json.Compact(&compact, []byte(body)) != nil || compact.String() != body:
			ts.Fatalf("line %d of %s is not compact JSON", i+1, args[0])
		case values["seq"] != json.Number(strconv.Itoa(i+1)):
			ts.Fatalf("line %d of %s carries seq %v", i+1, args[0], values["seq"])
		case values["prev"] != prev:
			ts.Fatalf("line %d of %s: prev %v, the line before hashes to %s", i+1, args[0], values["prev"], prev)
		}
		prev, last = testutil.SHA256Hex([]byte(line)), values
	}
	answerLine, _ := strings.CutSuffix(ts.ReadFile("stdout"), "\n")
	var resp map[string]any
	ts.Check(json.Unmarshal([]byte(answerLine), &resp))
	var code any
	if e, ok := resp["error"].(map[string]any); ok {
		code = e["code"]
	}
	var input any
	if len(args) == 3 {
		input = testutil.SHA256Hex([]byte(ts.ReadFile(args[2])))
	}
	runner, err := exec.LookPath("tool-runner")
	ts.Check(err)
	engine, err := os.ReadFile(runner)
	ts.Check(err)
	tm, _ := last["time"].(string)
	if parsed, err := time.Parse(time.RFC3339Nano, tm); err != nil || !strings.HasSuffix(tm, "Z") || parsed.UTC().Format(time.RFC3339Nano) != tm {
		ts.Fatalf("the last record's time %q is not a canonical RFC 3339 UTC time", tm)
	}
	for _, f := range []struct {
		key  string
		want any
	}{
		{"transport", "stdio"},
		{"request_id", resp["request_id"]},
		{"tool", resp["tool"]},
		{"status", resp["status"]},
		{"code", code},
		{"response_sha256", testutil.SHA256Hex([]byte(answerLine))},
		{"input_sha256", input},
		{"engine_sha256", testutil.SHA256Hex(engine)},
	} {
		if last[f.key] != f.want {
			ts.Fatalf("the last record's %s is %v, want %v", f.key, last[f.key], f.want)
		}
	}
}

// cmdVerified is "verified LEDGER N".
func cmdVerified(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "verified")
	n, err := strconv.Atoi(argAt(args, 1))
	if len(args) != 2 || err != nil || n < 0 {
		ts.Fatalf("usage: verified LEDGER N")
	}
	head := zeros
	if lines := splitLines(ts.ReadFile(args[0])); len(lines) > 0 {
		head = testutil.SHA256Hex([]byte(lines[len(lines)-1]))
	}
	want := fmt.Sprintf(`{"ledger":"verified","records":%d,"head":"%s"}`+"\n", n, head)
	if got := ts.ReadFile("stdout"); got != want {
		ts.Fatalf("stdout is %q, want %q", got, want)
	}
}

// objectKeys decodes one JSON object, numbers as json.Number, and its keys
// in their order.
func objectKeys(text string) (keys []string, values map[string]any, err error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("not an object")
	}
	values = map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, tok.(string))
		values[tok.(string)] = v
	}
	return keys, values, nil
}

// cmdKeygen is "keygen KIND DIR NAME"; DIR is made (0700) if missing.
func cmdKeygen(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "keygen")
	if len(args) != 3 {
		ts.Fatalf("usage: keygen ed25519|rsa|ec DIR NAME")
	}
	var priv crypto.Signer
	var err error
	switch args[0] {
	case "ed25519":
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	case "rsa":
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ec":
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		ts.Fatalf("keygen: %q is not ed25519, rsa or ec", args[0])
	}
	ts.Check(err)
	ts.Check(testutil.WriteKeyFiles(ts.MkAbs(args[1]), args[2], priv))
}

// cmdUnpem is "unpem PEM OUT".
func cmdUnpem(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "unpem")
	if len(args) != 2 {
		ts.Fatalf("usage: unpem PEM OUT")
	}
	block, _ := pem.Decode([]byte(ts.ReadFile(args[0])))
	if block == nil {
		ts.Fatalf("%s holds no PEM block", args[0])
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), block.Bytes, 0o600))
}

// cmdPem is "pem TYPE IN OUT [K=V...]".
func cmdPem(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "pem")
	if len(args) < 3 {
		ts.Fatalf("usage: pem TYPE IN OUT [K=V...]")
	}
	block := &pem.Block{Type: args[0], Bytes: []byte(ts.ReadFile(args[1])), Headers: map[string]string{}}
	for _, h := range args[3:] {
		k, v, ok := strings.Cut(h, "=")
		if !ok || k == "" {
			ts.Fatalf("pem: %q is not K=V", h)
		}
		block.Headers[k] = v
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), pem.EncodeToMemory(block), 0o600))
}

// cmdCat is "cat OUT FILE...".
func cmdCat(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "cat")
	if len(args) < 2 {
		ts.Fatalf("usage: cat OUT FILE...")
	}
	var data []byte
	for _, f := range args[1:] {
		data = append(data, ts.ReadFile(f)...)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), data, 0o600))
}

// cmdMkfifo is "mkfifo PATH".
func cmdMkfifo(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "mkfifo")
	if len(args) != 1 {
		ts.Fatalf("usage: mkfifo PATH")
	}
	ts.Check(syscall.Mkfifo(ts.MkAbs(args[0]), 0o600))
}

// cmdUnread is "unread INPUTS N PROG [ARGS...]".
func cmdUnread(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "unread")
	if len(args) < 3 {
		ts.Fatalf("usage: unread INPUTS N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[1])
	if err != nil || want < 0 {
		ts.Fatalf("unread: %q is not an exit status", args[1])
	}
	inputs := strings.Split(args[0], ",")
	var first *unreadRun
	for i := range len(inputs) + 1 {
		name := "standard input left open"
		var stdin io.Reader
		if i < len(inputs) {
			name, stdin = inputs[i], strings.NewReader(ts.ReadFile(inputs[i]))
		}
		r := runUnread(ts, stdin, args[2], args[3:])
		if r.exit != want {
			ts.Fatalf("with %s, %s exited with status %d, want %d:\n%s%s", name, args[2], r.exit, want, r.stdout, r.stderr)
		}
		if first == nil {
			first = &r
			continue
		}
		if r.stdout != first.stdout || r.stderr != first.stderr {
			ts.Fatalf("with %s, %s printed\n%s%s\nnot as with %s:\n%s%s", name, args[2], r.stdout, r.stderr, inputs[0], first.stdout, first.stderr)
		}
	}
	_, _ = io.WriteString(ts.Stdout(), first.stdout)
	_, _ = io.WriteString(ts.Stderr(), first.stderr)
}

// unreadRun is one finished run of unread.
type unreadRun struct {
	stdout, stderr string
	exit           int
}

// runUnread runs prog in the script's directory with stdin, or, when
// stdin is nil, with a pipe nobody writes to and that stays open until
// prog exits; a prog still running after a minute is killed and fails
// the script, as one that waited for standard input.
func runUnread(ts *testscript.TestScript, stdin io.Reader, prog string, args []string) unreadRun {
	path, err := exec.LookPath(prog)
	ts.Check(err)
	cmd := exec.Command(path, args...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = append(os.Environ(), "WORK="+ts.Getenv("WORK"), "HOME="+ts.Getenv("HOME"), "TMPDIR="+ts.Getenv("TMPDIR"), "PWD="+cmd.Dir)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var open io.WriteCloser
	if stdin != nil {
		cmd.Stdin = stdin
	} else if open, err = cmd.StdinPipe(); err != nil {
		ts.Fatalf("%v", err)
	}
	ts.Check(cmd.Start())
	guard := time.AfterFunc(time.Minute, func() { _ = cmd.Process.Kill() }) // a hang guard only
	err = cmd.Wait()
	if !guard.Stop() {
		ts.Fatalf("%s waited for standard input", prog)
	}
	if open != nil {
		_ = open.Close()
	}
	r := unreadRun{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		r.exit = ee.ExitCode()
	default:
		ts.Fatalf("%s did not exit: %v", prog, err)
	}
	return r
}

// cmdNoleak is "noleak FILE...".
func cmdNoleak(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "noleak")
	if len(args) == 0 {
		ts.Fatalf("usage: noleak FILE...")
	}
	out := ts.ReadFile("stdout") + ts.ReadFile("stderr")
	for _, f := range args {
		fi, err := os.Lstat(ts.MkAbs(f))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		for _, secret := range secretsOf([]byte(ts.ReadFile(f))) {
			if strings.Contains(out, secret) {
				ts.Fatalf("the output holds %q, a secret of %s", secret, f)
			}
		}
	}
}

// secretsOf are the strings of a key file no output may hold: its lines
// that hold key bytes, and for each PEM block the base64 and hex of its
// bytes and of an Ed25519 key's seed or public key.
func secretsOf(data []byte) []string {
	secrets := base64Lines(data)
	for rest := data; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		raw := [][]byte{block.Bytes}
		if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
			if k, ok := k.(ed25519.PrivateKey); ok {
				raw = append(raw, k.Seed(), k.Public().(ed25519.PublicKey))
			}
		}
		if k, err := x509.ParsePKIXPublicKey(block.Bytes); err == nil {
			if k, ok := k.(ed25519.PublicKey); ok {
				raw = append(raw, k)
			}
		}
		for _, b := range raw {
			secrets = append(secrets, base64.StdEncoding.EncodeToString(b), hex.EncodeToString(b))
		}
	}
	return secrets
}

// base64Lines are the lines of a PEM file that hold key bytes.
func base64Lines(data []byte) []string {
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); len(line) >= 16 && !strings.HasPrefix(line, "-----") {
			lines = append(lines, line)
		}
	}
	return lines
}
