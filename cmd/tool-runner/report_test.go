//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/internal/testutil"
)

// reportRun is one finished "tool-runner report" process.
type reportRun struct {
	stdout, stderr string
	exit           int
}

// runReport runs the real binary's report command in ws.
func runReport(t *testing.T, ws string, args ...string) reportRun {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(runnerPath(t), append([]string{"report"}, args...)...)
	cmd.Dir = ws
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := reportRun{stdout: out.String(), stderr: errOut.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
	default:
		t.Fatalf("report did not run: %v", err)
	}
	return r
}

// TestReportOfHostileRunAndLedgerFiles runs the real binary on runs an
// attacker who controls the run directory and the ledger would make. A
// receipt's build facts are checked for shape only (protocol §6.3), so a run
// whose receipt carries forged ones, with its checksum map made again,
// verifies: the page must show them as plain values, a link or an
// invisible character in neither format. And a run made again under an ID
// the ledger recorded for another result must not be said to be named by
// no record.
func TestReportOfHostileRunAndLedgerFiles(t *testing.T) {
	ws := fixture(t)
	analyze(t, ws, "runs", "plain-001")
	forged := "https://evil.example/get-go\u061C\U000E0041"
	dir := filepath.Join(ws, "runs", "forged-001")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	receipt, err := os.ReadFile(filepath.Join(ws, "runs", "plain-001", "receipt.json"))
	if err != nil {
		t.Fatal(err)
	}
	result, err := os.ReadFile(filepath.Join(ws, "runs", "plain-001", "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	receipt = bytes.Replace(receipt, []byte(`"run_id": "plain-001"`), []byte(`"run_id": "forged-001"`), 1)
	receipt = regexp.MustCompile(`"go_version": "[^"]*"`).ReplaceAll(receipt, []byte(`"go_version": "`+forged+`"`))
	writeFile(t, filepath.Join(dir, "receipt.json"), receipt)
	writeFile(t, filepath.Join(dir, "result.json"), result)
	writeFile(t, filepath.Join(dir, "checksums.json"), fmt.Appendf(nil, "{\n  \"receipt.json\": %q,\n  \"result.json\": %q\n}\n", testutil.SHA256Hex(receipt), testutil.SHA256Hex(result)))

	// again-001 is recorded, removed, and made again from other sources,
	// in a workspace of its own (its sources change).
	again := fixture(t)
	o := call(t, again, analyzeRequest("again-001", digestOf(t, again)), "--workspace", again, "--output-dir", "runs", "--ledger", "ledger.jsonl")
	if o.exit != 0 {
		t.Fatalf("recorded analyze failed: %s", o.raw)
	}
	if err := os.RemoveAll(filepath.Join(again, "runs", "again-001")); err != nil {
		t.Fatal(err)
	}
	tx := filepath.Join(again, "data", "transactions.csv")
	data, err := os.ReadFile(tx)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, tx, bytes.Replace(data, []byte("T1,C1,2,"), []byte("T1,C1,3,"), 1))
	analyze(t, again, "runs", "again-001")

	tests := []struct {
		name  string
		ws    string
		args  []string
		want  string
		never []string
	}{
		{"forged build facts", ws, []string{"--run-id", "forged-001"}, "# Run `forged-001`: verified", []string{"\u061C", "\U000E0041", "with https://"}},
		{"forged build facts as HTML", ws, []string{"--run-id", "forged-001", "--format", "html"}, "<!DOCTYPE html>", []string{"\u061C", "\U000E0041", "<a "}},
		{"a run made again under a recorded ID", again, []string{"--run-id", "again-001", "--ledger", "ledger.jsonl"}, "# Run `again-001`: verified", []string{"none of the ledger"}},
	}
	before, beforeAgain := snapshotTree(t, ws), snapshotTree(t, again)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r := runReport(t, tt.ws, append([]string{"--workspace", tt.ws, "--output-dir", "runs"}, tt.args...)...)
			is.Equal(r.exit, 0)
			is.Equal(r.stderr, "")
			is.True(strings.HasPrefix(r.stdout, tt.want))
			is.True(!strings.Contains(r.stdout, tt.ws)) // no absolute path
			if tt.name == "a run made again under a recorded ID" {
				is.True(strings.Contains(r.stdout, "with another result")) // the recorded one, said as it is
			}
			for _, never := range tt.never {
				is.True(!strings.Contains(r.stdout, never))
			}
		})
	}
	sameTree(t, before, snapshotTree(t, ws))
	sameTree(t, beforeAgain, snapshotTree(t, again))
}

// TestReportIsCancelledWhileItWaitsForTheLedger holds an exclusive lock on
// the ledger, starts a report with --ledger, and sends it SIGTERM while it
// waits for its shared lock: the operator's signal should end the wait,
// as it ends a tool call's (protocol §1.3, "cancelled while it waited for
// another process's lock"), and no page be printed.
func TestReportIsCancelledWhileItWaitsForTheLedger(t *testing.T) {
	ws := fixture(t)
	o := call(t, ws, analyzeRequest("locked-001", digestOf(t, ws)), "--workspace", ws, "--output-dir", "runs", "--ledger", "ledger.jsonl")
	if o.exit != 0 {
		t.Fatalf("analyze failed: %s", o.raw)
	}
	f, err := os.OpenFile(filepath.Join(ws, "ledger.jsonl"), os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(runnerPath(t), "report", "--workspace", ws, "--output-dir", "runs", "--run-id", "locked-001", "--ledger", "ledger.jsonl")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitsForFlock(t, cmd.Process.Pid, filepath.Join(ws, "ledger.jsonl")) // in the wait, its handler long installed
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	is := is.New(t)
	is.Equal(cmd.ProcessState.ExitCode(), 3)                   // cancelled, as a report cancelled during its checks
	is.Equal(out.String(), "")                                 // no page after a cancel
	is.True(strings.HasPrefix(errOut.String(), "CANCELLED: ")) // not the IO_OR_NUMERIC_ERROR of a wait that gave up
}
