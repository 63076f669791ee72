//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/internal/testutil"
)

// TestVerifyNamesEachDamageOfACommittedRun is verify_result's damage
// matrix on the real filesystem, in the manner of restic's checker tests
// and git's fsck tests. Each case commits run r1 into runs/ of a fresh
// fixture workspace with the real binary, damages it one way (the last
// rows damage it two ways at once, to pin the order of the checks),
// photographs every entry of the workspace and of a scratch directory
// outside it, runs verify_result, and asserts
//
//   - the exact fault code protocol §6's table gives for the first failing
//     check (1 MISSING_RESULT, 2 INVALID_SAVED_RESULT, 3 RECEIPT_TAMPERED,
//     4 RESULT_TAMPERED, 5 STALE_SOURCES, 6 ENGINE_CHANGED, 7
//     RESULT_TAMPERED), with exit 1 and ok false, or success where the
//     damage is one the contract does not see;
//   - for RESULT_TAMPERED, which of checks 4 and 7 caught it;
//   - that verify_result changed nothing: the same paths, types, modes,
//     sizes, modification times, bytes and symlink targets afterwards, so
//     no lock file, pending directory or repair was made anywhere.
func TestVerifyNamesEachDamageOfACommittedRun(t *testing.T) {
	eng := damageEngines(t)
	for _, c := range damageCases() {
		t.Run(c.name+" "+damageVerdict(c.code), func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			r := damageCommitRun(t, eng)
			c.damage(r)
			before := r.photograph()
			o := r.verify()
			if c.code == "" {
				r.assertVerified(o)
			} else {
				is.Equal(o.exit, 1)                       // a fault is a handled error
				is.Equal(o.resp["ok"], false)             // ok is false
				is.Equal(o.resp["status"], "error")       // status is error
				is.Equal(o.resp["tool"], "verify_result") // the tool is named
				is.Equal(o.resp["result"], nil)           // a fault has no result
				is.Equal(o.resp["artifacts"], map[string]any{})
				is.Equal(o.code(), c.code) // the first failing check's code
				e, _ := o.resp["error"].(map[string]any)
				is.Equal(e["retryable"], false) // only OUTPUT_BUSY is retryable
				if c.caught != "" {
					is.True(strings.Contains(o.message(), c.caught)) // the expected check caught it
				}
				if t.Failed() {
					t.Logf("response: %s", o.raw)
				}
			}
			r.assertUnchanged(before)
		})
	}
}

// TestVerifyAcceptsAnUndamagedRun is the matrix's control: the undamaged
// run verifies, lists every check in the protocol's order, gives the same answer
// twice, and leaves the tree as it found it.
func TestVerifyAcceptsAnUndamagedRun(t *testing.T) {
	is := is.New(t)
	r := damageCommitRun(t, damageEngineSet{})
	before := r.photograph()
	o := r.verify()
	r.assertVerified(o)
	is.Equal(o.result()["checks"], []any{"run_present", "saved_files_valid", "receipt_bound", "result_bound", "sources_unchanged", "engine_unchanged", "result_recomputed"})
	again := r.verify()
	is.Equal(again.raw, o.raw) // verifying is repeatable
	r.assertUnchanged(before)
}

// damageCase is one row of the matrix.
type damageCase struct {
	name   string            // what was done to the run, as a phrase
	damage func(*damagedRun) // does it
	code   string            // the expected fault code; "" when the run still verifies
	caught string            // for RESULT_TAMPERED: a phrase of the message naming the check
}

// Phrases of verify_result's messages that tell checks 4 and 7 apart.
const (
	caughtByChecksums  = "differ from checksums.json"              // check 4, against the checksum map
	caughtByReceipt    = "differ from the receipt's result_sha256" // check 4, against the receipt
	caughtByOwnSources = "names other sources than its receipt"    // check 4, result vs receipt
	caughtByRecompute  = "a fresh computation"                     // check 7
)

func damageVerdict(code string) string {
	if code == "" {
		return "still verifies"
	}
	return "gives " + code
}

// The three files of a run.
var damageSavedFiles = []string{"result.json", "receipt.json", "checksums.json"}

