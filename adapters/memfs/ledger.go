package memfs

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/ports"
)

var _ ports.LedgerStore = (*Workspace)(nil)

// LastLine implements ports.LedgerStore. The workspace's lock stands in
// for flock: it excludes every caller sharing this value.
func (w *Workspace) LastLine(_ context.Context, rel string) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	data, err := w.ledgerBytes(rel)
	if err != nil || len(data) == 0 {
		return nil, err
	}
	return lastLine(data), nil
}

// Append implements ports.LedgerStore; wait is not needed, since the
// workspace's lock is never held across a call.
func (w *Workspace) Append(rel string, _ time.Duration, record func(last []byte) ([]byte, error)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	data, err := w.ledgerBytes(rel)
	if err != nil {
		return err
	}
	var last []byte
	if len(data) > 0 {
		last = lastLine(data)
	}
	line, err := record(last)
	if err != nil {
		return err
	}
	f, err := w.fs.OpenFile(w.abs(rel), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(line); err != nil {
		return errors.Join(err, f.Truncate(int64(len(data))), f.Close())
	}
	return f.Close()
}

// ScanLedger implements ports.LedgerStore.
func (w *Workspace) ScanLedger(rel string, line func([]byte) error) error {
	w.mu.Lock()
	data, err := w.ledgerBytes(rel)
	w.mu.Unlock()
	if err != nil {
		return err
	}
	if data == nil {
		return ports.ErrMissing
	}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return line(data)
		}
		if err := line(data[:i+1]); err != nil {
			return err
		}
		data = data[i+1:]
	}
	return nil
}

// ledgerBytes reads the whole ledger: nil when it does not exist.
func (w *Workspace) ledgerBytes(rel string) ([]byte, error) {
	fi, err := w.fs.Stat(w.abs(rel))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, ports.ErrNotRegular
	}
	data, err := afero.ReadFile(w.fs, w.abs(rel))
	if data == nil && err == nil {
		data = []byte{}
	}
	return data, err
}

// lastLine is the last line of nonempty data, its newline included.
func lastLine(data []byte) []byte {
	if i := bytes.LastIndexByte(data[:len(data)-1], '\n'); i >= 0 {
		return data[i+1:]
	}
	return data
}
