//go:build linux

package osfs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/metricproof/metricproof/internal/testutil"
)

// The sweep of issue 23's faults through the real program: one analyze
// with a ledger, run by the binary README's command builds, under strace,
// with the N-th call of one syscall failing with EIO, for every N until
// none is left to fail (strace counts per thread, so N hits the N-th call
// of each thread: every call is hit in some run, sometimes beside
// others). Whatever fails, the answer never contradicts the disk
// (checkAgainstDisk); an answer that was never sent (stdout's write
// failed, or the runtime died) leaves what a kill leaves. The in-process
// sweep (TestEveryIOFaultOfOneAnalyzeNeverContradictsTheDisk) reaches the
// workspace's seams; this one also the ledger's own opens, the runtime's
// calls and standard output. Minutes on a loaded machine: METRICPROOF_LONG=1.
func TestStraceSweepOfOneAnalyzeNeverContradictsTheDisk(t *testing.T) {
	testutil.SkipUnlessLong(t)
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed (apt-get install strace)")
	}
	if out, err := exec.Command(strace, "-f", "-qq", "-o", "/dev/null", "true").CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here (ptrace denied?): %v: %s", err, out)
	}
	runner := filepath.Join(t.TempDir(), "tool-runner")
	build := exec.Command("go", "build", "-trimpath", "-o", runner, "./cmd/tool-runner")
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v: %s", err, out)
	}
	verify := func(t *testing.T, dir string) string {
		cmd := exec.Command(runner, "--workspace", dir, "--output-dir", "runs")
		cmd.Stdin = strings.NewReader(`{"request_id":"v1","tool":"verify_result","arguments":{"run_id":"r1"}}`)
		out, _ := cmd.Output()
		var answer struct{ Error *struct{ Code string } }
		if err := json.Unmarshal(out, &answer); err != nil {
			t.Fatalf("verify: %v: %q", err, out)
		}
		if answer.Error != nil {
			return answer.Error.Code
		}
		return ""
	}
	// Each syscall fails at its N-th call alone; then from its N-th call
	// on ("N+"), so that what follows a failure (a cut back, its flush,
	// a rename back) fails as well; and alone again with every ftruncate
	// failing, the cut back of a record.
	type sweep struct{ syscall, when, also string }
	var sweeps []sweep
	for _, sc := range []string{"fsync", "renameat2", "ftruncate", "write", "openat"} {
		sweeps = append(sweeps, sweep{sc, "%d", ""})
	}
	sweeps = append(sweeps, sweep{"fsync", "%d+", ""}, sweep{"write", "%d+", ""}, sweep{"renameat2", "%d+", ""},
		sweep{"fsync", "%d", "ftruncate"}, sweep{"write", "%d", "ftruncate"})
	total := 0
	for _, sw := range sweeps {
		misses := 0
		for n := 1; n <= 400; n++ {
			dir, args, request := sweepSetup(t)
			logFile := filepath.Join(t.TempDir(), "strace.log")
			when := fmt.Sprintf(sw.when, n)
			trace := sw.syscall + ",ftruncate"
			opts := []string{"-e", fmt.Sprintf("inject=%s:error=EIO:when=%s", sw.syscall, when)}
			if sw.also != "" {
				opts = append(opts, "-e", "inject="+sw.also+":error=EIO")
			}
			cmd := exec.Command(strace, append(append([]string{"-f", "-qq", "-o", logFile, "-e", "trace=" + trace}, opts...), "env", "GOMAXPROCS=1", runner)...)
			cmd.Args = append(cmd.Args, args...)
			cmd.Stdin = strings.NewReader(request)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			_ = cmd.Run() // its exit code is checked through its answer
			log, err := os.ReadFile(logFile)
			if err != nil {
				t.Fatal(err)
			}
			injected := strings.Contains(string(log), sw.syscall+"(") && bytes.Contains(log, []byte("(INJECTED)"))
			var hits []string
			for _, l := range strings.Split(string(log), "\n") {
				if strings.Contains(l, "INJECTED") && strings.Contains(l, " "+sw.syscall+"(") {
					hits = append(hits, l)
				}
			}
			if !injected || len(hits) == 0 {
				// No thread made an n-th call: the sweep of this syscall
				// is done (twice in a row, as threads share calls unevenly).
				if misses++; misses == 2 {
					t.Logf("%s when=%s also=%q: swept to %d", sw.syscall, sw.when, sw.also, n-2)
					break
				}
				continue
			}
			misses = 0
			total++
			t.Run(fmt.Sprintf("%s when=%s also=%s", sw.syscall, when, sw.also), func(t *testing.T) {
				for _, l := range strings.Split(string(log), "\n") {
					if strings.Contains(l, "INJECTED") {
						t.Logf("injected: %.200s", l)
					}
				}
				cut := regexp.MustCompile(`ftruncate\([0-9]+, [0-9]+\) += 0`).Match(log)
				checkAgainstDisk(t, dir, args, stdout.String(), verify, cut)
			})
		}
	}
	t.Logf("%d runs, each with one syscall failing", total)
}