// damageWhitespaceCode is what extra or missing whitespace in a saved file
// gives: the receipt's and the result's bytes are hashed (checks 3 and 4), but
// checksums.json is hashed nowhere, so a layout change that keeps its JSON
// value is invisible and the run still verifies (protocol §6 binds the
// receipt and result bytes only).
func damageWhitespaceCode(name string) (code, caught string) {
	switch name {
	case "receipt.json":
		return "RECEIPT_TAMPERED", ""
	case "result.json":
		return "RESULT_TAMPERED", caughtByChecksums
	}
	return "", ""
}

// damageCases is the matrix.
func damageCases() []damageCase {
	const maxSaved = 4 * 1024 * 1024
	var cs []damageCase
	add := func(name, code, caught string, damage func(*damagedRun)) {
		cs = append(cs, damageCase{name: name, damage: damage, code: code, caught: caught})
	}

	// Every saved file, damaged the same ways.
	for _, name := range damageSavedFiles {
		rel := "runs/r1/" + name
		wsCode, wsCaught := damageWhitespaceCode(name)
		add("deleting "+name, "MISSING_RESULT", "", func(r *damagedRun) { r.remove(rel) })
		add("flipping the opening brace of "+name+" out of JSON", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
			r.flipByte(rel, 0, '{', '{'^1)
		})
		add("truncating "+name+" to half its length", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
			b := r.read(rel)
			r.write(rel, b[:len(b)/2])
		})
		add("emptying "+name, "INVALID_SAVED_RESULT", "", func(r *damagedRun) { r.write(rel, nil) })
		add("appending garbage to "+name, "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
			r.write(rel, append(r.read(rel), "garbage\n"...))
		})
		add("appending a second JSON document to "+name, "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
			r.write(rel, append(r.read(rel), "{}\n"...))
		})
		add("appending whitespace to "+name, wsCode, wsCaught, func(r *damagedRun) {
			r.write(rel, append(r.read(rel), " \n\t\n"...))
		})
		add("dropping the trailing newline of "+name, wsCode, wsCaught, func(r *damagedRun) {
			b := r.read(rel)
			r.write(rel, bytes.TrimSuffix(b, []byte("\n")))
		})
		add("growing "+name+" to exactly 4 MiB with trailing spaces", wsCode, wsCaught, func(r *damagedRun) {
			r.write(rel, damagePadded(r.read(rel), maxSaved))
		})
		add("growing "+name+" to 4 MiB and one byte with trailing spaces", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
			r.write(rel, damagePadded(r.read(rel), maxSaved+1))
		})
		add("replacing "+name+" with garbage bytes", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
			r.write(rel, []byte("\x00\xff\xfe not JSON \x01\n"))
		})
		add("replacing "+name+" with an empty JSON object", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
			r.write(rel, []byte("{}\n"))
		})
		add("replacing "+name+" with a symlink to a copy of itself inside the workspace", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
			r.copy(rel, "copies/"+name)
			r.symlink("../../copies/"+name, rel)
		})
		add("replacing "+name+" with a symlink to a copy of itself outside the workspace", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
			r.copy(rel, r.outsidePath(name))
			r.symlink(r.outsidePath(name), rel)
		})
		add("replacing "+name+" with a directory", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
			r.remove(rel)
			r.mkdir(rel)
		})
		add("replacing "+name+" with a named pipe", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
			r.remove(rel)
			if err := unix.Mkfifo(r.path(rel), 0o644); err != nil {
				r.t.Fatal(err)
			}
		})
	}

	// Single bytes flipped so that the JSON stays valid of its shape: only
	// the hashes can see them.
	add("flipping a hex digit of engine_sha256 in receipt.json", "RECEIPT_TAMPERED", "", func(r *damagedRun) {
		r.flipHex("runs/r1/receipt.json", r.receipt()["engine_sha256"].(string))
	})
	add("flipping the last digit of the rate in result.json", "RESULT_TAMPERED", caughtByChecksums, func(r *damagedRun) {
		r.replaceOnce("runs/r1/result.json", `"rate": "0.827272727273"`, `"rate": "0.827272727272"`)
	})
	add("flipping a digit of the successes count in result.json", "RESULT_TAMPERED", caughtByChecksums, func(r *damagedRun) {
		r.replaceOnce("runs/r1/result.json", `"successes": 91,`, `"successes": 81,`)
	})
	add("flipping a hex digit of the receipt hash in checksums.json", "RECEIPT_TAMPERED", "", func(r *damagedRun) {
		r.flipHex("runs/r1/checksums.json", r.checksums()["receipt.json"])
	})
	add("flipping a hex digit of the result hash in checksums.json", "RESULT_TAMPERED", caughtByChecksums, func(r *damagedRun) {
		r.flipHex("runs/r1/checksums.json", r.checksums()["result.json"])
	})
	// Single bytes flipped so that the JSON is no longer of its shape.
	add("flipping a hex letter of a hash in checksums.json to upper case", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		h := r.checksums()["receipt.json"]
		i := strings.IndexAny(h, "abcdef")
		if i < 0 {
			r.t.Fatal("the receipt hash has no hex letter")
		}
		r.replaceOnce("runs/r1/checksums.json", h, h[:i]+strings.ToUpper(h[i:i+1])+h[i+1:])
	})
	add("flipping a byte of the run_id key in receipt.json", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		r.replaceOnce("runs/r1/receipt.json", `"run_id":`, `"run_ie":`)
	})
	add("flipping a byte of the rate key in result.json", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		r.replaceOnce("runs/r1/result.json", `"rate":`, `"rbte":`)
	})
	add("repeating a key in receipt.json", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		r.replaceOnce("runs/r1/receipt.json", `"protocol_version"`, `"run_id": "r1",
  "protocol_version"`)
		r.reseal()
	})
	add("adding a third key to checksums.json", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		m := r.checksums()
		m["notes.txt"] = m["result.json"]
		r.write("runs/r1/checksums.json", damageIndented(m))
	})

	// The run directory itself.
	add("deleting the run directory", "MISSING_RESULT", "", func(r *damagedRun) { r.remove("runs/r1") })
	add("deleting all three files of the run", "MISSING_RESULT", "", func(r *damagedRun) {
		for _, name := range damageSavedFiles {
			r.remove("runs/r1/" + name)
		}
	})
	add("asking for a run ID that never existed", "MISSING_RESULT", "", func(r *damagedRun) { r.runID = "r2" })
	add("replacing the run directory with a symlink to a copy of it inside the workspace", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		r.copy("runs/r1", "copies/r1")
		r.symlink("../copies/r1", "runs/r1")
	})
	add("replacing the run directory with a symlink to a copy of it outside the workspace", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		r.copy("runs/r1", r.outsidePath("r1"))
		r.symlink(r.outsidePath("r1"), "runs/r1")
	})
	add("replacing the run directory with a dangling symlink", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		r.symlink("nowhere", "runs/r1")
	})
	add("replacing the run directory with a regular file", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		r.remove("runs/r1")
		r.write("runs/r1", []byte("{}\n"))
	})
	// Documented decision: a run is exactly its three files.
	add("adding notes.txt to the run directory", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		r.write("runs/r1/notes.txt", []byte("looked fine to me\n"))
	})
	add("adding a hidden file to the run directory", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		r.write("runs/r1/.notes", nil)
	})
	add("adding an empty directory to the run directory", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		r.mkdir("runs/r1/.pending")
	})
	add("adding a symlink to the run directory", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		r.symlink("result.json", "runs/r1/latest")
	})

	// The output directory.
	add("deleting the output directory", "MISSING_RESULT", "", func(r *damagedRun) { r.remove("runs") })
	add("replacing the output directory with a regular file", "INVALID_OUTPUT", "", func(r *damagedRun) {
		r.remove("runs")
		r.write("runs", nil)
	})
	// protocol §6: O resolves, symlinks first, inside the workspace; the run
	// below it may not be a symlink, but O itself may.
	add("replacing the output directory with a symlink to a copy of it inside the workspace", "", "", func(r *damagedRun) {
		r.copy("runs", "copies/runs")
		r.symlink("copies/runs", "runs")
	})
	add("replacing the output directory with a symlink to a copy of it outside the workspace", "PATH_BOUNDARY", "", func(r *damagedRun) {
		r.copy("runs", r.outsidePath("runs"))
		r.symlink(r.outsidePath("runs"), "runs")
	})

	// Consistent forgeries: every hash recomputed, so only the binding of
	// fields (check 3), the sources (5), the engine (6) or the
	// recomputation (7) can tell.
	add("editing the rate in result.json and recomputing every hash", "RESULT_TAMPERED", caughtByRecompute, func(r *damagedRun) {
		r.replaceOnce("runs/r1/result.json", `"rate": "0.827272727273"`, `"rate": "0.827272727274"`)
		r.bindResult()
		r.reseal()
	})
	add("editing a net_revenue in result.json and recomputing every hash", "RESULT_TAMPERED", caughtByRecompute, func(r *damagedRun) {
		r.replaceOnce("runs/r1/result.json", `"net_revenue": "180"`, `"net_revenue": "181"`)
		r.bindResult()
		r.reseal()
	})
	add("marking the release eligible in result.json and recomputing every hash", "RESULT_TAMPERED", caughtByRecompute, func(r *damagedRun) {
		r.replaceOnce("runs/r1/result.json", `"eligible": false`, `"eligible": true`)
		r.bindResult()
		r.reseal()
	})
	// result.json is canonical: the same value in another layout is not
	// what this engine writes, and check 7 compares bytes.
	add("compacting result.json to the same JSON value and recomputing every hash", "RESULT_TAMPERED", caughtByRecompute, func(r *damagedRun) {
		var b bytes.Buffer
		if err := json.Compact(&b, r.read("runs/r1/result.json")); err != nil {
			r.t.Fatal(err)
		}
		r.write("runs/r1/result.json", append(b.Bytes(), '\n'))
		r.bindResult()
		r.reseal()
	})
	add("editing result.json and recomputing checksums.json but not the receipt", "RESULT_TAMPERED", caughtByReceipt, func(r *damagedRun) {
		r.replaceOnce("runs/r1/result.json", `"rate": "0.827272727273"`, `"rate": "0.827272727274"`)
		r.reseal()
	})
	add("editing the source_digest in result.json and recomputing every hash", "RESULT_TAMPERED", caughtByOwnSources, func(r *damagedRun) {
		r.flipHex("runs/r1/result.json", r.receipt()["source_digest"].(string))
		r.bindResult()
		r.reseal()
	})
	add("changing run_id in receipt.json and recomputing checksums.json", "RECEIPT_TAMPERED", "", func(r *damagedRun) {
		r.editReceipt(func(m map[string]any) { m["run_id"] = "r2" })
		r.reseal()
	})
	add("changing definition_id in receipt.json and recomputing checksums.json", "RECEIPT_TAMPERED", "", func(r *damagedRun) {
		r.editReceipt(func(m map[string]any) { m["definition_id"] = "synthetic-v2" })
		r.reseal()
	})
	add("changing protocol_version in receipt.json and recomputing checksums.json", "RECEIPT_TAMPERED", "", func(r *damagedRun) {
		r.editReceipt(func(m map[string]any) { m["protocol_version"] = "1.1" })
		r.reseal()
	})
	add("changing source_digest in receipt.json but not its sources and recomputing checksums.json", "RECEIPT_TAMPERED", "", func(r *damagedRun) {
		r.editReceipt(func(m map[string]any) { m["source_digest"] = damageFlipped(m["source_digest"].(string)) })
		r.reseal()
	})
	add("changing a source hash and the source_digest in receipt.json consistently and recomputing checksums.json", "RESULT_TAMPERED", caughtByOwnSources, func(r *damagedRun) {
		r.editReceipt(func(m map[string]any) {
			sources := m["sources"].(map[string]any)
			sources["data/groups.csv"] = damageFlipped(sources["data/groups.csv"].(string))
			m["source_digest"] = damageSourceDigest(sources)
		})
		r.reseal()
	})
	add("pointing receipt.json and result.json at other source bytes and recomputing every hash", "STALE_SOURCES", "", func(r *damagedRun) {
		old := r.receipt()["source_digest"].(string)
		var digest string
		r.editReceipt(func(m map[string]any) {
			sources := m["sources"].(map[string]any)
			sources["data/groups.csv"] = damageFlipped(sources["data/groups.csv"].(string))
			digest = damageSourceDigest(sources)
			m["source_digest"] = digest
		})
		r.replaceOnce("runs/r1/result.json", old, digest)
		r.bindResult()
		r.reseal()
	})
	add("changing engine_sha256 in receipt.json and recomputing checksums.json", "ENGINE_CHANGED", "", func(r *damagedRun) {
		r.editReceipt(func(m map[string]any) { m["engine_sha256"] = damageFlipped(m["engine_sha256"].(string)) })
		r.reseal()
	})
	add("changing created_at in receipt.json to a non-time and recomputing checksums.json", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		r.editReceipt(func(m map[string]any) { m["created_at"] = "yesterday" })
		r.reseal()
	})
	add("adding a source to receipt.json and recomputing checksums.json", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		r.editReceipt(func(m map[string]any) {
			sources := m["sources"].(map[string]any)
			sources["data/extra.csv"] = sources["data/groups.csv"]
		})
		r.reseal()
	})
	add("removing build from receipt.json and recomputing checksums.json", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		r.editReceipt(func(m map[string]any) { delete(m, "build") })
		r.reseal()
	})
	// Controls for the forgeries above: what the receipt records but does
	// not bind. The checksums are unkeyed, so they detect damage, not a
	// forger who recomputes them; these rows pin that honestly.
	add("re-encoding receipt.json with sorted keys and recomputing checksums.json", "", "", func(r *damagedRun) {
		r.editReceipt(func(map[string]any) {})
		r.reseal()
	})
	add("changing created_at in receipt.json to another time and recomputing checksums.json", "", "", func(r *damagedRun) {
		r.editReceipt(func(m map[string]any) { m["created_at"] = "2001-02-03T04:05:06.7Z" })
		r.reseal()
	})
	add("changing the recorded go_version in receipt.json and recomputing checksums.json", "", "", func(r *damagedRun) {
		r.editReceipt(func(m map[string]any) { m["build"].(map[string]any)["go_version"] = "go0.0" })
		r.reseal()
	})
	add("editing a source and re-pointing the whole run at it with every hash recomputed", "", "", func(r *damagedRun) {
		old := r.receipt()["source_digest"].(string)
		r.write("data/groups.csv", append(r.read("data/groups.csv"), '\n'))
		var digest string
		r.editReceipt(func(m map[string]any) {
			sources := m["sources"].(map[string]any)
			sources["data/groups.csv"] = testutil.SHA256Hex(r.read("data/groups.csv"))
			digest = damageSourceDigest(sources)
			m["source_digest"] = digest
		})
		r.replaceOnce("runs/r1/result.json", old, digest)
		r.bindResult()
		r.reseal()
		r.digest = digest
	})

	// The sources: compared by bytes, before anything parses them.
	add("appending an empty line to data/groups.csv", "STALE_SOURCES", "", func(r *damagedRun) {
		r.write("data/groups.csv", append(r.read("data/groups.csv"), '\n'))
	})
	add("deleting data/groups.csv", "STALE_SOURCES", "", func(r *damagedRun) { r.remove("data/groups.csv") })
	add("making data/transactions.csv invalid", "STALE_SOURCES", "", func(r *damagedRun) {
		r.write("data/transactions.csv", append(r.read("data/transactions.csv"), "not,a,row\n"...))
	})
	add("growing data/customers.csv past 1 MiB with empty lines", "STALE_SOURCES", "", func(r *damagedRun) {
		r.write("data/customers.csv", damagePadded(r.read("data/customers.csv"), 1<<20+1, '\n'))
	})
	add("compacting the contract to the same JSON value", "STALE_SOURCES", "", func(r *damagedRun) {
		var b bytes.Buffer
		if err := json.Compact(&b, r.read("contracts/metric-definitions.json")); err != nil {
			r.t.Fatal(err)
		}
		r.write("contracts/metric-definitions.json", b.Bytes())
	})
	add("replacing data/groups.csv with a directory", "STALE_SOURCES", "", func(r *damagedRun) {
		r.remove("data/groups.csv")
		r.mkdir("data/groups.csv")
	})
	// protocol §4: a source may be a symlink that resolves inside the
	// workspace; its bytes are what counts.
	add("replacing data/groups.csv with a symlink to an identical copy inside the workspace", "", "", func(r *damagedRun) {
		r.copy("data/groups.csv", "copies/groups.csv")
		r.symlink("../copies/groups.csv", "data/groups.csv")
	})
	// protocol §4: a source resolving outside the workspace is PATH_BOUNDARY,
	// whichever tool reads it; check 5 never gets to compare its bytes.
	add("replacing data/groups.csv with a symlink to an identical copy outside the workspace", "PATH_BOUNDARY", "", func(r *damagedRun) {
		r.copy("data/groups.csv", r.outsidePath("groups.csv"))
		r.symlink(r.outsidePath("groups.csv"), "data/groups.csv")
	})

	// The engine: its identity is its bytes, not its path.
	add("running verify with the engine plus one trailing byte", "ENGINE_CHANGED", "", func(r *damagedRun) {
		r.engine = r.engines.altered
	})
	add("running verify with a byte-identical copy of the engine elsewhere", "", "", func(r *damagedRun) {
		r.engine = r.engines.identical
	})

	// Two damages at once: the earlier check in protocol §6's order answers.
	add("deleting checksums.json and adding notes.txt", "MISSING_RESULT", "", func(r *damagedRun) {
		r.remove("runs/r1/checksums.json")
		r.write("runs/r1/notes.txt", nil)
	})
	add("deleting result.json and truncating receipt.json", "MISSING_RESULT", "", func(r *damagedRun) {
		r.remove("runs/r1/result.json")
		b := r.read("runs/r1/receipt.json")
		r.write("runs/r1/receipt.json", b[:len(b)/2])
	})
	add("truncating receipt.json and changing a source and the engine", "INVALID_SAVED_RESULT", "", func(r *damagedRun) {
		b := r.read("runs/r1/receipt.json")
		r.write("runs/r1/receipt.json", b[:len(b)/2])
		r.write("data/groups.csv", append(r.read("data/groups.csv"), '\n'))
		r.engine = r.engines.altered
	})
	add("flipping a byte in both receipt.json and result.json", "RECEIPT_TAMPERED", "", func(r *damagedRun) {
		r.flipHex("runs/r1/receipt.json", r.receipt()["engine_sha256"].(string))
		r.replaceOnce("runs/r1/result.json", `"rate": "0.827272727273"`, `"rate": "0.827272727272"`)
	})
	add("flipping a byte in result.json and changing a source", "RESULT_TAMPERED", caughtByChecksums, func(r *damagedRun) {
		r.replaceOnce("runs/r1/result.json", `"rate": "0.827272727273"`, `"rate": "0.827272727272"`)
		r.write("data/groups.csv", append(r.read("data/groups.csv"), '\n'))
	})
	add("changing a source and the engine", "STALE_SOURCES", "", func(r *damagedRun) {
		r.write("data/groups.csv", append(r.read("data/groups.csv"), '\n'))
		r.engine = r.engines.altered
	})
	add("changing the engine and forging result.json with every hash recomputed", "ENGINE_CHANGED", "", func(r *damagedRun) {
		r.replaceOnce("runs/r1/result.json", `"rate": "0.827272727273"`, `"rate": "0.827272727274"`)
		r.bindResult()
		r.reseal()
		r.engine = r.engines.altered
	})
	return cs
}

