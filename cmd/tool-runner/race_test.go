//go:build unix

package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/internal/testutil"
)

// The nested-output race of issue 7: analyze A commits run "nightly" in rN
// while analyze B, started 1–6 ms later, has rN/nightly as its output
// directory. B's early boundary check runs before A commits, so only a guard
// that holds when B creates and locks its output directory can keep B out of
// A's run. Every round must end with at most one of the two committed into
// the other's place, every committed run exactly its files and verifying.
//
// The guard's own refusal names the moment it fired, so the test counts the
// rounds where the two calls really overlapped: a loop that never raced
// could not pass.
func TestANestedOutputDirectoryNeverLandsInsideARun(t *testing.T) {
	testutil.SkipUnlessLong(t)
	is := is.New(t)
	rounds := 200
	if testing.Short() {
		rounds = 30
	}
	ws := maxFixture(t)
	digest := digestOf(t, ws)
	rng := rand.New(rand.NewPCG(7, 11))
	outcomes := map[string]int{}
	guardFired := 0
	for i := range rounds {
		outA := fmt.Sprintf("r%03d", i)
		outB := outA + "/nightly"
		a := startRunner(t, ws, "--workspace", ws, "--output-dir", outA)
		b := startRunner(t, ws, "--workspace", ws, "--output-dir", outB)
		a.send(t, analyzeRequest("nightly", digest))
		time.Sleep(time.Duration(1000+rng.IntN(5000)) * time.Microsecond) // B's lag behind A is what the rounds vary
		b.send(t, analyzeRequest("b1", digest))
		oa, ob := a.finish(t), b.finish(t)
		codeA, codeB := oa.code(), ob.code()
		outcomes[codeOr(codeA, "ok")+"/"+codeOr(codeB, "ok")]++
		if codeA == "" && codeB == "" {
			t.Fatalf("round %d: both committed; %s now holds %v", i, outB, entriesIn(t, filepath.Join(ws, outB)))
		}
		switch codeB {
		case "":
			is.Equal(codeA, "OUTPUT_COLLISION") // B's output directory took A's run ID
		case "PATH_BOUNDARY":
			is.Equal(codeA, "") // B was refused because A's run stood there
			if strings.Contains(ob.message(), "became a run") {
				guardFired++
			}
		default:
			t.Fatalf("round %d: B answered %s: %s", i, codeB, ob.raw)
		}
		if codeA == "" {
			names := entriesIn(t, filepath.Join(ws, outA, "nightly"))
			is.Equal(names, []string{"checksums.json", "receipt.json", "result.json"}) // A's run holds no foreign entry
		}
	}
	t.Logf("%d rounds: %v; the guard at creation fired in %d", rounds, outcomes, guardFired)
	if !testing.Short() {
		// 200 rounds always overlap somewhere (about a quarter of them
		// here); the 30 of -short may not, and then proved only that no
		// run was harmed.
		is.True(guardFired > 0) // the calls really overlapped at least once
	}
	// Every committed run verifies: one verify per run is a process each, so
	// they run last, once.
	for i := range rounds {
		outA := fmt.Sprintf("r%03d", i)
		nightly := filepath.Join(ws, outA, "nightly")
		if _, err := os.Stat(filepath.Join(nightly, "result.json")); err == nil {
			checkCompleteRun(t, ws, outA, "nightly") // A's run, nothing else in it
			continue
		}
		// B committed: rN/nightly is its output directory, never a run.
		if names := entriesIn(t, nightly); !slices.Equal(names, []string{".writer.lock", "b1"}) {
			t.Errorf("round %d: %s/nightly holds %v", i, outA, names)
		}
		checkCompleteRun(t, ws, outA+"/nightly", "b1")
	}
}

// codeOr is c, or alt when c is empty.
func codeOr(c, alt string) string {
	if c == "" {
		return alt
	}
	return c
}
