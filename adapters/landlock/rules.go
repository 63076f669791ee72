package landlock

import (
	"errors"
	"path"
	"slices"
	"strings"

	golandlock "github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// The rights a grant gives, as Landlock names them. Nothing here lets
// the process execute a file, make a symlink, device, FIFO or socket,
// move a file between directories, or use a device's ioctls.
const (
	// list lets the process open a directory and list its entries (and
	// those of every directory below it), reading no file. The workspace
	// has it: os.Root opens each directory on the way to a path it
	// resolves, and the resolver walks every operator path one directory
	// at a time, so that it names what it finds (a symlink swapped in, a
	// file in the way) with the code the protocol gives it.
	list = golandlock.AccessFSSet(ll.AccessFSReadDir)
	// readFile lets it read files.
	readFile = golandlock.AccessFSSet(ll.AccessFSReadFile)
	// read lets it read files and list directories.
	read = readFile | list
	// writeFile lets it read, append to and truncate an existing file: the
	// ledger, opened afresh for every hold.
	writeFile = readFile | golandlock.AccessFSSet(ll.AccessFSWriteFile|ll.AccessFSTruncate)
	// write lets it read, create, write and remove files and directories:
	// the output directory, where analyze stages, renames, locks and
	// removes its pending directory.
	write = read | writeFile | golandlock.AccessFSSet(ll.AccessFSMakeReg|ll.AccessFSMakeDir|ll.AccessFSRemoveFile|ll.AccessFSRemoveDir)
)

// grant is one rule: rights on a workspace-relative path (resolved, with
// no symlink in it; "." is the workspace) and everything below it.
type grant struct {
	Rel    string
	Access golandlock.AccessFSSet
}

// plan is what a command is allowed once confined, before the kernel is
// told: derived from its options by [derive], applied by [Confinement].
type plan struct {
	// grants are sorted by Rel, one per path.
	grants []grant
	// pending: the output directory does not exist yet, and its nearest
	// existing ancestor holds its grant until analyze creates it.
	pending bool
	// createLedger is the ledger to create before confining (empty when
	// none): a rule needs a file, and a right to create one in the
	// ledger's directory would reach every file below it.
	createLedger string
}

// derive resolves the paths need names through the workspace's own
// resolver, as the calls will, and says what each may be used for. A path
// the calls will refuse (outside the workspace, a file in the way, a
// missing source) gets no grant: the refusal comes from the call, and
// anything the kernel sees there later is refused too.
func derive(need Need, paths ports.PathResolver) plan {
	d := deriving{paths: paths, grants: map[string]golandlock.AccessFSSet{}, resolved: map[string]resolution{}}
	if paths != nil {
		d.derive(need)
	}
	return d.plan()
}

// deriving collects grants, merged per path.
type deriving struct {
	paths   ports.PathResolver
	grants  map[string]golandlock.AccessFSSet
	pending bool
	create  string
	// sourceDirs are the directories holding the sources, which an
	// output directory's grant may never reach.
	sourceDirs []string
	// resolved memoizes the resolver: the sources share their directory.
	resolved map[string]resolution
}

// resolution is one answer of the resolver.
type resolution struct {
	loc ports.Location
	err error
}

// resolve is the resolver's answer for p, asked once per derivation. A
// location in an object store is no path of the workspace: it gets no
// rule (its network is the need's Connect ports), and must never pass
// for a missing directory whose nearest existing ancestor is granted.
func (d *deriving) resolve(p string) (ports.Location, error) {
	r, ok := d.resolved[p]
	if !ok {
		r.loc, r.err = d.paths.Resolve(p)
		if r.err == nil && r.loc.Store {
			r.err = errStore
		}
		d.resolved[p] = r
	}
	return r.loc, r.err
}

// errStore is a location in an object store, to the derivation.
var errStore = errors.New("a location in an object store")

func (d *deriving) derive(need Need) {
	d.add(".", list)
	if need.Sources {
		for _, name := range domain.SourceNames() {
			d.source(name)
		}
	}
	out, outOK := d.output(need.OutputDir, need.Output)
	d.ledger(need.Ledger, need.LedgerUse, out, outOK)
	// The cancel file is only looked for (lstat, which Landlock does not
	// restrict), never opened: it needs no rule.
}

// source grants reading the directory that holds the source: a file
// replaced by a rename (an export tool, rsync, git) is a new file, which a
// rule on the old one would not reach. A source resolved directly in the
// workspace is granted alone, so the workspace is not made readable.
func (d *deriving) source(name string) {
	loc, err := d.resolve(name)
	if err != nil {
		return
	}
	dir := path.Dir(loc.Rel)
	if dir == "." {
		if loc.Exists {
			d.add(loc.Rel, readFile)
		}
		return
	}
	if parent, err := d.resolve(dir); err == nil && parent.Dir {
		d.add(dir, readFile)
		d.sourceDirs = append(d.sourceDirs, dir)
	}
}

// output grants the output directory: everything below it for a command
// that writes runs, reading for one that only reads them. When it does not
// exist yet, a writing command gets its nearest existing ancestor instead
// (pending), since a rule needs an existing directory and analyze creates
// the missing ones; the grant narrows to the output directory once it
// exists. It returns the resolved directory when it exists.
func (d *deriving) output(dir string, use Use) (string, bool) {
	if dir == "" || use == None {
		return "", false
	}
	loc, err := d.resolve(dir)
	if err != nil || loc.Rel == "." {
		return "", false
	}
	switch {
	case loc.Exists && loc.Dir:
		if use == Write && !d.overSources(loc.Rel) {
			d.add(loc.Rel, write)
		} else {
			// Sources are never writable: analyze refuses such an output
			// directory (the write boundary), the other tools read it.
			d.add(loc.Rel, read)
		}
		return loc.Rel, true
	case !loc.Exists && use == Write && !d.overSources(loc.Rel):
		// (One inside a source's directory gets nothing: analyze refuses
		// it, and there is nothing to read in it.)
		d.add(d.existingAncestor(loc.Rel), write)
		d.pending = true
	}
	return "", false
}

// ledger grants the ledger file itself: reading for the commands that
// read it, reading and appending for the tool calls, which create it
// first when it is missing. A ledger inside an existing output directory
// is covered by that directory's grant and created by the first record,
// as without confinement.
func (d *deriving) ledger(file string, use Use, out string, outOK bool) {
	if file == "" || use == None {
		return
	}
	loc, err := d.resolve(file)
	if err != nil || (loc.Exists && !loc.Regular) {
		return
	}
	if use == Write && outOK && within(loc.Rel, out) {
		return
	}
	switch {
	case loc.Exists && use == Write:
		d.add(loc.Rel, writeFile)
	case loc.Exists:
		d.add(loc.Rel, readFile)
	case use == Write:
		if parent, err := d.resolve(path.Dir(loc.Rel)); err == nil && parent.Dir {
			d.create = loc.Rel
			d.add(loc.Rel, writeFile)
		}
	}
}

// overSources reports whether dir is, holds or lies inside a directory
// holding a source.
func (d *deriving) overSources(dir string) bool {
	for _, s := range d.sourceDirs {
		if within(dir, s) || within(s, dir) {
			return true
		}
	}
	return false
}

// existingAncestor is the nearest ancestor of rel that exists ("." at
// worst: the workspace exists).
func (d *deriving) existingAncestor(rel string) string {
	for _, a := range slices.Backward(ancestors(rel)) {
		if loc, err := d.resolve(a); err == nil && loc.Exists && loc.Dir {
			return a
		}
	}
	return "."
}

func (d *deriving) add(rel string, access golandlock.AccessFSSet) {
	d.grants[rel] |= access
}

func (d *deriving) plan() plan {
	p := plan{pending: d.pending, createLedger: d.create}
	for rel, access := range d.grants {
		p.grants = append(p.grants, grant{Rel: rel, Access: access})
	}
	slices.SortFunc(p.grants, func(a, b grant) int { return strings.Compare(a.Rel, b.Rel) })
	return p
}

// ancestors lists rel's proper ancestors below the workspace, outermost
// first: "a/b/c" has "a" and "a/b".
func ancestors(rel string) []string {
	var out []string
	for i, c := range rel {
		if c == '/' {
			out = append(out, rel[:i])
		}
	}
	return out
}

// within reports whether rel is dir or lies below it.
func within(rel, dir string) bool {
	return rel == dir || strings.HasPrefix(rel, dir+"/")
}