// damageEngineSet holds the runner binaries the engine rows verify with,
// made once before any case runs.
type damageEngineSet struct {
	identical string // a byte-identical copy of the installed runner
	altered   string // the same with one byte appended (an ELF still runs)
}

// damageEngines copies the installed runner twice, each under the name
// "tool-runner" so that TestMain dispatches it as the runner.
func damageEngines(t *testing.T) damageEngineSet {
	t.Helper()
	data, err := os.ReadFile(runnerPath(t))
	if err != nil {
		t.Fatal(err)
	}
	put := func(data []byte) string {
		p := filepath.Join(t.TempDir(), "tool-runner")
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return damageEngineSet{identical: put(data), altered: put(append(data, 0))}
}

// damagedRun is run r1, committed by the real binary into runs/ of a
// fresh fixture workspace, for one case to damage and verify.
type damagedRun struct {
	t       *testing.T
	ws      string          // the workspace
	outside string          // a scratch directory outside the workspace
	runID   string          // the run verify_result is asked for
	digest  string          // the source digest a successful verify reports
	engines damageEngineSet // the prepared runner copies
	engine  string          // the runner verify runs; "" is the installed one
}

func damageCommitRun(t *testing.T, eng damageEngineSet) *damagedRun {
	t.Helper()
	ws := fixture(t)
	o := analyze(t, ws, "runs", "r1")
	digest, _ := o.result()["source_digest"].(string)
	return &damagedRun{t: t, ws: ws, outside: t.TempDir(), runID: "r1", digest: digest, engines: eng}
}

// verify runs verify_result on the run with --output-dir runs.
func (r *damagedRun) verify() outcome {
	r.t.Helper()
	args := []string{"--workspace", r.ws, "--output-dir", "runs"}
	if r.engine == "" {
		return call(r.t, r.ws, verifyRequest("v1", r.runID), args...)
	}
	return callWith(r.t, r.engine, r.ws, verifyRequest("v1", r.runID), args...)
}

// assertVerified checks a successful verify_result of r1.
func (r *damagedRun) assertVerified(o outcome) {
	r.t.Helper()
	is := is.NewRelaxed(r.t)
	if o.exit != 0 {
		r.t.Fatalf("verify_result failed: %s", o.raw)
	}
	is.Equal(o.resp["ok"], true)
	is.Equal(o.resp["status"], "success")
	is.Equal(o.resp["error"], nil)
	res := o.result()
	is.Equal(res["run_id"], "r1")
	is.Equal(res["integrity"], "verified")
	is.Equal(res["source_digest"], r.digest)
	is.Equal(res["release_eligible"], false) // the fixture is blocked
	is.Equal(res["human_approval"], "not_granted")
	is.Equal(len(res["checks"].([]any)), 7) // every check ran
}

// Damage tools. rel is workspace-relative with forward slashes.

func (r *damagedRun) path(rel string) string { return filepath.Join(r.ws, filepath.FromSlash(rel)) }

func (r *damagedRun) outsidePath(name string) string { return filepath.Join(r.outside, name) }

// abs is rel inside the workspace, or p itself when already absolute.
func (r *damagedRun) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return r.path(p)
}

