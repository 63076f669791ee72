package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/adapters/keyfile"
	"github.com/metricproof/metricproof/adapters/memfs"
	"github.com/metricproof/metricproof/adapters/osfs"
	"github.com/metricproof/metricproof/adapters/porttest"
	"github.com/metricproof/metricproof/adapters/stdio"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/ports"
)

// bothFS is one file system a test runs the app over: the in-memory one
// and the real disk in a temporary directory, through the same Go calls.
type bothFS struct {
	name string
	// open lays the files out and returns the workspace's root, a file
	// system view of it and the composition root over it.
	open func(t *testing.T, files map[string][]byte, engine func() ports.Engine) (root string, view afero.Fs, wire app.Wire)
}

func fileSystems() []bothFS {
	lay := func(t *testing.T, view afero.Fs, files map[string][]byte) {
		t.Helper()
		for name, data := range files {
			if err := view.MkdirAll(path.Dir(name), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := afero.WriteFile(view, name, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return []bothFS{
		{"memfs", func(t *testing.T, files map[string][]byte, engine func() ports.Engine) (string, afero.Fs, app.Wire) {
			mem := afero.NewMemMapFs()
			if err := mem.MkdirAll(wsRoot, 0o755); err != nil {
				t.Fatal(err)
			}
			view := afero.NewBasePathFs(mem, wsRoot)
			lay(t, view, files)
			ws, err := memfs.New(mem, wsRoot)
			if err != nil {
				t.Fatal(err)
			}
			return wsRoot, view, func(o app.Options) (app.Ports, io.Closer, error) {
				if o.Workspace != wsRoot {
					return app.Ports{}, nil, ports.ErrMissing
				}
				return app.Ports{Sources: ws, Paths: ws, Evidence: ws, Ledger: ws, Cancel: ws.Marker(o.CancelFile),
					Clock: porttest.FixedClock(fixedTime), Engine: engine(), Keys: keyfile.Reader{}}, nil, nil
			}
		}},
		{"osfs", func(t *testing.T, files map[string][]byte, engine func() ports.Engine) (string, afero.Fs, app.Wire) {
			root := t.TempDir()
			view := afero.NewBasePathFs(afero.NewOsFs(), root)
			lay(t, view, files)
			return root, view, func(o app.Options) (app.Ports, io.Closer, error) {
				ws, err := osfs.Open(o.Workspace)
				if err != nil {
					return app.Ports{}, nil, err
				}
				return app.Ports{Sources: ws, Paths: ws, Evidence: ws, Ledger: ws, Cancel: ws.Marker(o.CancelFile),
					Clock: porttest.FixedClock(fixedTime), Engine: engine(), Keys: keyfile.Reader{}}, ws, nil
			}
		}},
	}
}

// damaged is a committed run r1 in runs/ of a fixture workspace, on one
// file system, and the tools to damage it.
type damaged struct {
	t    *testing.T
	root string
	view afero.Fs
	wire app.Wire
	// engine is the engine of the next call: a value, so that a call's
	// own copy is never changed under it (the engine is hashed on a
	// goroutine of the call's).
	engine ports.Engine
	runID  string
	// outside is a scratch directory outside the workspace on the real
	// disk, photographed with it; "" on memfs, which has no outside.
	outside string
	// wantDigest is the source digest a successful verify reports.
	wantDigest string
}

// openOn lays files out as a workspace on f.
func openOn(t *testing.T, f bothFS, files map[string][]byte) *damaged {
	t.Helper()
	d := &damaged{t: t, engine: fixedEngine(), runID: "r1"}
	d.root, d.view, d.wire = f.open(t, files, func() ports.Engine { return d.engine })
	return d
}

func commitRun(t *testing.T, f bothFS) *damaged {
	t.Helper()
	d := openOn(t, f, testutil.Fixture(t))
	d.wantDigest = d.digest()
	if r := d.call(analyzeReq("r1", d.wantDigest)); r.Exit != 0 {
		t.Fatalf("analyze: %s", r.Raw)
	}
	if f.name == "osfs" {
		d.outside = t.TempDir()
	}
	return d
}

// digest inspects and returns the source digest.
func (d *damaged) digest() string {
	d.t.Helper()
	r := d.call(inspect("i1"))
	var res struct {
		SourceDigest string `json:"source_digest"`
	}
	if err := json.Unmarshal(r.Body.Result, &res); err != nil || res.SourceDigest == "" {
		d.t.Fatalf("inspect: %s", r.Raw)
	}
	return res.SourceDigest
}

// call answers request with the output directory runs.
func (d *damaged) call(request string) response {
	d.t.Helper()
	return d.callWith(request, "--output-dir", "runs")
}

// callWith answers request with --workspace and args.
func (d *damaged) callWith(request string, args ...string) response {
	d.t.Helper()
	var out bytes.Buffer
	exit := stdio.Run(context.Background(), append([]string{"--workspace", d.root}, args...), strings.NewReader(request), &out, d.wire)
	return decode(d.t, out.Bytes(), exit)
}

func (d *damaged) read(rel string) []byte {
	d.t.Helper()
	b, err := afero.ReadFile(d.view, rel)
	if err != nil {
		d.t.Fatal(err)
	}
	return b
}

func (d *damaged) write(rel string, data []byte) {
	d.t.Helper()
	if err := afero.WriteFile(d.view, rel, data, 0o644); err != nil {
		d.t.Fatal(err)
	}
}

func (d *damaged) remove(rel string) {
	d.t.Helper()
	if err := d.view.RemoveAll(rel); err != nil {
		d.t.Fatal(err)
	}
}

// replace swaps the one occurrence of old in rel for new.
func (d *damaged) replace(rel, old, new string) {
	d.t.Helper()
	b := d.read(rel)
	if bytes.Count(b, []byte(old)) != 1 {
		d.t.Fatalf("%s holds %q %d times", rel, old, bytes.Count(b, []byte(old)))
	}
	d.write(rel, bytes.Replace(b, []byte(old), []byte(new), 1))
}

// reseal recomputes the hashes that bind the run's files, so that only
// the checks after the hashes can tell: the receipt's result_sha256, then
// both hashes of checksums.json.
func (d *damaged) reseal(oldResult, oldReceipt string) {
	d.t.Helper()
	result := testutil.SHA256Hex(d.read("runs/r1/result.json"))
	d.replace("runs/r1/receipt.json", oldResult, result)
	receipt := testutil.SHA256Hex(d.read("runs/r1/receipt.json"))
	d.replace("runs/r1/checksums.json", oldResult, result)
	d.replace("runs/r1/checksums.json", oldReceipt, receipt)
}

// photograph is every entry under the workspace, and under the outside
// directory where there is one: path, mode, modification time, a regular
// file's bytes and a symlink's target.
func (d *damaged) photograph() map[string]string {
	d.t.Helper()
	shot := map[string]string{}
	views := map[string]afero.Fs{"workspace": d.view}
	if d.outside != "" {
		views["outside"] = afero.NewBasePathFs(afero.NewOsFs(), d.outside)
	}
	for label, view := range views {
		err := afero.Walk(view, ".", func(p string, info fs.FileInfo, err error) error {
			if err != nil {
				return err
			}
			entry := info.Mode().String() + " " + info.ModTime().String()
			switch {
			case info.Mode().IsRegular():
				b, err := afero.ReadFile(view, p)
				if err != nil {
					return err
				}
				entry += " " + testutil.SHA256Hex(b)
			case info.Mode()&fs.ModeSymlink != 0:
				target, err := view.(afero.LinkReader).ReadlinkIfPossible(p)
				if err != nil {
					return err
				}
				entry += " -> " + target
			}
			shot[label+"/"+filepath.ToSlash(p)] = entry
			return nil
		})
		if err != nil {
			d.t.Fatal(err)
		}
	}
	return shot
}

// Damage tools beyond the ones above, for the rows that forge a run
// consistently or lay out what only a real disk has. rel is
// workspace-relative with forward slashes.

// real is rel on the real disk; only osfs rows call it.
func (d *damaged) real(rel string) string {
	d.t.Helper()
	if d.outside == "" {
		d.t.Fatal("a row that needs the real disk ran on memfs")
	}
	return filepath.Join(d.root, filepath.FromSlash(rel))
}

// outsidePath is name in the outside directory.
func (d *damaged) outsidePath(name string) string {
	d.t.Helper()
	if d.outside == "" {
		d.t.Fatal("a row that needs the real disk ran on memfs")
	}
	return filepath.Join(d.outside, name)
}

func (d *damaged) mkdir(rel string) {
	d.t.Helper()
	if err := d.view.MkdirAll(rel, 0o755); err != nil {
		d.t.Fatal(err)
	}
}

// copyTo copies the file or tree at rel to dst, a workspace-relative path
// or, on the real disk, an absolute one.
func (d *damaged) copyTo(rel, dst string) {
	d.t.Helper()
	to := d.view
	if filepath.IsAbs(dst) {
		to = afero.NewOsFs()
	}
	err := afero.Walk(d.view, rel, func(p string, info fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		target := path.Join(dst, strings.TrimPrefix(p, rel))
		if filepath.IsAbs(dst) {
			target = filepath.Join(dst, filepath.FromSlash(strings.TrimPrefix(p, rel)))
		}
		if info.IsDir() {
			return to.MkdirAll(target, 0o755)
		}
		b, err := afero.ReadFile(d.view, p)
		if err == nil {
			err = to.MkdirAll(filepath.Dir(target), 0o755)
		}
		if err == nil {
			err = afero.WriteFile(to, target, b, 0o644)
		}
		return err
	})
	if err != nil {
		d.t.Fatal(err)
	}
}

// symlink replaces whatever is at rel with a symlink to target, on the
// real disk.
func (d *damaged) symlink(target, rel string) {
	d.t.Helper()
	d.remove(rel)
	if err := os.Symlink(target, d.real(rel)); err != nil {
		d.t.Fatal(err)
	}
}

// flipByte changes the byte at offset i of rel from was to to.
func (d *damaged) flipByte(rel string, i int, was, to byte) {
	d.t.Helper()
	b := d.read(rel)
	if b[i] != was {
		d.t.Fatalf("byte %d of %s is %q, want %q", i, rel, b[i], was)
	}
	b[i] = to
	d.write(rel, b)
}

// flipHex changes the last hex digit of the digest value, which must
// occur once in rel, to another lowercase hex digit: the JSON keeps its
// shape.
func (d *damaged) flipHex(rel, value string) {
	d.t.Helper()
	d.replace(rel, value, flipped(value))
}

// flipped is the digest h with its last hex digit changed.
func flipped(h string) string {
	last := byte('0')
	if h[len(h)-1] == '0' {
		last = '1'
	}
	return h[:len(h)-1] + string(last)
}

// padded is b followed by pad bytes up to size bytes.
func padded(b []byte, size int, pad byte) []byte {
	return append(b, bytes.Repeat([]byte{pad}, size-len(b))...)
}

// receipt is receipt.json decoded.
func (d *damaged) receipt() map[string]any {
	d.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(d.read("runs/r1/receipt.json"), &m); err != nil {
		d.t.Fatal(err)
	}
	return m
}

// checksums is checksums.json decoded.
func (d *damaged) checksums() map[string]string {
	d.t.Helper()
	var m map[string]string
	if err := json.Unmarshal(d.read("runs/r1/checksums.json"), &m); err != nil {
		d.t.Fatal(err)
	}
	return m
}

// editReceipt rewrites receipt.json through edit, two-space indented with
// sorted keys (the order is free; its bytes are bound only by
// checksums.json, which the forgeries recompute).
func (d *damaged) editReceipt(edit func(map[string]any)) {
	d.t.Helper()
	m := d.receipt()
	edit(m)
	d.write("runs/r1/receipt.json", indented(d.t, m))
}

// bindResult sets the receipt's result_sha256 to the current result bytes.
func (d *damaged) bindResult() {
	d.t.Helper()
	sum := testutil.SHA256Hex(d.read("runs/r1/result.json"))
	d.editReceipt(func(m map[string]any) { m["result_sha256"] = sum })
}

// rewriteChecksums writes checksums.json for the current receipt and
// result bytes.
func (d *damaged) rewriteChecksums() {
	d.t.Helper()
	d.write("runs/r1/checksums.json", indented(d.t, map[string]string{
		"receipt.json": testutil.SHA256Hex(d.read("runs/r1/receipt.json")),
		"result.json":  testutil.SHA256Hex(d.read("runs/r1/result.json")),
	}))
}

func indented(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// sourceDigest is protocol §4's combined digest of a source hash map:
// SHA256 of the map as compact JSON with sorted keys and one trailing
// newline.
func sourceDigest(t *testing.T, sources map[string]any) string {
	t.Helper()
	b, err := json.Marshal(sources)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.SHA256Hex(append(b, '\n'))
}

// otherEngine is an engine whose bytes differ from the one that committed
// the run: on the real runner, the same binary plus one byte.
func otherEngine() ports.Engine {
	e := fixedEngine()
	e.SHA256 = strings.Repeat("f", 64)
	return e
}

// verifyDamage is one row of verify_result's damage matrix.
type verifyDamage struct {
	name   string
	code   string // "" when the run still verifies
	caught string // a part of the message, when it matters which check caught it
	// diskOnly says why memfs cannot express the damage; the row then
	// runs on osfs only.
	diskOnly string
	do       func(d *damaged)
}

// Phrases of verify_result's messages that tell checks 4 and 7 apart.
const (
	caughtByChecksums  = "differ from checksums.json"              // check 4, against the checksum map
	caughtByReceipt    = "differ from the receipt's result_sha256" // check 4, against the receipt
	caughtByOwnSources = "names other sources than its receipt"    // check 4, result vs receipt
	caughtByRecompute  = "a fresh computation"                     // check 7
)

// Why memfs cannot express a row.
const (
	noSymlinks = "memfs has no symlinks"
	noOutside  = "memfs has no symlinks, so nothing outside the workspace is reachable"
)

// The damage matrix of verify_result (protocol §6) over both file systems,
// through the same Go calls, in the manner of restic's checker tests and
// git's fsck tests: each row commits run r1, damages it one way (the last
// rows two ways at once, to pin the order of the checks), and
// verify_result names the exact code of protocol §6's table for the first
// failing check (1 MISSING_RESULT, 2 INVALID_SAVED_RESULT, 3
// RECEIPT_TAMPERED, 4 RESULT_TAMPERED, 5 STALE_SOURCES, 6 ENGINE_CHANGED, 7
// RESULT_TAMPERED; for RESULT_TAMPERED which of checks 4 and 7 caught it),
// or verifies where the contract cannot see the change, and writes
// nothing, in the workspace or outside it. Rows that need what only a real
// disk has (symlinks) run on osfs only, and named pipes are
// TestVerifyNamesANamedPipeInARun's; that the engine is known by its bytes
// and not its path is cmd/tool-runner's, over the real binary.
func TestVerifyNamesEachDamageOnBothFileSystems(t *testing.T) {
	for _, f := range fileSystems() {
		for _, c := range verifyDamages() {
			t.Run(f.name+"/"+c.name, func(t *testing.T) {
				if c.diskOnly != "" && f.name == "memfs" {
					t.Skip(c.diskOnly)
				}
				checkDamage(t, f, c)
			})
		}
	}
}

// checkDamage commits run r1 on f, damages it as c says, verifies it and
// checks the answer and that verify wrote nothing.
func checkDamage(t *testing.T, f bothFS, c verifyDamage) {
	is := is.New(t)
	d := commitRun(t, f)
	c.do(d)
	before := d.photograph()
	r := d.call(verifyReq("v1", d.runID))
	is.Equal(r.code(), c.code) // the first failing check's code
	if c.code == "" {
		is.Equal(r.Exit, 0)
		is.Equal(r.Body.OK, true)
		is.Equal(r.Body.Status, "success")
		var res struct {
			RunID           string   `json:"run_id"`
			Integrity       string   `json:"integrity"`
			SourceDigest    string   `json:"source_digest"`
			ReleaseEligible *bool    `json:"release_eligible"`
			HumanApproval   string   `json:"human_approval"`
			Checks          []string `json:"checks"`
		}
		is.NoErr(json.Unmarshal(r.Body.Result, &res))
		is.Equal(res.RunID, "r1")
		is.Equal(res.Integrity, "verified")
		is.Equal(res.SourceDigest, d.wantDigest)
		is.True(res.ReleaseEligible != nil && !*res.ReleaseEligible) // the fixture is blocked
		is.Equal(res.HumanApproval, "not_granted")
		is.Equal(len(res.Checks), 7) // every check ran
	} else {
		is.Equal(r.Exit, 1) // a fault is a handled error
		is.Equal(r.Body.OK, false)
		is.Equal(r.Body.Status, "error")
		is.True(r.Body.Tool != nil && *r.Body.Tool == "verify_result") // the tool is named
		is.Equal(string(r.Body.Result), "null")                        // a fault has no result
		is.Equal(len(r.Body.Artifacts), 0)
		is.True(r.Body.Artifacts != nil)                                // artifacts is {}
		is.Equal(r.Body.Error.Retryable, false)                         // no fault of a run is retryable
		is.True(strings.Contains(r.Body.Error.Message, c.caught))       // the check that caught it
		is.True(!strings.Contains(r.Raw, d.root))                       // no absolute path
		is.True(d.outside == "" || !strings.Contains(r.Raw, d.outside)) // nor the outside's
	}
	is.Equal(d.photograph(), before) // verify_result wrote nothing
	if t.Failed() {
		t.Logf("response: %s", r.Raw)
	}
}

// verifyDamages is the matrix.
func verifyDamages() []verifyDamage {
	const (
		result   = "runs/r1/result.json"
		receipt  = "runs/r1/receipt.json"
		checksum = "runs/r1/checksums.json"
		maxSaved = 4 * 1024 * 1024
		rate     = `"rate": "0.827272727273"`
	)
	cs := []verifyDamage{
		{name: "nothing", do: func(*damaged) {}},
		{name: "the run directory removed", code: "MISSING_RESULT", do: func(d *damaged) { d.remove("runs/r1") }},
		{name: "all three files of the run removed", code: "MISSING_RESULT", do: func(d *damaged) {
			d.remove(result)
			d.remove(receipt)
			d.remove(checksum)
		}},
		{name: "another run ID asked for", code: "MISSING_RESULT", do: func(d *damaged) { d.runID = "r2" }},
		// Documented decision: a run is exactly its three files.
		{name: "a file added to the run", code: "INVALID_SAVED_RESULT", do: func(d *damaged) { d.write("runs/r1/notes.txt", []byte("fine\n")) }},
		{name: "a hidden file added to the run", code: "INVALID_SAVED_RESULT", do: func(d *damaged) { d.write("runs/r1/.notes", nil) }},
		{name: "a directory added to the run", code: "INVALID_SAVED_RESULT", do: func(d *damaged) { d.mkdir("runs/r1/.pending") }},
		{name: "a symlink added to the run", code: "INVALID_SAVED_RESULT", diskOnly: noSymlinks, do: func(d *damaged) {
			d.symlink("result.json", "runs/r1/latest")
		}},
		{name: "the run directory a symlink to a copy of it inside the workspace", code: "INVALID_SAVED_RESULT", diskOnly: noSymlinks, do: func(d *damaged) {
			d.copyTo("runs/r1", "copies/r1")
			d.symlink("../copies/r1", "runs/r1")
		}},
		{name: "the run directory a symlink to a copy of it outside the workspace", code: "INVALID_SAVED_RESULT", diskOnly: noOutside, do: func(d *damaged) {
			d.copyTo("runs/r1", d.outsidePath("r1"))
			d.symlink(d.outsidePath("r1"), "runs/r1")
		}},
		{name: "the run directory a dangling symlink", code: "INVALID_SAVED_RESULT", diskOnly: noSymlinks, do: func(d *damaged) {
			d.symlink("nowhere", "runs/r1")
		}},
		{name: "the run directory a regular file", code: "INVALID_SAVED_RESULT", do: func(d *damaged) {
			d.remove("runs/r1")
			d.write("runs/r1", []byte("{}\n"))
		}},

		// The output directory. protocol §6: O resolves, symlinks first,
		// inside the workspace; the run below it may not be a symlink,
		// but O itself may.
		{name: "the output directory removed", code: "MISSING_RESULT", do: func(d *damaged) { d.remove("runs") }},
		{name: "the output directory a regular file", code: "INVALID_OUTPUT", do: func(d *damaged) {
			d.remove("runs")
			d.write("runs", nil)
		}},
		{name: "the output directory a symlink to a copy of it inside the workspace", diskOnly: noSymlinks, do: func(d *damaged) {
			d.copyTo("runs", "copies/runs")
			d.symlink("copies/runs", "runs")
		}},
		{name: "the output directory a symlink to a copy of it outside the workspace", code: "PATH_BOUNDARY", diskOnly: noOutside, do: func(d *damaged) {
			d.copyTo("runs", d.outsidePath("runs"))
			d.symlink(d.outsidePath("runs"), "runs")
		}},

		// Single bytes flipped so that the JSON stays valid of its shape:
		// only the hashes can see them.
		{name: "a hex digit of engine_sha256 in receipt.json", code: "RECEIPT_TAMPERED", do: func(d *damaged) {
			d.flipHex(receipt, d.receipt()["engine_sha256"].(string))
		}},
		{name: "the rate's last digit", code: "RESULT_TAMPERED", caught: caughtByChecksums, do: func(d *damaged) {
			d.replace(result, rate, `"rate": "0.827272727272"`)
		}},
		{name: "a digit of the successes count in result.json", code: "RESULT_TAMPERED", caught: caughtByChecksums, do: func(d *damaged) {
			d.replace(result, `"successes": 91,`, `"successes": 81,`)
		}},
		{name: "a hex digit of the receipt hash in checksums.json", code: "RECEIPT_TAMPERED", do: func(d *damaged) {
			d.flipHex(checksum, d.checksums()["receipt.json"])
		}},
		{name: "a hex digit of the result hash in checksums.json", code: "RESULT_TAMPERED", caught: caughtByChecksums, do: func(d *damaged) {
			d.flipHex(checksum, d.checksums()["result.json"])
		}},
		// Single bytes flipped so that the JSON is no longer of its shape.
		{name: "a hex letter of a hash in checksums.json in upper case", code: "INVALID_SAVED_RESULT", do: func(d *damaged) {
			h := d.checksums()["receipt.json"]
			i := strings.IndexAny(h, "abcdef")
			if i < 0 {
				d.t.Fatal("the receipt hash has no hex letter")
			}
			d.replace(checksum, h, h[:i]+strings.ToUpper(h[i:i+1])+h[i+1:])
		}},
		{name: "the receipt's run_id key", code: "INVALID_SAVED_RESULT", do: func(d *damaged) { d.replace(receipt, `"run_id":`, `"run_ie":`) }},
		{name: "the rate key in result.json", code: "INVALID_SAVED_RESULT", do: func(d *damaged) { d.replace(result, `"rate":`, `"rbte":`) }},
		{name: "a key repeated in receipt.json", code: "INVALID_SAVED_RESULT", do: func(d *damaged) {
			d.replace(receipt, `"protocol_version"`, `"run_id": "r1",
  "protocol_version"`)
			d.rewriteChecksums()
		}},
		{name: "a third key in checksums.json", code: "INVALID_SAVED_RESULT", do: func(d *damaged) {
			m := d.checksums()
			m["notes.txt"] = m["result.json"]
			d.write(checksum, indented(d.t, m))
		}},

		// Consistent forgeries: every hash recomputed, so only the binding
		// of fields (check 3), the sources (5), the engine (6) or the
		// recomputation (7) can tell.
		{name: "the rate edited and every hash recomputed", code: "RESULT_TAMPERED", caught: caughtByRecompute, do: func(d *damaged) {
			oldResult, oldReceipt := testutil.SHA256Hex(d.read(result)), testutil.SHA256Hex(d.read(receipt))
			d.replace(result, rate, `"rate": "0.827272727274"`)
			d.reseal(oldResult, oldReceipt)
		}},
		{name: "a net_revenue edited and every hash recomputed", code: "RESULT_TAMPERED", caught: caughtByRecompute, do: func(d *damaged) {
			d.replace(result, `"net_revenue": "180"`, `"net_revenue": "181"`)
			d.bindResult()
			d.rewriteChecksums()
		}},
		{name: "the release marked eligible and every hash recomputed", code: "RESULT_TAMPERED", caught: caughtByRecompute, do: func(d *damaged) {
			oldResult, oldReceipt := testutil.SHA256Hex(d.read(result)), testutil.SHA256Hex(d.read(receipt))
			d.replace(result, `"eligible": false`, `"eligible": true`)
			d.reseal(oldResult, oldReceipt)
		}},
		// result.json is canonical: the same value in another layout is
		// not what this engine writes, and check 7 compares bytes.
		{name: "result.json compacted to the same JSON value and every hash recomputed", code: "RESULT_TAMPERED", caught: caughtByRecompute, do: func(d *damaged) {
			var b bytes.Buffer
			if err := json.Compact(&b, d.read(result)); err != nil {
				d.t.Fatal(err)
			}
			d.write(result, append(b.Bytes(), '\n'))
			d.bindResult()
			d.rewriteChecksums()
		}},
		{name: "result.json edited and checksums.json recomputed but not the receipt", code: "RESULT_TAMPERED", caught: caughtByReceipt, do: func(d *damaged) {
			d.replace(result, rate, `"rate": "0.827272727274"`)
			d.rewriteChecksums()
		}},
		{name: "the source_digest in result.json edited and every hash recomputed", code: "RESULT_TAMPERED", caught: caughtByOwnSources, do: func(d *damaged) {
			d.flipHex(result, d.receipt()["source_digest"].(string))
			d.bindResult()
			d.rewriteChecksums()
		}},
		{name: "run_id in receipt.json changed and checksums.json recomputed", code: "RECEIPT_TAMPERED", do: func(d *damaged) {
			d.editReceipt(func(m map[string]any) { m["run_id"] = "r2" })
			d.rewriteChecksums()
		}},
		{name: "definition_id in receipt.json changed and checksums.json recomputed", code: "RECEIPT_TAMPERED", do: func(d *damaged) {
			d.editReceipt(func(m map[string]any) { m["definition_id"] = "synthetic-v2" })
			d.rewriteChecksums()
		}},
		{name: "protocol_version in receipt.json changed and checksums.json recomputed", code: "RECEIPT_TAMPERED", do: func(d *damaged) {
			d.editReceipt(func(m map[string]any) { m["protocol_version"] = "1.1" })
			d.rewriteChecksums()
		}},
		{name: "source_digest in receipt.json changed but not its sources and checksums.json recomputed", code: "RECEIPT_TAMPERED", do: func(d *damaged) {
			d.editReceipt(func(m map[string]any) { m["source_digest"] = flipped(m["source_digest"].(string)) })
			d.rewriteChecksums()
		}},
		{name: "a source hash and the source_digest in receipt.json changed consistently and checksums.json recomputed", code: "RESULT_TAMPERED", caught: caughtByOwnSources, do: func(d *damaged) {
			d.editReceipt(func(m map[string]any) {
				sources := m["sources"].(map[string]any)
				sources["data/groups.csv"] = flipped(sources["data/groups.csv"].(string))
				m["source_digest"] = sourceDigest(d.t, sources)
			})
			d.rewriteChecksums()
		}},
		{name: "receipt.json and result.json pointed at other source bytes and every hash recomputed", code: "STALE_SOURCES", do: func(d *damaged) {
			old := d.receipt()["source_digest"].(string)
			var digest string
			d.editReceipt(func(m map[string]any) {
				sources := m["sources"].(map[string]any)
				sources["data/groups.csv"] = flipped(sources["data/groups.csv"].(string))
				digest = sourceDigest(d.t, sources)
				m["source_digest"] = digest
			})
			d.replace(result, old, digest)
			d.bindResult()
			d.rewriteChecksums()
		}},
		{name: "engine_sha256 in receipt.json changed and checksums.json recomputed", code: "ENGINE_CHANGED", do: func(d *damaged) {
			d.editReceipt(func(m map[string]any) { m["engine_sha256"] = flipped(m["engine_sha256"].(string)) })
			d.rewriteChecksums()
		}},
		{name: "created_at in receipt.json a non-time and checksums.json recomputed", code: "INVALID_SAVED_RESULT", do: func(d *damaged) {
			d.editReceipt(func(m map[string]any) { m["created_at"] = "yesterday" })
			d.rewriteChecksums()
		}},
		{name: "a source added to receipt.json and checksums.json recomputed", code: "INVALID_SAVED_RESULT", do: func(d *damaged) {
			d.editReceipt(func(m map[string]any) {
				sources := m["sources"].(map[string]any)
				sources["data/extra.csv"] = sources["data/groups.csv"]
			})
			d.rewriteChecksums()
		}},
		{name: "build removed from receipt.json and checksums.json recomputed", code: "INVALID_SAVED_RESULT", do: func(d *damaged) {
			d.editReceipt(func(m map[string]any) { delete(m, "build") })
			d.rewriteChecksums()
		}},
		// Controls for the forgeries above: what the receipt records but
		// does not bind. The checksums are unkeyed, so they detect damage,
		// not a forger who recomputes them; these rows pin that honestly.
		{name: "receipt.json re-encoded with sorted keys and checksums.json recomputed", do: func(d *damaged) {
			d.editReceipt(func(map[string]any) {})
			d.rewriteChecksums()
		}},
		{name: "created_at in receipt.json another time and checksums.json recomputed", do: func(d *damaged) {
			d.editReceipt(func(m map[string]any) { m["created_at"] = "2001-02-03T04:05:06.7Z" })
			d.rewriteChecksums()
		}},
		{name: "the recorded go_version in receipt.json changed and checksums.json recomputed", do: func(d *damaged) {
			d.editReceipt(func(m map[string]any) { m["build"].(map[string]any)["go_version"] = "go0.0" })
			d.rewriteChecksums()
		}},
		{name: "a source edited and the whole run re-pointed at it with every hash recomputed", do: func(d *damaged) {
			old := d.receipt()["source_digest"].(string)
			d.write("data/groups.csv", append(d.read("data/groups.csv"), '\n'))
			var digest string
			d.editReceipt(func(m map[string]any) {
				sources := m["sources"].(map[string]any)
				sources["data/groups.csv"] = testutil.SHA256Hex(d.read("data/groups.csv"))
				digest = sourceDigest(d.t, sources)
				m["source_digest"] = digest
			})
			d.replace(result, old, digest)
			d.bindResult()
			d.rewriteChecksums()
			d.wantDigest = digest
		}},

		// The sources: compared by bytes, before anything parses them.
		{name: "a source changed after the run", code: "STALE_SOURCES", do: func(d *damaged) {
			d.write("data/groups.csv", append(d.read("data/groups.csv"), "G9,1,2\n"...))
		}},
		{name: "an empty line appended to data/groups.csv", code: "STALE_SOURCES", do: func(d *damaged) {
			d.write("data/groups.csv", append(d.read("data/groups.csv"), '\n'))
		}},
		{name: "data/groups.csv removed", code: "STALE_SOURCES", do: func(d *damaged) { d.remove("data/groups.csv") }},
		{name: "data/transactions.csv made invalid", code: "STALE_SOURCES", do: func(d *damaged) {
			d.write("data/transactions.csv", append(d.read("data/transactions.csv"), "not,a,row\n"...))
		}},
		{name: "data/customers.csv grown past 1 MiB with empty lines", code: "STALE_SOURCES", do: func(d *damaged) {
			d.write("data/customers.csv", padded(d.read("data/customers.csv"), 1<<20+1, '\n'))
		}},
		{name: "the contract compacted to the same JSON value", code: "STALE_SOURCES", do: func(d *damaged) {
			var b bytes.Buffer
			if err := json.Compact(&b, d.read("contracts/metric-definitions.json")); err != nil {
				d.t.Fatal(err)
			}
			d.write("contracts/metric-definitions.json", b.Bytes())
		}},
		{name: "data/groups.csv a directory", code: "STALE_SOURCES", do: func(d *damaged) {
			d.remove("data/groups.csv")
			d.mkdir("data/groups.csv")
		}},
		// protocol §4: a source may be a symlink that resolves inside the
		// workspace; its bytes are what counts.
		{name: "data/groups.csv a symlink to an identical copy inside the workspace", diskOnly: noSymlinks, do: func(d *damaged) {
			d.copyTo("data/groups.csv", "copies/groups.csv")
			d.symlink("../copies/groups.csv", "data/groups.csv")
		}},
		// protocol §4: a source resolving outside the workspace is
		// PATH_BOUNDARY, whichever tool reads it; check 5 never gets to
		// compare its bytes.
		{name: "data/groups.csv a symlink to an identical copy outside the workspace", code: "PATH_BOUNDARY", diskOnly: noOutside, do: func(d *damaged) {
			d.copyTo("data/groups.csv", d.outsidePath("groups.csv"))
			d.symlink(d.outsidePath("groups.csv"), "data/groups.csv")
		}},

		// The engine: another engine's bytes.
		{name: "another engine verifying", code: "ENGINE_CHANGED", do: func(d *damaged) { d.engine = otherEngine() }},

		// Two damages at once: the earlier check in protocol §6's order
		// answers.
		{name: "checksums.json removed and notes.txt added", code: "MISSING_RESULT", do: func(d *damaged) {
			d.remove(checksum)
			d.write("runs/r1/notes.txt", nil)
		}},
		{name: "result.json removed and receipt.json truncated", code: "MISSING_RESULT", do: func(d *damaged) {
			d.remove(result)
			b := d.read(receipt)
			d.write(receipt, b[:len(b)/2])
		}},
		{name: "receipt.json truncated and a source and the engine changed", code: "INVALID_SAVED_RESULT", do: func(d *damaged) {
			b := d.read(receipt)
			d.write(receipt, b[:len(b)/2])
			d.write("data/groups.csv", append(d.read("data/groups.csv"), '\n'))
			d.engine = otherEngine()
		}},
		{name: "a byte flipped in both receipt.json and result.json", code: "RECEIPT_TAMPERED", do: func(d *damaged) {
			d.flipHex(receipt, d.receipt()["engine_sha256"].(string))
			d.replace(result, rate, `"rate": "0.827272727272"`)
		}},
		{name: "a byte flipped in result.json and a source changed", code: "RESULT_TAMPERED", caught: caughtByChecksums, do: func(d *damaged) {
			d.replace(result, rate, `"rate": "0.827272727272"`)
			d.write("data/groups.csv", append(d.read("data/groups.csv"), '\n'))
		}},
		{name: "a source and the engine changed", code: "STALE_SOURCES", do: func(d *damaged) {
			d.write("data/groups.csv", append(d.read("data/groups.csv"), '\n'))
			d.engine = otherEngine()
		}},
		{name: "the engine changed and result.json forged with every hash recomputed", code: "ENGINE_CHANGED", do: func(d *damaged) {
			d.replace(result, rate, `"rate": "0.827272727274"`)
			d.bindResult()
			d.rewriteChecksums()
			d.engine = otherEngine()
		}},
	}

	// Every saved file, damaged the same ways.
	for _, name := range []string{result, receipt, checksum} {
		base := path.Base(name)
		// Extra or missing whitespace: the receipt's and the result's
		// bytes are hashed (checks 3 and 4), but checksums.json is hashed
		// nowhere, so a layout change that keeps its JSON value is
		// invisible and the run still verifies (protocol §6 binds the
		// receipt and result bytes only).
		wsCode, wsCaught := map[string]string{receipt: "RECEIPT_TAMPERED", result: "RESULT_TAMPERED"}[name], ""
		if name == result {
			wsCaught = caughtByChecksums
		}
		cs = append(cs,
			verifyDamage{name: "deleting " + base, code: "MISSING_RESULT", do: func(d *damaged) { d.remove(name) }},
			verifyDamage{name: "the opening brace of " + base + " flipped out of JSON", code: "INVALID_SAVED_RESULT", do: func(d *damaged) {
				d.flipByte(name, 0, '{', '{'^1)
			}},
			verifyDamage{name: "emptying " + base, code: "INVALID_SAVED_RESULT", do: func(d *damaged) { d.write(name, nil) }},
			verifyDamage{name: "truncating " + base + " to half", code: "INVALID_SAVED_RESULT", do: func(d *damaged) {
				b := d.read(name)
				d.write(name, b[:len(b)/2])
			}},
			verifyDamage{name: "garbage appended to " + base, code: "INVALID_SAVED_RESULT", do: func(d *damaged) {
				d.write(name, append(d.read(name), "garbage\n"...))
			}},
			verifyDamage{name: "a second JSON document after " + base, code: "INVALID_SAVED_RESULT", do: func(d *damaged) {
				d.write(name, append(d.read(name), "{}\n"...))
			}},
			verifyDamage{name: "whitespace appended to " + base, code: wsCode, caught: wsCaught, do: func(d *damaged) {
				d.write(name, append(d.read(name), " \n\t\n"...))
			}},
			verifyDamage{name: "the trailing newline of " + base + " dropped", code: wsCode, caught: wsCaught, do: func(d *damaged) {
				d.write(name, bytes.TrimSuffix(d.read(name), []byte("\n")))
			}},
			verifyDamage{name: base + " grown to exactly 4 MiB with trailing spaces", code: wsCode, caught: wsCaught, do: func(d *damaged) {
				d.write(name, padded(d.read(name), maxSaved, ' '))
			}},
			verifyDamage{name: base + " grown to 4 MiB and one byte with trailing spaces", code: "INVALID_SAVED_RESULT", do: func(d *damaged) {
				d.write(name, padded(d.read(name), maxSaved+1, ' '))
			}},
			verifyDamage{name: "garbage for " + base, code: "INVALID_SAVED_RESULT", do: func(d *damaged) { d.write(name, []byte("\x00\xff not JSON\n")) }},
			verifyDamage{name: "garbage bytes for " + base, code: "INVALID_SAVED_RESULT", do: func(d *damaged) { d.write(name, []byte("\x00\xff\xfe not JSON \x01\n")) }},
			verifyDamage{name: "an empty JSON object for " + base, code: "INVALID_SAVED_RESULT", do: func(d *damaged) { d.write(name, []byte("{}\n")) }},
			verifyDamage{name: "a directory for " + base, code: "INVALID_SAVED_RESULT", do: func(d *damaged) {
				d.remove(name)
				d.mkdir(name)
			}},
			verifyDamage{name: "a symlink to a copy of " + base + " inside the workspace", code: "INVALID_SAVED_RESULT", diskOnly: noSymlinks, do: func(d *damaged) {
				d.copyTo(name, "copies/"+base)
				d.symlink("../../copies/"+base, name)
			}},
			verifyDamage{name: "a symlink to a copy of " + base + " outside the workspace", code: "INVALID_SAVED_RESULT", diskOnly: noOutside, do: func(d *damaged) {
				d.copyTo(name, d.outsidePath(base))
				d.symlink(d.outsidePath(base), name)
			}},
		)
	}
	return cs
}
