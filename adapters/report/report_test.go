package report_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"flag"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/adapters/memfs"
	"github.com/metricproof/metricproof/adapters/porttest"
	"github.com/metricproof/metricproof/adapters/report"
	"github.com/metricproof/metricproof/adapters/stdio"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/ports"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden; review the diff before committing")

// wsRoot is where the in-memory workspace lives; no page may mention it.
const wsRoot = "/secret/operator/ws"

// The fixed clock, engine and key of every golden run: what varies from
// run to run (created_at, the engine's hash, the signature) is fixed
// here, so the pages are the same bytes on every machine.
var fixedTime = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func fixedEngine() porttest.FixedEngine {
	return porttest.FixedEngine{SHA256: strings.Repeat("e", 64), GoVersion: "go1.26.8", ModuleVersion: "(devel)", VCSRevision: strings.Repeat("a1", 20), VCSModified: new(bool)}
}

// readmeSettings are the build settings README's command records in a
// clean clone at fixedEngine's revision: the engine of every golden run,
// which the page finds rebuildable.
func readmeSettings() map[string]string {
	return map[string]string{"-buildmode": "exe", "-compiler": "gc", "-trimpath": "true", "CGO_ENABLED": "0", "GOAMD64": "v1", "GOARCH": "amd64", "GOOS": "linux",
		"vcs": "git", "vcs.revision": strings.Repeat("a1", 20), "vcs.time": "2026-11-29T11:00:00Z", "vcs.modified": "false"}
}

// fixedKey reads one Ed25519 key, made from a fixed seed, for any path.
type fixedKey struct{}

func (fixedKey) key() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
}
func (k fixedKey) SigningKey(string) (ed25519.PrivateKey, error) { return k.key(), nil }
func (k fixedKey) TrustedKey(string) (ed25519.PublicKey, error) {
	return k.key().Public().(ed25519.PublicKey), nil
}

// workspace is an in-memory workspace holding the shipped fixture.
type workspace struct {
	t  *testing.T
	fs afero.Fs
	ws *memfs.Workspace
	// engine is the engine every call and report runs with, and settings
	// its build settings, which the report is given.
	engine   porttest.FixedEngine
	settings map[string]string
}