func (r *damagedRun) read(rel string) []byte {
	r.t.Helper()
	b, err := os.ReadFile(r.path(rel))
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

// write replaces the bytes at rel (creating it, and its parents, if need be).
func (r *damagedRun) write(rel string, data []byte) {
	r.t.Helper()
	p := r.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *damagedRun) remove(rel string) {
	r.t.Helper()
	if err := os.RemoveAll(r.path(rel)); err != nil {
		r.t.Fatal(err)
	}
}

func (r *damagedRun) mkdir(rel string) {
	r.t.Helper()
	if err := os.MkdirAll(r.path(rel), 0o755); err != nil {
		r.t.Fatal(err)
	}
}

// copy copies the file or directory tree at rel to dst (workspace-relative
// or absolute).
func (r *damagedRun) copy(rel, dst string) {
	r.t.Helper()
	src, to := r.path(rel), r.abs(dst)
	fi, err := os.Stat(src)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(to), 0o755)
	}
	if err == nil {
		if fi.IsDir() {
			err = os.CopyFS(to, os.DirFS(src))
		} else {
			var b []byte
			if b, err = os.ReadFile(src); err == nil {
				err = os.WriteFile(to, b, 0o644)
			}
		}
	}
	if err != nil {
		r.t.Fatal(err)
	}
}

