package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/internal/testutil"
)

// An analyze may not write into existing evidence: an output directory that
// is, or sits inside, a run directory (or a killed writer's pending
// directory) would add entries to it and make it fail verification forever.
// On both file systems.
func TestAnalyzeNeverWritesIntoExistingEvidence(t *testing.T) {
	for _, f := range fileSystems() {
		for _, out := range []string{"runs/r1", "runs/r1/sub", "runs/.pending-0123"} {
			t.Run(f.name+"/"+out, func(t *testing.T) {
				is := is.New(t)
				d := commitRun(t, f)
				is.NoErr(d.view.MkdirAll("runs/.pending-0123", 0o755))
				before := d.photograph()
				r := d.callWith(analyzeReq("nested", d.digest()), "--output-dir", out)
				is.Equal(r.code(), "PATH_BOUNDARY")
				is.Equal(d.photograph(), before)               // nothing written
				is.Equal(d.call(verifyReq("v", "r1")).Exit, 0) // the existing run still verifies
			})
		}
	}
}

// protocol §1: O must resolve inside W, whichever tool is called; a path that
// is a file is INVALID_OUTPUT. Only analyze applies the protected folders.
// On both file systems.
func TestEveryToolChecksAGivenOutputDirectory(t *testing.T) {
	tests := []struct {
		tool, out, code string
	}{
		{"inspect", "../elsewhere", "PATH_BOUNDARY"},
		{"inspect", "/etc", "PATH_BOUNDARY"},
		{"inspect", "notes.txt", "INVALID_OUTPUT"},
		{"inspect", "notes.txt/x", "INVALID_OUTPUT"},
		{"inspect", "data", ""},
		{"verify", "../elsewhere", "PATH_BOUNDARY"},
		{"verify", "notes.txt", "INVALID_OUTPUT"},
		{"verify", "data", "MISSING_RESULT"},
	}
	for _, f := range fileSystems() {
		for _, tt := range tests {
			t.Run(f.name+"/"+tt.tool+" "+tt.out, func(t *testing.T) {
				is := is.New(t)
				files := testutil.Fixture(t)
				files["notes.txt"] = []byte("x")
				d := openOn(t, f, files)
				req := inspect("i1")
				if tt.tool == "verify" {
					req = verifyReq("v1", "r1")
				}
				before := d.photograph()
				r := d.callWith(req, "--output-dir", tt.out)
				is.Equal(r.code(), tt.code)
				is.True(!strings.Contains(r.Raw, d.root)) // no absolute path
				is.Equal(d.photograph(), before)          // inspect and verify write nothing
			})
		}
	}
}

// reseal rewrites a saved run as a forger who knows the format would:
// edit the receipt and result, then recompute every hash that binds them.
func reseal(t *testing.T, m *memWorkspace, run string, editReceipt func(map[string]any), editResult func([]byte) []byte) {
	t.Helper()
	result := m.read(run + "/result.json")
	if editResult != nil {
		result = editResult(result)
	}
	var receipt map[string]any
	if err := json.Unmarshal(m.read(run+"/receipt.json"), &receipt); err != nil {
		t.Fatal(err)
	}
	receipt["result_sha256"] = testutil.SHA256Hex(result)
	if editReceipt != nil {
		editReceipt(receipt)
	}
	receiptBytes, err := json.MarshalIndent(receipt, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	checksums, _ := json.Marshal(map[string]string{"receipt.json": testutil.SHA256Hex(receiptBytes), "result.json": testutil.SHA256Hex(result)})
	for name, data := range map[string][]byte{"result.json": result, "receipt.json": receiptBytes, "checksums.json": checksums} {
		if err := afero.WriteFile(m.fs, wsRoot+"/"+run+"/"+name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// protocol §6: the receipt holds the clock's UTC time. Another zone is not the
// shape analyze writes.
func TestAReceiptTimeOutsideUTCIsNotASavedReceipt(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	is.Equal(m.run(analyzeReq("r1", m.digest()), "--workspace", wsRoot, "--output-dir", "runs").Exit, 0)
	reseal(t, m, "runs/r1", func(r map[string]any) { r["created_at"] = "2026-11-29T14:00:00+02:00" }, nil)
	r := m.run(verifyReq("v", "r1"), "--workspace", wsRoot, "--output-dir", "runs")
	is.Equal(r.code(), "INVALID_SAVED_RESULT")
}

// Check 7 answers with a code of the verify table: a forged run bound to
// sources this engine refuses is RESULT_TAMPERED, not the source's fault.
func TestARunBoundToSourcesTheEngineRefusesIsTampered(t *testing.T) {
	is := is.New(t)
	files := testutil.Fixture(t)
	m := newMem(t, files)
	is.Equal(m.run(analyzeReq("r1", m.digest()), "--workspace", wsRoot, "--output-dir", "runs").Exit, 0)
	bad := []byte("group_id,successes,eligible\nG1,3,2\n") // successes over eligible
	is.NoErr(afero.WriteFile(m.fs, wsRoot+"/data/groups.csv", bad, 0o644))
	files[domain.GroupsFile] = bad
	hashes := domain.HashSources(files)
	oldDigest := domain.HashSources(testutil.Fixture(t)).Digest()
	reseal(t, m, "runs/r1", func(r map[string]any) {
		r["sources"] = map[string]string(hashes)
		r["source_digest"] = hashes.Digest()
	}, func(b []byte) []byte {
		return []byte(strings.ReplaceAll(string(b), oldDigest, hashes.Digest()))
	})
	r := m.run(verifyReq("v", "r1"), "--workspace", wsRoot, "--output-dir", "runs")
	is.Equal(r.code(), "RESULT_TAMPERED")
	is.True(strings.Contains(r.Body.Error.Message, "data/groups.csv")) // says why
}
