package app_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/stdio"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/ports"
)

// noLocks is the evidence store of a platform that cannot lock or commit
// atomically (osfs on Windows): the writer is refused before anything is
// created.
type noLocks struct{ ports.EvidenceStore }

func (noLocks) OpenWriter(string) (ports.EvidenceWriter, error) { return nil, ports.ErrPlatform }

// On such a platform inspect_inputs and verify_result work; analyze, and
// every call with a ledger, are IO_OR_NUMERIC_ERROR saying what to do, and
// nothing is written.
func TestAPlatformWithoutLocksRefusesAnalyzeAndTheLedgerOnly(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	digest := m.digest()
	is.Equal(m.run(analyzeReq("r1", digest), "--workspace", wsRoot, "--output-dir", "runs").code(), "") // made where it can be
	ledger := &faultyLedger{lastErr: ports.ErrPlatform, lockErr: ports.ErrPlatform}
	ledger.LedgerStore = m.ws
	wire := func(o app.Options) (app.Ports, io.Closer, error) {
		p, c, err := m.wire(o)
		p.Evidence = noLocks{p.Evidence}
		p.Ledger = ledger
		return p, c, err
	}
	call := func(request string, args ...string) response {
		var out bytes.Buffer
		exit := stdio.Run(context.Background(), args, strings.NewReader(request), &out, wire)
		return decode(t, out.Bytes(), exit)
	}
	before := m.tree()
	is.Equal(call(inspect("i1"), "--workspace", wsRoot).code(), "")
	is.Equal(call(verifyReq("v1", "r1"), "--workspace", wsRoot, "--output-dir", "runs").code(), "")
	for _, tt := range []struct {
		name, request string
		args          []string
		says          string
	}{
		{"analyze", analyzeReq("r2", digest), []string{"--output-dir", "runs"}, "writing the run in runs failed"},
		{"inspect with a ledger", inspect("i2"), []string{"--ledger", "ledger.jsonl"}, "the ledger could not be read"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r := call(tt.request, append([]string{"--workspace", wsRoot}, tt.args...)...)
			is.Equal(r.code(), "IO_OR_NUMERIC_ERROR")
			msg := r.Body.Error.Message
			is.True(strings.Contains(msg, tt.says))
			is.True(strings.Contains(msg, "this platform cannot lock files or commit a run atomically"))
			is.True(strings.Contains(msg, "need Linux or macOS; inspect_inputs and verify_result work here"))
		})
	}
	is.Equal(m.tree(), before) // nothing written
}
