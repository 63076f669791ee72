package wire

import (
	"errors"
	"io"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/engine"
	"github.com/metricproof/metricproof/adapters/landlock"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/ports"
)

// Each kind of command needs what it does with the operator's paths, and
// the ports allowed, nothing more: the tools read the sources and write
// the output directory and the ledger, the report reads all three, the
// ledger command reads the ledger alone; no TCP unless allowed.
func TestEachCommandNeedsWhatItDoes(t *testing.T) {
	o := app.Options{Workspace: "ws", OutputDir: "runs", Ledger: "calls.jsonl", CancelFile: "stop"}
	tests := []struct {
		name          string
		command       Command
		off           bool
		bind, connect []uint16
		want          landlock.Need
	}{
		{"the tools", Tools, false, nil, nil, landlock.Need{Workspace: "ws", Sources: true, OutputDir: "runs", Output: landlock.Write, Ledger: "calls.jsonl", LedgerUse: landlock.Write}},
		{"the report", Report, false, nil, nil, landlock.Need{Workspace: "ws", Sources: true, OutputDir: "runs", Output: landlock.Read, Ledger: "calls.jsonl", LedgerUse: landlock.Read}},
		{"the ledger command", LedgerCheck, false, nil, nil, landlock.Need{Workspace: "ws", OutputDir: "runs", Ledger: "calls.jsonl", LedgerUse: landlock.Read}},
		{"turned off", Tools, true, nil, nil, landlock.Need{Workspace: "ws", Sources: true, OutputDir: "runs", Output: landlock.Write, Ledger: "calls.jsonl", LedgerUse: landlock.Write, Off: true}},
		{"with ports allowed", Tools, false, []uint16{8443}, []uint16{443, 9000}, landlock.Need{Workspace: "ws", Sources: true, OutputDir: "runs", Output: landlock.Write, Ledger: "calls.jsonl", LedgerUse: landlock.Write, Bind: []uint16{8443}, Connect: []uint16{443, 9000}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			f := NewConfiner(tt.command, tt.off)
			if tt.bind != nil || tt.connect != nil {
				f.Allow(tt.bind, nil)
				f.Allow(nil, tt.connect)
			}
			is.Equal(f.need(o), tt.want)
		})
	}
}

// A command that was not opened through the confiner's wire is never run
// unconfined: Confine refuses it, INTERNAL_ERROR. Once wired, it confines
// (off here: this is the test's own process), once.
func TestConfineNeedsTheWire(t *testing.T) {
	is := is.New(t)
	f := NewConfiner(Tools, true)
	err := f.Confine(app.Options{Workspace: "ws"})
	is.Equal(protocol.ErrorOf(err).Code, protocol.InternalError)

	ws := testutil.CopyFixture(t, t.TempDir())
	_, closer, werr := f.Wire(Real(engine.New()))(app.Options{Workspace: ws})
	is.NoErr(werr)
	defer closer.Close()
	is.NoErr(f.Confine(app.Options{Workspace: ws}))
	first := f.c
	is.True(first != nil)
	is.NoErr(f.Confine(app.Options{Workspace: ws}))
	is.True(f.c == first) // once
}

// The wired evidence store is the store's own, narrowed: OpenWriter hands
// back what the store gave, its error too, before and after confining;
// and a workspace the wire cannot open is its error, untouched.
func TestTheWiredStoreIsTheStoresOwn(t *testing.T) {
	is := is.New(t)
	refused := errors.New("refused")
	store := &fakeStore{err: refused}
	inner := func(app.Options) (app.Ports, io.Closer, error) {
		return app.Ports{Evidence: store}, io.NopCloser(nil), nil
	}
	f := NewConfiner(Tools, true)
	p, _, err := f.Wire(inner)(app.Options{})
	is.NoErr(err)
	_, err = p.Evidence.OpenWriter("runs")
	is.True(errors.Is(err, refused)) // before confining
	is.NoErr(f.Confine(app.Options{}))
	_, err = p.Evidence.OpenWriter("runs")
	is.True(errors.Is(err, refused)) // and after
	is.Equal(store.opened, []string{"runs", "runs"})

	missing := errors.New("missing")
	g := NewConfiner(Tools, true)
	_, _, err = g.Wire(func(app.Options) (app.Ports, io.Closer, error) { return app.Ports{}, nil, missing })(app.Options{})
	is.Equal(err, missing)
	is.Equal(protocol.ErrorOf(g.Confine(app.Options{})).Code, protocol.InternalError) // never opened: never run
}

// fakeStore is an evidence store whose OpenWriter records its directory
// and fails with err.
type fakeStore struct {
	ports.EvidenceStore
	err    error
	opened []string
}

func (s *fakeStore) OpenWriter(dir string) (ports.EvidenceWriter, error) {
	s.opened = append(s.opened, dir)
	return nil, s.err
}

// A command whose options name object storage may connect to the store's
// endpoint port, once confined, and a command on the disk alone to none:
// the port follows from the options and the AWS environment, which the
// wire reads once (no request is made here).
func TestAStoreOptionNeedsTheEndpointsPort(t *testing.T) {
	ws := testutil.CopyFixture(t, t.TempDir())
	for k, v := range map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test-key", "AWS_SECRET_ACCESS_KEY": "test-secret",
		"AWS_CONFIG_FILE": ws + "/none", "AWS_SHARED_CREDENTIALS_FILE": ws + "/none", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_PROFILE": "", "AWS_ENDPOINT_URL": "", "AWS_SESSION_TOKEN": "",
	} {
		t.Setenv(k, v)
	}
	tests := []struct {
		name, endpoint string
		o              app.Options
		connect        []uint16
	}{
		{"runs in a bucket on a server of one's own", "http://127.0.0.1:7070", app.Options{OutputDir: "s3://evidence/runs"}, []uint16{7070}},
		{"the ledger in a bucket, over TLS", "https://s3.example.net", app.Options{Ledger: "s3://evidence/ledger"}, []uint16{443}},
		{"plain HTTP on its default port", "http://s3.example.net", app.Options{OutputDir: "s3://evidence/runs", Ledger: "s3://evidence/ledger"}, []uint16{80}},
		{"AWS's own endpoint", "", app.Options{OutputDir: "s3://evidence/runs"}, []uint16{443}},
		{"the disk alone", "http://127.0.0.1:7070", app.Options{OutputDir: "runs", Ledger: "calls.jsonl"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			t.Setenv("AWS_ENDPOINT_URL_S3", tt.endpoint)
			o := tt.o
			o.Workspace = ws
			f := NewConfiner(Tools, true)
			_, closer, err := f.Wire(Real(engine.New()))(o)
			is.NoErr(err)
			defer closer.Close()
			is.Equal(f.need(o).Connect, tt.connect)
		})
	}
}