// symlink replaces whatever is at rel with a symlink to target.
func (r *damagedRun) symlink(target, rel string) {
	r.t.Helper()
	r.remove(rel)
	if err := os.Symlink(target, r.path(rel)); err != nil {
		r.t.Fatal(err)
	}
}

// replaceOnce replaces the one occurrence of old in rel with new.
func (r *damagedRun) replaceOnce(rel, old, new string) {
	r.t.Helper()
	b := string(r.read(rel))
	if n := strings.Count(b, old); n != 1 {
		r.t.Fatalf("%s holds %q %d times, want once", rel, old, n)
	}
	r.write(rel, []byte(strings.Replace(b, old, new, 1)))
}

// flipByte changes the byte at offset i of rel from was to to.
func (r *damagedRun) flipByte(rel string, i int, was, to byte) {
	r.t.Helper()
	b := r.read(rel)
	if b[i] != was {
		r.t.Fatalf("byte %d of %s is %q, want %q", i, rel, b[i], was)
	}
	b[i] = to
	r.write(rel, b)
}

// flipHex changes one hex digit of the digest value, which must occur once
// in rel, to another lowercase hex digit: the JSON keeps its shape.
func (r *damagedRun) flipHex(rel, value string) {
	r.t.Helper()
	r.replaceOnce(rel, value, damageFlipped(value))
}

