package osfs

import (
	"context"
	"time"

	"github.com/metricproof/metricproof/ports"
)

// The ledger's operations by path, as the tests of this package make them:
// each opens the ledger at rel for itself, as a call does, and closes it
// when done (a hold outlives the close).

func (w *Workspace) lastLineAt(ctx context.Context, rel string) ([]byte, error) {
	l, err := w.OpenLedger(rel)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.LastLine(ctx)
}

func (w *Workspace) lockAt(ctx context.Context, rel string, wait time.Duration) (ports.HeldLedger, error) {
	l, err := w.OpenLedger(rel)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.Lock(ctx, wait)
}

func (w *Workspace) scanAt(ctx context.Context, rel string, line func([]byte) error) error {
	l, err := w.OpenLedger(rel)
	if err != nil {
		return err
	}
	defer l.Close()
	return l.Scan(ctx, line)
}