func newWorkspace(t *testing.T) *workspace {
	t.Helper()
	fs := afero.NewMemMapFs()
	for name, data := range testutil.Fixture(t) {
		p := path.Join(wsRoot, name)
		if err := fs.MkdirAll(path.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := afero.WriteFile(fs, p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := memfs.New(fs, wsRoot)
	if err != nil {
		t.Fatal(err)
	}
	return &workspace{t: t, fs: fs, ws: ws, engine: fixedEngine(), settings: readmeSettings()}
}

func (w *workspace) wire(o app.Options) (app.Ports, io.Closer, error) {
	if o.Workspace != wsRoot {
		return app.Ports{}, nil, ports.ErrMissing
	}
	return app.Ports{
		Sources: w.ws, Paths: w.ws, Evidence: w.ws, Ledger: w.ws, Keys: fixedKey{},
		Cancel: w.ws.Marker(o.CancelFile), Clock: porttest.FixedClock(fixedTime), Engine: w.engine,
	}, nil, nil
}

// call answers one request through the one-shot transport.
func (w *workspace) call(request string, args ...string) string {
	w.t.Helper()
	var out bytes.Buffer
	if exit := stdio.Run(context.Background(), append([]string{"--workspace", wsRoot}, args...), strings.NewReader(request), &out, w.wire); exit != 0 {
		w.t.Fatalf("call failed: %s", out.String())
	}
	return out.String()
}

// analyze commits run id in runs, after inspecting for the digest.
func (w *workspace) analyze(id string, args ...string) {
	w.t.Helper()
	line := w.call(`{"request_id":"i1","tool":"inspect_inputs","arguments":{}}`)
	_, rest, _ := strings.Cut(line, `"source_digest":"`)
	digest, _, _ := strings.Cut(rest, `"`)
	w.call(`{"request_id":"`+id+`","tool":"analyze","arguments":{"expected_source_digest":"`+digest+`"}}`, append([]string{"--output-dir", "runs"}, args...)...)
}

// report runs tool-runner report with the arguments after the word.
func (w *workspace) report(args ...string) (stdout, stderr string, exit int) {
	var out, errOut bytes.Buffer
	exit = report.Run(context.Background(), append([]string{"--workspace", wsRoot}, args...), &out, &errOut, w.wire, w.settings)
	return out.String(), errOut.String(), exit
}

func (w *workspace) edit(rel string, change func(string) string) {
	w.t.Helper()
	p := path.Join(wsRoot, rel)
	data, err := afero.ReadFile(w.fs, p)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := afero.WriteFile(w.fs, p, []byte(change(string(data))), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// golden compares got with testdata/golden/name, or rewrites it under
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (run with -update and review the diff):\n%s", name, got)
	}
}

func TestPagesMatchTheirGoldenFiles(t *testing.T) {
	tests := []struct {
		name  string
		setup func(w *workspace) []string // the report's arguments
		exit  int
		first string // the page's first line, in Markdown
	}{
		{"fixture", func(w *workspace) []string {
			w.analyze("demo-001")
			return []string{"--output-dir", "runs", "--run-id", "demo-001"}
		}, 0, "# Run `demo-001`: verified — **release: not eligible** (2 blockers)"},
		{"eligible", func(w *workspace) []string {
			// No blocker, and amounts the page groups by thousands.
			w.edit("data/transactions.csv", func(s string) string {
				return strings.NewReplacer("T1,C1,2,100.00,0.10", "T1,C1,1000,9007855.54,0", "T4,C4,3,,0", "T4,C4,3,1234.5,0").Replace(s)
			})
			w.edit("data/customers.csv", func(s string) string { return strings.Replace(s, "C2,wholesale\n", "", 1) })
			w.analyze("eligible-001")
			return []string{"--output-dir", "runs", "--run-id", "eligible-001"}
		}, 0, "# Run `eligible-001`: verified — **release: eligible**"},
		{"signed-ledger", func(w *workspace) []string {
			w.analyze("signed-001", "--signing-key", "k.pem", "--ledger", "ledger.jsonl")
			w.call(`{"request_id":"v1","tool":"verify_result","arguments":{"run_id":"signed-001"}}`, "--output-dir", "runs", "--ledger", "ledger.jsonl")
			return []string{"--output-dir", "runs", "--run-id", "signed-001", "--trusted-key", "k.pub", "--ledger", "ledger.jsonl"}
		}, 0, "# Run `signed-001`: verified — **release: not eligible** (2 blockers)"},
		{"tampered", func(w *workspace) []string {
			w.analyze("demo-001")
			w.edit("runs/demo-001/result.json", func(s string) string {
				return strings.Replace(s, `"known_subtotal": "140"`, `"known_subtotal": "1400"`, 1)
			})
			return []string{"--output-dir", "runs", "--run-id", "demo-001"}
		}, 1, "# Run `demo-001`: do not rely on this run — `RESULT_TAMPERED`: the bytes of result.json differ from checksums.json"},
		{"engine-changed", func(w *workspace) []string {
			// The demo's case: a run made by go run's engine, reported on
			// with a built binary.
			w.analyze("demo-001")
			w.engine.SHA256 = strings.Repeat("b", 64)
			return []string{"--output-dir", "runs", "--run-id", "demo-001"}
		}, 1, "# Run `demo-001`: do not rely on this run — `ENGINE_CHANGED`: the running engine is not the one that made run demo-001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			w := newWorkspace(t)
			args := tt.setup(w)
			for _, format := range []string{"markdown", "html"} {
				out, errOut, exit := w.report(append(args, "--format", format)...)
				is.Equal(exit, tt.exit)
				is.Equal(errOut, "")
				is.True(!strings.Contains(out, wsRoot)) // no absolute path
				ext := map[string]string{"markdown": ".md", "html": ".html"}[format]
				golden(t, tt.name+ext, out)
				again, _, _ := w.report(append(args, "--format", format)...)
				is.Equal(again, out) // deterministic: no time of printing
				if format == "markdown" {
					first, _, _ := strings.Cut(out, "\n")
					is.Equal(first, tt.first) // the verdict first
					plain, _, _ := w.report(args...)
					is.Equal(plain, out) // Markdown is the default
				}
				if tt.exit != 0 {
					// No numbers of a run that does not verify.
					for _, hidden := range []string{"## The numbers", "<h2>The numbers", "Release:", "0.827272727273", "140", "Created at"} {
						is.True(!strings.Contains(out, hidden))
					}
				}
			}
		})
	}
}

// A report cancelled by a signal (its context) prints no page: the run
// was not found at fault, so "do not rely on this run" would be false. It
// says so in one line on standard error and exits 3, as a cancelled
// one-shot call does (protocol §1, §13 are silent on a cancelled report).
func TestACancelledReportPrintsNoPage(t *testing.T) {
	w := newWorkspace(t)
	w.analyze("r1")
	for _, format := range []string{"markdown", "html"} {
		t.Run(format, func(t *testing.T) {
			is := is.New(t)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var out, errOut bytes.Buffer
			exit := report.Run(ctx, []string{"--workspace", wsRoot, "--output-dir", "runs", "--run-id", "r1", "--format", format}, &out, &errOut, w.wire, readmeSettings())
			is.Equal(exit, 3)
			is.Equal(out.String(), "") // no page
			is.True(strings.HasPrefix(errOut.String(), "CANCELLED: "))
			is.Equal(strings.Count(errOut.String(), "\n"), 1)
			is.True(!strings.Contains(errOut.String(), "committed")) // the report commits nothing: no tool's words
		})
	}
}

// failingWriter is a standard output that takes nothing, as /dev/full.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrShortWrite }

// Neither the page nor the usage claims success when standard output
// takes none of it: exit 1, as for a page not delivered.
func TestNothingDeliveredIsNoSuccess(t *testing.T) {
	w := newWorkspace(t)
	w.analyze("r1")
	for _, args := range [][]string{{"--output-dir", "runs", "--run-id", "r1"}, {"--help"}} {
		t.Run(args[0], func(t *testing.T) {
			is := is.New(t)
			var errOut bytes.Buffer
			is.Equal(report.Run(context.Background(), append([]string{"--workspace", wsRoot}, args...), failingWriter{}, &errOut, w.wire, readmeSettings()), 1)
		})
	}
}
