package landlock

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/osfs"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/ports"
)

// The rules a command gets, derived from its options over a real
// workspace (the shipped fixture, plus what each case lays out), through
// the production resolver. The kernel's side is in cmd/tool-runner's
// landlock tests; this is the plan it is told.
func TestTheRulesFollowTheOptions(t *testing.T) {
	oneShot := func(out, ledger string) Need {
		return Need{Sources: true, OutputDir: out, Output: Write, Ledger: ledger, LedgerUse: Write}
	}
	sources := []grant{{".", list}, {"contracts", readFile}, {"data", readFile}}
	with := func(gs ...grant) []grant { return sorted(append(append([]grant{}, sources...), gs...)) }
	tests := []struct {
		name    string
		lay     func(t *testing.T, ws string)
		need    Need
		grants  []grant
		pending bool
		create  string
	}{
		{
			name:   "an existing output directory and ledger",
			lay:    all(dirs("runs"), files("calls.jsonl")),
			need:   oneShot("runs", "calls.jsonl"),
			grants: with(grant{"calls.jsonl", writeFile}, grant{"runs", write}),
		},
		{
			name:   "a new ledger is created first, and granted alone",
			lay:    dirs("runs"),
			need:   oneShot("runs", "calls.jsonl"),
			grants: with(grant{"calls.jsonl", writeFile}, grant{"runs", write}),
			create: "calls.jsonl",
		},
		{
			name:   "a ledger in the output directory needs no grant of its own",
			lay:    dirs("runs"),
			need:   oneShot("runs", "runs/calls.jsonl"),
			grants: with(grant{"runs", write}),
		},
		{
			name:    "a missing output directory: its nearest existing ancestor, until it exists",
			lay:     dirs("runs"),
			need:    oneShot("runs/new/deep", ""),
			grants:  with(grant{"runs", write}),
			pending: true,
		},
		{
			name:    "a missing output directory in the workspace itself: the workspace, until it exists",
			need:    oneShot("runs", ""),
			grants:  []grant{{".", write}, {"contracts", readFile}, {"data", readFile}},
			pending: true,
		},
		{
			name:   "a nested output directory: itself alone",
			lay:    dirs("out/a/b"),
			need:   oneShot("out/a/b", ""),
			grants: with(grant{"out/a/b", write}),
		},
		{
			name:   "an output directory through a symlink: the directory it leads to",
			lay:    all(dirs("store/runs"), link("out", "store/runs")),
			need:   oneShot("out", ""),
			grants: with(grant{"store/runs", write}),
		},
		{
			name:   "an output directory outside the workspace gets nothing: the call refuses it",
			lay:    link("out", "/"),
			need:   oneShot("out", ""),
			grants: with(),
		},
		{
			name:   "an output directory over the sources is never writable: analyze refuses it, the others read it",
			lay:    dirs("data/runs"),
			need:   oneShot("data/runs", ""),
			grants: []grant{{".", list}, {"contracts", readFile}, {"data", readFile}, {"data/runs", read}},
		},
		{
			name:   "a missing output directory inside a source's directory gets nothing: analyze refuses it",
			need:   oneShot("data/runs", ""),
			grants: with(),
		},
		{
			name:   "the report command reads the output directory and the ledger",
			lay:    all(dirs("runs"), files("calls.jsonl")),
			need:   Need{Sources: true, OutputDir: "runs", Output: Read, Ledger: "calls.jsonl", LedgerUse: Read},
			grants: with(grant{"calls.jsonl", readFile}, grant{"runs", read}),
		},
		{
			name:   "the ledger command reads the ledger alone",
			lay:    files("logs/calls.jsonl"),
			need:   Need{Ledger: "logs/calls.jsonl", LedgerUse: Read},
			grants: []grant{{".", list}, {"logs/calls.jsonl", readFile}},
		},
		{
			name:   "a missing ledger is not created for a command that reads it",
			need:   Need{Ledger: "calls.jsonl", LedgerUse: Read},
			grants: []grant{{".", list}},
		},
		{
			name:   "a source through a symlink: the directory holding its target",
			lay:    all(moved("data/transactions.csv", "exports/t.csv"), link("data/transactions.csv", "../exports/t.csv")),
			need:   Need{Sources: true},
			grants: with(grant{"exports", readFile}),
		},
		{
			name:   "a source whose target lies in the workspace itself is granted alone",
			lay:    all(moved("data/groups.csv", "groups.csv"), link("data/groups.csv", "../groups.csv")),
			need:   Need{Sources: true},
			grants: with(grant{"groups.csv", readFile}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ws := testutil.CopyFixture(t, t.TempDir())
			if tt.lay != nil {
				tt.lay(t, ws)
			}
			w, err := osfs.Open(ws)
			is.NoErr(err)
			defer w.Close()
			p := derive(tt.need, w)
			is.Equal(p.grants, tt.grants)
			is.Equal(p.pending, tt.pending)
			is.Equal(p.createLedger, tt.create)
		})
	}
}

