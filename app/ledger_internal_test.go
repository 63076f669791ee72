package app

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/ports"
)

// lockRefused is a ledger whose lock is never had, for err.
type lockRefused struct {
	ports.Ledger
	err error
}

func (l lockRefused) Lock(context.Context, time.Duration) (ports.HeldLedger, error) {
	return nil, l.err
}

// The faults of a wait for the ledger's lock are built from one table
// (lockFault) and the words of each wait; every one of them, at each of
// the three places a call waits, is pinned here as an operator reads it.
// (No store's LastLine returns ErrLockExposed or ErrLinked today, since a
// read changes no mode and reads any link count; its words are pinned for
// a store that one day does.)
// Regenerate with go test ./app -run LockWait -update, and review the diff.
func TestTheLockWaitFaultsReadAsTheGoldenFileSays(t *testing.T) {
	is := is.New(t)
	waits := []struct {
		where string
		fault func(error) error
	}{
		{"reading the ledger's last record (CheckLedger)", func(err error) error { return ledgerReadFault(err) }},
		{"an analyze's hold before its commit", func(err error) error {
			s := &Service{ledgerFile: lockRefused{err: err}}
			var hold LedgerHold
			return s.holdLedger(context.Background(), &hold)
		}},
		{"recording a call", func(err error) error { return appendFault(err) }},
	}
	var b strings.Builder
	for _, w := range waits {
		for _, cause := range []error{ports.ErrBusy, ports.ErrWaitedTooLong, ports.ErrLockExposed, ports.ErrLinked} {
			e := protocol.ErrorOf(w.fault(fmt.Errorf("the store: %w", cause)))
			fmt.Fprintf(&b, "## %s, when %v\n%s: %s\n\n", w.where, cause, e.Code, e.Message)
		}
	}
	golden := filepath.Join("testdata", "golden", "lock-wait-faults.txt")
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" { // the flag of app_test.go, in the same test binary
		is.NoErr(os.WriteFile(golden, []byte(b.String()), 0o644))
	}
	want, err := os.ReadFile(golden)
	is.NoErr(err)
	is.Equal(b.String(), string(want)) // go test ./app -run LockWait -update, then review the diff
}
