package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/spf13/afero"

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
					Clock: porttest.FixedClock(fixedTime), Engine: engine()}, nil, nil
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
					Clock: porttest.FixedClock(fixedTime), Engine: engine()}, ws, nil
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
	if r := d.call(analyzeReq("r1", d.digest())); r.Exit != 0 {
		t.Fatalf("analyze: %s", r.Raw)
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

// photograph is every entry under the workspace: path, mode, size,
// modification time and bytes.
func (d *damaged) photograph() map[string]string {
	d.t.Helper()
	shot := map[string]string{}
	err := afero.Walk(d.view, ".", func(p string, info fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		entry := info.Mode().String() + " " + info.ModTime().String()
		if info.Mode().IsRegular() {
			b, err := afero.ReadFile(d.view, p)
			if err != nil {
				return err
			}
			entry += " " + testutil.SHA256Hex(b)
		}
		shot[filepath.ToSlash(p)] = entry
		return nil
	})
	if err != nil {
		d.t.Fatal(err)
	}
	return shot
}

// The damage matrix of verify_result (protocol §6) over both file systems,
// through the same Go calls: each case commits run r1, damages it one way,
// and verify_result names the first failing check's code and writes
// nothing. The cases that need what only a real disk has (symlinks, named
// pipes, other accounts) are cmd/tool-runner's, over real processes.
func TestVerifyNamesEachDamageOnBothFileSystems(t *testing.T) {
	const (
		result   = "runs/r1/result.json"
		receipt  = "runs/r1/receipt.json"
		checksum = "runs/r1/checksums.json"
	)
	saved := []string{result, receipt, checksum}
	type damage struct {
		name   string
		code   string // "" when the run still verifies
		caught string // a part of the message, when it matters which check caught it
		do     func(d *damaged)
	}
	cases := []damage{
		{"nothing", "", "", func(*damaged) {}},
		{"the run directory removed", "MISSING_RESULT", "", func(d *damaged) { d.remove("runs/r1") }},
		{"another run ID asked for", "MISSING_RESULT", "", func(d *damaged) { d.runID = "r2" }},
		{"a file added to the run", "INVALID_SAVED_RESULT", "", func(d *damaged) { d.write("runs/r1/notes.txt", []byte("fine\n")) }},
		{"a directory added to the run", "INVALID_SAVED_RESULT", "", func(d *damaged) {
			if err := d.view.Mkdir("runs/r1/.pending", 0o755); err != nil {
				d.t.Fatal(err)
			}
		}},
		{"the output directory removed", "MISSING_RESULT", "", func(d *damaged) { d.remove("runs") }},
		{"the rate's last digit", "RESULT_TAMPERED", "differ from checksums.json", func(d *damaged) {
			d.replace(result, `"rate": "0.827272727273"`, `"rate": "0.827272727272"`)
		}},
		{"the rate edited and every hash recomputed", "RESULT_TAMPERED", "a fresh computation", func(d *damaged) {
			oldResult, oldReceipt := testutil.SHA256Hex(d.read(result)), testutil.SHA256Hex(d.read(receipt))
			d.replace(result, `"rate": "0.827272727273"`, `"rate": "0.827272727274"`)
			d.reseal(oldResult, oldReceipt)
		}},
		{"the release marked eligible and every hash recomputed", "RESULT_TAMPERED", "a fresh computation", func(d *damaged) {
			oldResult, oldReceipt := testutil.SHA256Hex(d.read(result)), testutil.SHA256Hex(d.read(receipt))
			d.replace(result, `"eligible": false`, `"eligible": true`)
			d.reseal(oldResult, oldReceipt)
		}},
		{"the receipt's run_id key", "INVALID_SAVED_RESULT", "", func(d *damaged) { d.replace(receipt, `"run_id":`, `"run_ie":`) }},
		{"the engine's hash in the receipt", "RECEIPT_TAMPERED", "", func(d *damaged) {
			d.replace(receipt, strings.Repeat("e", 64), strings.Repeat("e", 63)+"f")
		}},
		{"a source changed after the run", "STALE_SOURCES", "", func(d *damaged) {
			d.write("data/groups.csv", append(d.read("data/groups.csv"), "G9,1,2\n"...))
		}},
		{"another engine verifying", "ENGINE_CHANGED", "", func(d *damaged) {
			e := fixedEngine()
			e.SHA256 = strings.Repeat("f", 64)
			d.engine = e
		}},
	}
	for _, name := range saved {
		cases = append(cases,
			damage{"deleting " + name, "MISSING_RESULT", "", func(d *damaged) { d.remove(name) }},
			damage{"emptying " + name, "INVALID_SAVED_RESULT", "", func(d *damaged) { d.write(name, nil) }},
			damage{"truncating " + name + " to half", "INVALID_SAVED_RESULT", "", func(d *damaged) {
				b := d.read(name)
				d.write(name, b[:len(b)/2])
			}},
			damage{"a second JSON document after " + name, "INVALID_SAVED_RESULT", "", func(d *damaged) {
				d.write(name, append(d.read(name), "{}\n"...))
			}},
			damage{"garbage for " + name, "INVALID_SAVED_RESULT", "", func(d *damaged) { d.write(name, []byte("\x00\xff not JSON\n")) }},
			damage{"a directory for " + name, "INVALID_SAVED_RESULT", "", func(d *damaged) {
				d.remove(name)
				if err := d.view.Mkdir(name, 0o755); err != nil {
					d.t.Fatal(err)
				}
			}},
		)
	}
	for _, f := range fileSystems() {
		for _, c := range cases {
			t.Run(f.name+"/"+c.name, func(t *testing.T) {
				is := is.New(t)
				d := commitRun(t, f)
				c.do(d)
				before := d.photograph()
				r := d.call(verifyReq("v1", d.runID))
				is.Equal(r.code(), c.code) // the first failing check's code
				if c.code == "" {
					is.Equal(r.Exit, 0)
				} else {
					is.Equal(r.Exit, 1)
					is.Equal(r.Body.OK, false)
					is.True(strings.Contains(r.Body.Error.Message, c.caught)) // the check that caught it
					is.True(!strings.Contains(r.Body.Error.Message, d.root))  // no absolute path
				}
				is.Equal(d.photograph(), before) // verify_result wrote nothing
				if t.Failed() {
					t.Logf("response: %s", r.Raw)
				}
			})
		}
	}
}