// flipped is the digest h with its last hex digit changed.
func damageFlipped(h string) string {
	last := byte('0')
	if h[len(h)-1] == '0' {
		last = '1'
	}
	return h[:len(h)-1] + string(last)
}

// padded is b followed by pad bytes (spaces unless given) up to size bytes.
func damagePadded(b []byte, size int, pad ...byte) []byte {
	p := byte(' ')
	if len(pad) > 0 {
		p = pad[0]
	}
	return append(b, bytes.Repeat([]byte{p}, size-len(b))...)
}

// receipt is receipt.json decoded.
func (r *damagedRun) receipt() map[string]any {
	r.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.read("runs/r1/receipt.json"), &m); err != nil {
		r.t.Fatal(err)
	}
	return m
}

// checksums is checksums.json decoded.
func (r *damagedRun) checksums() map[string]string {
	r.t.Helper()
	var m map[string]string
	if err := json.Unmarshal(r.read("runs/r1/checksums.json"), &m); err != nil {
		r.t.Fatal(err)
	}
	return m
}

// editReceipt rewrites receipt.json through edit, two-space indented with
// sorted keys (the order is free; its bytes are bound only by
// checksums.json, which the forgeries recompute).
func (r *damagedRun) editReceipt(edit func(map[string]any)) {
	r.t.Helper()
	m := r.receipt()
	edit(m)
	r.write("runs/r1/receipt.json", damageIndented(m))
}

