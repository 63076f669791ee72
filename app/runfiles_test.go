package app_test

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/ports"
)

// tree lists every path and file content of the in-memory workspace.
func (m *memWorkspace) tree() map[string]string {
	m.t.Helper()
	out := map[string]string{}
	err := afero.Walk(m.fs, wsRoot, func(p string, info fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			out[p] = "/"
			return nil
		}
		data, err := afero.ReadFile(m.fs, p)
		out[p] = string(data)
		return err
	})
	if err != nil {
		m.t.Fatal(err)
	}
	return out
}

func (m *memWorkspace) write(rel, data string) {
	m.t.Helper()
	p := path.Join(wsRoot, rel)
	if err := m.fs.MkdirAll(path.Dir(p), 0o755); err != nil {
		m.t.Fatal(err)
	}
	if err := afero.WriteFile(m.fs, p, []byte(data), 0o644); err != nil {
		m.t.Fatal(err)
	}
}

// A run file is read whole and exact, after verify's read checks; what
// those checks refuse, and anything that is not a run file, is
// MISSING_RESULT. A read writes nothing, and is not recorded in the
// ledger.
func TestARunFileIsReadExactlyAndNothingElseIs(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	digest := m.digest()
	is.Equal(m.run(analyzeReq("r1", digest), "--workspace", wsRoot, "--output-dir", "runs").Exit, 0)
	m.write("runs/dir-result/result.json/x", "")
	m.write("runs/big/result.json", strings.Repeat(" ", evidence.MaxSavedBytes+1))
	m.write("runs/four/result.json", strings.Repeat(" ", evidence.MaxSavedBytes))
	s := m.mcpService("--output-dir", "runs", "--ledger", "calls.jsonl")
	before := m.tree()

	for _, name := range ports.RunFileNames()[:3] {
		data, e := s.svc.ReadRunFile(context.Background(), "r1", name)
		is.True(e == nil)
		is.Equal(string(data), string(m.read("runs/r1/"+name))) // exact bytes
	}
	data, e := s.svc.ReadRunFile(context.Background(), "four", "result.json")
	is.True(e == nil)
	is.Equal(len(data), evidence.MaxSavedBytes) // exactly the limit is read

	for _, tt := range []struct{ run, name string }{
		{"r1", "attestation.json"}, // an unsigned run has none
		{"r2", "result.json"},      // no such run
		{"../r1", "result.json"}, {"", "result.json"}, {"r1/x", "result.json"}, {".pending-x", "result.json"}, {strings.Repeat("a", 65), "result.json"},
		{"r1", "notes.txt"}, {"r1", ""}, {"r1", "result.json/.."}, {"r1", "Result.json"},
		{"dir-result", "result.json"}, // not a regular file
		{"big", "result.json"},        // over 4 MiB
	} {
		_, err := s.svc.ReadRunFile(context.Background(), tt.run, tt.name)
		e := protocol.ErrorOf(err)
		is.True(e != nil)                        // tt
		is.Equal(e.Code, protocol.MissingResult) // not found
		is.True(!strings.Contains(e.Message, wsRoot))
	}
	is.Equal(m.tree(), before) // nothing written, no ledger record

	for _, args := range [][]string{{}, {"--output-dir", "not-yet"}} {
		_, err := m.mcpService(args...).svc.ReadRunFile(context.Background(), "r1", "result.json")
		is.Equal(protocol.ErrorOf(err).Code, protocol.MissingResult) // no output directory: no runs
	}
}

// The runs are every directory of O with an ID for a name and a regular
// result.json, sorted by ID, a page at a time.
func TestRunsAreListedSortedAPageAtATime(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	is.Equal(m.run(analyzeReq("r-real", m.digest()), "--workspace", wsRoot, "--output-dir", "runs").Exit, 0)
	var want []string
	for i := range 249 {
		id := fmt.Sprintf("run%03d", 248-i)
		m.write("runs/"+id+"/result.json", strings.Repeat("x", i))
		want = append(want, id)
	}
	want = append(want, "r-real")
	for _, other := range []string{".pending-abc/result.json", "notes/receipt.json", "file-run", "bad.id/result.json", "dir-result/result.json/x"} {
		m.write("runs/"+other, "{}")
	}
	s := m.mcpService("--output-dir", "runs")
	before := m.tree()

	var got []string
	after, pages := "", 0
	for {
		runs, more, e := s.svc.Runs(context.Background(), after, 100)
		is.True(e == nil)
		pages++
		for _, r := range runs {
			got = append(got, r.Name)
			is.Equal(r.ResultBytes, int64(len(m.read("runs/"+r.Name+"/result.json")))) // its size
		}
		if !more {
			is.True(len(runs) <= 100)
			break
		}
		is.Equal(len(runs), 100) // a full page
		after = runs[len(runs)-1].Name
	}
	is.Equal(pages, 3)
	wantSorted := append([]string{"r-real"}, want[:249]...)
	for i, j := 1, len(wantSorted)-1; i < j; i, j = i+1, j-1 {
		wantSorted[i], wantSorted[j] = wantSorted[j], wantSorted[i]
	}
	is.Equal(got, wantSorted) // sorted by ID, the rest left out
	is.Equal(m.tree(), before)

	runs, more, e := m.mcpService().svc.Runs(context.Background(), "", 100)
	is.True(e == nil && !more && len(runs) == 0) // without --output-dir, none
}
