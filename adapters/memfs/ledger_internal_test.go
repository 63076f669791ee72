package memfs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/ports"
)

// The in-memory ledger's wait keeps the port's rule as the real one does
// (osfs's TestAWaitLastsWhileTheLedgerKeepsChanging): it lasts while the
// ledger keeps changing, gives up after a period with no append (ErrBusy)
// and after the last period allowed (ErrWaitedTooLong). The test holds the
// turn and stands in for the other holders' appends; the periods are its
// to end.
func TestAWaitLastsWhileTheLedgerKeepsChanging(t *testing.T) {
	tests := []struct {
		name    string
		appends int  // periods that see an append
		stall   bool // then one period with none
		want    error
	}{
		{"appends in every period, then the holder lets go", 5, false, nil},
		{"no append in the first period", 0, true, ports.ErrBusy},
		{"appends, then a period with none", 3, true, ports.ErrBusy},
		{"appends in every period allowed", ports.MaxLockWaitPeriods, false, ports.ErrWaitedTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			fsys := afero.NewMemMapFs()
			is.NoErr(fsys.MkdirAll("/ws", 0o755))
			w, err := New(fsys, "/ws")
			is.NoErr(err)
			armed := make(chan chan time.Time, 1)
			w.after = func(time.Duration) <-chan time.Time {
				period := make(chan time.Time, 1)
				armed <- period
				return period
			}
			l, err := w.OpenLedger("ledger.jsonl")
			is.NoErr(err)
			defer l.Close()
			turn := l.(*ledger).turn
			turn <- struct{}{} // the test holds the lock
			got := make(chan error, 1)
			go func() {
				held, err := l.Lock(context.Background(), time.Hour)
				if err == nil {
					err = held.Release()
				}
				got <- err
			}()
			take := func() chan time.Time {
				select {
				case period := <-armed:
					return period
				case err := <-got:
					t.Fatalf("the wait ended early: %v", err)
				}
				return nil
			}
			for range tt.appends {
				period := take()
				w.mu.Lock()
				w.appended["ledger.jsonl"]++ // another holder's record
				w.mu.Unlock()
				period <- time.Time{}
			}
			if tt.stall {
				take() <- time.Time{}
			}
			if tt.want == nil {
				take() // it waits on
				<-turn
				is.NoErr(<-got)
				return
			}
			is.True(errors.Is(<-got, tt.want))
		})
	}
}