// An absolute path inside the workspace gets the rules its relative form
// gets.
func TestAnAbsolutePathIsGrantedAsItsRelativeForm(t *testing.T) {
	is := is.New(t)
	ws := testutil.CopyFixture(t, t.TempDir())
	dirs("out/a")(t, ws)
	w, err := osfs.Open(ws)
	is.NoErr(err)
	defer w.Close()
	abs := derive(Need{OutputDir: filepath.Join(ws, "out/a"), Output: Write}, w)
	rel := derive(Need{OutputDir: "out/a", Output: Write}, w)
	is.Equal(abs, rel)
	is.Equal(rel.grants, []grant{{".", list}, {"out/a", write}})
}

// A command without a workspace (version) is granted no path: only its
// executable, which restrict adds.
func TestACommandWithoutAWorkspaceIsGrantedNoPath(t *testing.T) {
	is := is.New(t)
	p := derive(Need{}, nil)
	is.Equal(len(p.grants), 0)
	is.True(!p.pending)
}

// A location in an object store (an s3:// output directory or ledger) is
// no path of the workspace: it gets no rule, and above all no grant on the
// workspace as the "nearest existing ancestor" of a path that is not
// there. The rest of the need is granted as without it.
func TestAStoreLocationGetsNoRule(t *testing.T) {
	is := is.New(t)
	ws := testutil.CopyFixture(t, t.TempDir())
	w, err := osfs.Open(ws)
	is.NoErr(err)
	defer w.Close()
	stores := storeResolver{PathResolver: w, urls: []string{"s3://bucket/runs", "s3://bucket/calls.jsonl"}}
	for _, use := range []Use{Read, Write} {
		p := derive(Need{Sources: true, OutputDir: "s3://bucket/runs", Output: use, Ledger: "s3://bucket/calls.jsonl", LedgerUse: use}, stores)
		is.Equal(p.grants, []grant{{".", list}, {"contracts", readFile}, {"data", readFile}})
		is.True(!p.pending)
		is.Equal(p.createLedger, "")
	}
}

// storeResolver resolves urls as a store's resolver does (Store set, Rel
// the URL), and every other path as the workspace does.
type storeResolver struct {
	ports.PathResolver
	urls []string
}

func (r storeResolver) Resolve(p string) (ports.Location, error) {
	if slices.Contains(r.urls, p) {
		return ports.Location{Rel: p, Store: true}, nil
	}
	return r.PathResolver.Resolve(p)
}

// all lays out each of lays in turn.
func all(lays ...func(*testing.T, string)) func(*testing.T, string) {
	return func(t *testing.T, ws string) {
		for _, lay := range lays {
			lay(t, ws)
		}
	}
}

// dirs makes each directory of names in the workspace.
func dirs(names ...string) func(*testing.T, string) {
	return func(t *testing.T, ws string) {
		for _, name := range names {
			if err := os.MkdirAll(filepath.Join(ws, name), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// files makes each file of names, empty, in the workspace.
func files(names ...string) func(*testing.T, string) {
	return func(t *testing.T, ws string) {
		for _, name := range names {
			dirs(filepath.Dir(name))(t, ws)
			if err := os.WriteFile(filepath.Join(ws, name), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// link makes name a symlink to target.
func link(name, target string) func(*testing.T, string) {
	return func(t *testing.T, ws string) {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// moved moves the workspace's file from to to.
func moved(from, to string) func(*testing.T, string) {
	return func(t *testing.T, ws string) {
		dirs(filepath.Dir(to))(t, ws)
		if err := os.Rename(filepath.Join(ws, from), filepath.Join(ws, to)); err != nil {
			t.Fatal(err)
		}
	}
}

// sorted orders grants as a plan does.
func sorted(grants []grant) []grant {
	slices.SortFunc(grants, func(a, b grant) int { return strings.Compare(a.Rel, b.Rel) })
	return grants
}
