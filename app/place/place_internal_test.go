package place

import (
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/ports"
)

// resolver resolves every path to a location it knows, else to a missing
// workspace path.
type resolver map[string]ports.Location

func (r resolver) Resolve(p string) (ports.Location, error) {
	if loc, ok := r[p]; ok {
		return loc, nil
	}
	return ports.Location{Rel: p}, nil
}

// The write boundary is the workspace's: an output directory or a ledger
// in an object store (a location a store's resolver marks Store) is held
// to no workspace folder, and a run's paths there keep the store's URL,
// while the same names as workspace paths are refused.
func TestTheWriteBoundaryIsTheWorkspacesOnly(t *testing.T) {
	store := resolver{
		"s3://bucket/runs":   {Rel: "s3://bucket/runs", Exists: true, Dir: true, Store: true},
		"s3://bucket/ledger": {Rel: "s3://bucket/ledger", Store: true},
		"s3://bucket":        {Rel: "s3://bucket", Exists: true, Dir: true, Store: true},
		"data":               {Rel: "data", Exists: true, Dir: true},
		"data/runs":          {Rel: "data/runs"},
		"s3:/bucket/runs":    {Rel: "s3:/bucket/runs"},
		// What the workspace's checks would ask of a URL they fold: a run
		// file there would refuse the output directory.
		"s3:/bucket/result.json": {Rel: "s3:/bucket/result.json", Exists: true, Regular: true},
	}
	for _, tt := range []struct {
		name, outputDir, ledger string
		code                    protocol.Code
	}{
		{"an output directory in a store", "s3://bucket/runs", "", ""},
		{"a ledger in a store", "", "s3://bucket/ledger", ""},
		{"an output directory in data", "data/runs", "", protocol.PathBoundary},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			p := Places{Paths: store, OutputDir: tt.outputDir, Ledger: tt.ledger}
			var err error
			if tt.outputDir != "" {
				_, err = p.ResolveOutput(true)
			} else {
				_, err = p.ResolveLedger()
			}
			if tt.code == "" {
				is.NoErr(err)
				return
			}
			is.Equal(protocol.ErrorOf(err).Code, tt.code)
		})
	}
	is := is.New(t)
	out := store["s3://bucket/runs"]
	is.Equal(Join(out, "r1", ports.ResultFile), "s3://bucket/runs/r1/result.json") // the scheme's "//" kept
	is.Equal(Join(ports.Location{Rel: "runs"}, "r1", ports.ResultFile), "runs/r1/result.json")
	is.Equal(dirOf(store["s3://bucket/ledger"]), "s3://bucket")
	is.Equal(dirOf(ports.Location{Rel: "logs/calls.jsonl"}), "logs")
}

// Where a ledger may lie beside an output directory when either is in
// object storage (protocol §15.5): a command that records calls keeps both
// in storage or both on disk; in storage the ledger may lie in the output
// directory itself or outside it, never below it, as on disk; the
// read-only commands take any pair.
func TestALedgerInAStoreLiesBesideItsRunsAndOnTheSameSide(t *testing.T) {
	store := func(rel string) ports.Location { return ports.Location{Rel: rel, Exists: true, Dir: true, Store: true} }
	where := resolver{
		"s3://b/runs":          store("s3://b/runs"),
		"s3://b/runs/calls":    store("s3://b/runs/calls"),
		"s3://b/runs/r1/calls": store("s3://b/runs/r1/calls"),
		"s3://b/calls":         store("s3://b/calls"),
		"s3://b":               store("s3://b"),
		"s3://other/calls":     store("s3://other/calls"),
		"runs":                 {Rel: "runs", Exists: true, Dir: true},
		".":                    {Rel: ".", Exists: true, Dir: true},
		"calls.jsonl":          {Rel: "calls.jsonl"},
	}
	for _, tt := range []struct {
		name, outputDir, ledger string
		readOnly                bool
		code                    protocol.Code
	}{
		{"both in a store, the ledger outside the runs", "s3://b/runs", "s3://b/calls", false, ""},
		{"both in a store, in different buckets", "s3://b/runs", "s3://other/calls", false, ""},
		{"the ledger at a bucket's root", "s3://b/runs", "s3://b", false, ""},
		{"the ledger in the output directory itself", "s3://b/runs", "s3://b/runs/calls", false, ""},
		{"the ledger below the output directory", "s3://b/runs", "s3://b/runs/r1/calls", false, protocol.PathBoundary},
		{"the ledger the output directory", "s3://b/runs", "s3://b/runs", false, protocol.PathBoundary},
		{"the runs in a store, the ledger on disk", "s3://b/runs", "calls.jsonl", false, protocol.InvalidOptions},
		{"the runs on disk, the ledger in a store", "runs", "s3://b/calls", false, protocol.InvalidOptions},
		{"a report of runs in a store with a ledger on disk", "s3://b/runs", "calls.jsonl", true, ""},
		{"a report of runs on disk with a ledger in a store", "runs", "s3://b/calls", true, ""},
		{"a ledger in a store alone", "", "s3://b/calls", false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			p := Places{Paths: where, OutputDir: tt.outputDir, Ledger: tt.ledger, ReadOnly: tt.readOnly}
			loc, err := p.ResolveLedger()
			if tt.code != "" {
				is.Equal(protocol.ErrorOf(err).Code, tt.code)
				return
			}
			is.NoErr(err)
			is.Equal(loc.Rel, tt.ledger)
		})
	}
	is := is.New(t)
	is.Equal(dirOf(store("s3://b")), "")             // a bucket lies in no prefix
	is.Equal(dirOf(store("s3://b/calls")), "s3://b") // a prefix in its bucket
}
