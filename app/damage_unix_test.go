//go:build unix

package app_test

import (
	"syscall"
	"testing"
)

// TestVerifyNamesANamedPipeInARun is the damage matrices' rows that only a
// Unix disk can lay out (memfs has no named pipes): each saved file of run
// r1, and a signed run's attestation.json, replaced by a named pipe is
// INVALID_SAVED_RESULT, answered without opening it (nothing ever writes
// to it: a verify that opened it would never answer), and verify writes
// nothing.
func TestVerifyNamesANamedPipeInARun(t *testing.T) {
	osfs := fileSystems()[1]
	fifo := func(rel string) func(d *damaged) {
		return func(d *damaged) {
			d.remove(rel)
			if err := syscall.Mkfifo(d.real(rel), 0o644); err != nil {
				d.t.Fatal(err)
			}
		}
	}
	for _, name := range []string{"result.json", "receipt.json", "checksums.json"} {
		t.Run(name, func(t *testing.T) {
			checkDamage(t, osfs, verifyDamage{name: "a named pipe for " + name, code: "INVALID_SAVED_RESULT", do: fifo("runs/r1/" + name)})
		})
	}
	t.Run("attestation.json of a signed run", func(t *testing.T) {
		dir := t.TempDir()
		keys := signedKeys{own: newTestKey(t, dir, "own"), other: newTestKey(t, dir, "other"), third: newTestKey(t, dir, "third")}
		pipe := fifo("runs/r1/attestation.json")
		checkSignedDamage(t, osfs, keys, signedDamage{name: "a named pipe for attestation.json", without: "INVALID_SAVED_RESULT", with: "INVALID_SAVED_RESULT",
			damage: func(r *signedDamaged) { pipe(r.damaged) }})
	})
}
