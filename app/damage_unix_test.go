//go:build unix

package app_test

import (
	"syscall"
	"testing"
)

// TestVerifyNamesANamedPipeInARun is the damage matrix's rows that only a
// Unix disk can lay out: each saved file of run r1 replaced by a named
// pipe (memfs has none) is INVALID_SAVED_RESULT, answered without opening
// it (nothing ever writes to it: a verify that opened it would never
// answer), and verify writes nothing.
func TestVerifyNamesANamedPipeInARun(t *testing.T) {
	osfs := fileSystems()[1]
	for _, name := range []string{"result.json", "receipt.json", "checksums.json"} {
		t.Run(name, func(t *testing.T) {
			rel := "runs/r1/" + name
			checkDamage(t, osfs, verifyDamage{name: "a named pipe for " + name, code: "INVALID_SAVED_RESULT", do: func(d *damaged) {
				d.remove(rel)
				if err := syscall.Mkfifo(d.real(rel), 0o644); err != nil {
					d.t.Fatal(err)
				}
			}})
		})
	}
}
