package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
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

// cancelOnCall is a cancel marker that appears at the nth check.
type cancelOnCall struct {
	n, calls int
}

func (c *cancelOnCall) Cancelled(context.Context) (bool, error) {
	c.calls++
	return c.calls == c.n, nil
}

// diskWorkspace copies the fixture into a temporary directory on the real
// disk, where the promises about files are kept or broken.
func diskWorkspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range testutil.Fixture(t) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// diskRunner answers request over a workspace on the real disk, with the
// given cancel marker.
func diskRunner(t *testing.T, cancel ports.Canceller, request string) func(args ...string) response {
	wire := func(o app.Options) (app.Ports, io.Closer, error) {
		ws, err := osfs.Open(o.Workspace)
		if err != nil {
			return app.Ports{}, nil, err
		}
		return app.Ports{Sources: ws, Paths: ws, Evidence: ws, Ledger: ws, Cancel: cancel,
			Clock: porttest.FixedClock(fixedTime), Engine: fixedEngine()}, ws, nil
	}
	return func(args ...string) response {
		var out bytes.Buffer
		exit := stdio.Run(context.Background(), args, strings.NewReader(request), &out, wire)
		return decode(t, out.Bytes(), exit)
	}
}

// A marker at any of analyze's three check points (before work, before
// writes, just before the commit rename) stops the call: exit 3, status
// cancelled, no run and no pending directory. Before writes nothing at all
// is created; at the last point only the lock file (which may stay) is left.
func TestCancelAtEachCheckPointPreventsAnyCommit(t *testing.T) {
	for point := 1; point <= 3; point++ {
		t.Run([]string{"", "before work", "before writes", "before the commit"}[point], func(t *testing.T) {
			is := is.New(t)
			ws := diskWorkspace(t)
			digest := diskRunner(t, &cancelOnCall{}, inspect("i1"))("--workspace", ws).Body.Result
			var d struct {
				SourceDigest string `json:"source_digest"`
			}
			is.NoErr(json.Unmarshal(digest, &d))
			marker := &cancelOnCall{n: point}
			r := diskRunner(t, marker, analyzeReq("r1", d.SourceDigest))("--workspace", ws, "--output-dir", "runs/out")
			is.Equal(r.Exit, 3)
			is.Equal(r.Body.Status, "cancelled")
			is.Equal(r.code(), "CANCELLED")
			is.Equal(r.Body.OK, false)
			is.Equal(marker.calls, point) // stopped at that point, checked nothing after
			entries, err := os.ReadDir(filepath.Join(ws, "runs", "out"))
			if point < 3 {
				is.True(errors.Is(err, os.ErrNotExist)) // nothing written before writes
				return
			}
			is.NoErr(err)
			is.Equal(len(entries), 1) // no run, no pending directory
			is.Equal(entries[0].Name(), ".writer.lock")
		})
	}
	t.Run("no marker commits", func(t *testing.T) {
		is := is.New(t)
		ws := diskWorkspace(t)
		m := newMem(t, testutil.Fixture(t))
		marker := &cancelOnCall{}
		r := diskRunner(t, marker, analyzeReq("r1", m.digest()))("--workspace", ws, "--output-dir", "runs/out")
		is.Equal(r.Exit, 0)
		is.Equal(marker.calls, 3) // all three points were checked
		entries, err := os.ReadDir(filepath.Join(ws, "runs", "out"))
		is.NoErr(err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		is.Equal(names, []string{".writer.lock", "r1"}) // no pending directory survives
	})
}

func TestInspectAndVerifyCheckTheMarkerBeforeWork(t *testing.T) {
	for _, req := range []string{inspect("i1"), verifyReq("v1", "r1")} {
		is := is.New(t)
		m := newMem(t, testutil.Fixture(t))
		m.cancel = &cancelOnCall{n: 1}
		r := m.run(req, "--workspace", wsRoot, "--output-dir", "runs")
		is.Equal(r.code(), "CANCELLED")
		is.Equal(r.Exit, 3)
	}
}

// failingFs fails every file write, standing in for a full or broken disk.
type failingFs struct{ afero.Fs }

func (f failingFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if flag&os.O_EXCL != 0 {
		return nil, errors.New("injected: no space left on device at " + name)
	}
	return f.Fs.OpenFile(name, flag, perm)
}

func TestAWriteFailureCommitsNothingAndNamesNoPath(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	digest := m.digest()
	m.fs = failingFs{m.fs}
	ws, err := memfs.New(m.fs, wsRoot)
	is.NoErr(err)
	m.ws = ws
	r := m.run(analyzeReq("r1", digest), "--workspace", wsRoot, "--output-dir", "runs")
	is.Equal(r.code(), "IO_OR_NUMERIC_ERROR")
	is.True(strings.Contains(r.Body.Error.Message, "nothing was committed"))
	is.True(!strings.Contains(r.Raw, "/secret")) // the OS error's path is not shown
	entries, err := afero.ReadDir(m.fs, wsRoot+"/runs")
	is.NoErr(err)
	is.Equal(len(entries), 1) // no run, no pending directory: only the lock file
	is.Equal(entries[0].Name(), ".writer.lock")
}

// changingSources reads the sources as they are, except that from its
// nth read of transactions.csv on it returns other bytes, as though the
// operator had changed the file meanwhile.
type changingSources struct {
	ports.SourceReader
	n, reads int
}

func (c *changingSources) ReadSource(name string, limitBytes int64) ([]byte, error) {
	data, err := c.SourceReader.ReadSource(name, limitBytes)
	if err != nil || name != "data/transactions.csv" {
		return data, err
	}
	if c.reads++; c.reads >= c.n {
		return append(data, "T9,C1,1,1.00\n"...), nil
	}
	return data, nil
}

// protocol §6 step 6: sources that changed after analyze first read them,
// seen by the re-read once the files are written and fsynced (under the
// ledger's lock when there is one), commit nothing: STALE_CONTEXT, no run
// and no pending directory; with a ledger the refusal is recorded. (No
// test held this check before.)
func TestSourcesChangedWhileTheRunIsWrittenCommitNothing(t *testing.T) {
	for _, ledger := range []bool{false, true} {
		t.Run(map[bool]string{false: "no ledger", true: "a ledger"}[ledger], func(t *testing.T) {
			is := is.New(t)
			ws := diskWorkspace(t)
			m := newMem(t, testutil.Fixture(t))
			sources := &changingSources{n: 2}
			wire := func(o app.Options) (app.Ports, io.Closer, error) {
				w, err := osfs.Open(o.Workspace)
				if err != nil {
					return app.Ports{}, nil, err
				}
				sources.SourceReader = w
				return app.Ports{Sources: sources, Paths: w, Evidence: w, Ledger: w, Cancel: &cancelOnCall{},
					Clock: porttest.FixedClock(fixedTime), Engine: fixedEngine()}, w, nil
			}
			args := []string{"--workspace", ws, "--output-dir", "runs/out"}
			if ledger {
				args = append(args, "--ledger", "calls.jsonl")
			}
			var out bytes.Buffer
			exit := stdio.Run(context.Background(), args, strings.NewReader(analyzeReq("r1", m.digest())), &out, wire)
			r := decode(t, out.Bytes(), exit)
			is.Equal(r.code(), "STALE_CONTEXT")
			is.True(strings.Contains(r.Body.Error.Message, "the sources changed while the run was being written")) // the re-read saw it
			is.Equal(sources.reads, 2)                                                                             // read, then read again
			entries, err := os.ReadDir(filepath.Join(ws, "runs", "out"))
			is.NoErr(err)
			is.Equal(len(entries), 1) // no run, no pending directory
			is.Equal(entries[0].Name(), ".writer.lock")
			if ledger {
				records, err := os.ReadFile(filepath.Join(ws, "calls.jsonl"))
				is.NoErr(err)
				is.Equal(bytes.Count(records, []byte("\n")), 1)                    // the call is recorded ...
				is.True(bytes.Contains(records, []byte(`"code":"STALE_CONTEXT"`))) // ... as refused
			}
		})
	}
}