// bindResult sets the receipt's result_sha256 to the current result bytes.
func (r *damagedRun) bindResult() {
	r.t.Helper()
	sum := testutil.SHA256Hex(r.read("runs/r1/result.json"))
	r.editReceipt(func(m map[string]any) { m["result_sha256"] = sum })
}

// reseal rewrites checksums.json for the current receipt and result bytes.
func (r *damagedRun) reseal() {
	r.t.Helper()
	r.write("runs/r1/checksums.json", damageIndented(map[string]string{
		"receipt.json": testutil.SHA256Hex(r.read("runs/r1/receipt.json")),
		"result.json":  testutil.SHA256Hex(r.read("runs/r1/result.json")),
	}))
}

func damageIndented(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// sourceDigest is protocol §4's combined digest of a source hash map: SHA256
// of the map as compact JSON with sorted keys and one trailing newline.
func damageSourceDigest(sources map[string]any) string {
	b, err := json.Marshal(sources)
	if err != nil {
		panic(err)
	}
	return testutil.SHA256Hex(append(b, '\n'))
}

// photograph records every entry under the workspace and the outside
// scratch directory.
func (r *damagedRun) photograph() map[string]fsEntry {
	r.t.Helper()
	tree := map[string]fsEntry{}
	for root, label := range map[string]string{r.ws: "workspace", r.outside: "outside"} {
		for p, e := range snapshotTree(r.t, root) {
			tree[label+"/"+p] = e
		}
	}
	return tree
}

// assertUnchanged fails the test for every entry verify_result added,
// removed or altered since before.
func (r *damagedRun) assertUnchanged(before map[string]fsEntry) {
	r.t.Helper()
	sameTree(r.t, before, r.photograph())
}
