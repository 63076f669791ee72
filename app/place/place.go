// Package place holds the operator's places to where they may lie: the
// output directory and the ledger, resolved through ports.PathResolver and
// kept inside the workspace, clear of the protected folders and of
// existing evidence (protocol §6, §11.2). Its refusals carry their codes.
package place

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/app/remedy"
	"github.com/metricproof/metricproof/ports"
)

// protectedFolders are the workspace folders that no written path may
// equal, contain or sit inside: the sources, the repository and the
// engine's own code.
func protectedFolders() []string {
	return []string{"data", "contracts", ".git", "domain", "ports", "adapters", "app", "cmd", "src"}
}

// within reports whether the clean relative path p is base or inside it,
// comparing whole components.
func within(p, base string) bool {
	return base == "." || p == base || len(p) > len(base) && p[:len(base)] == base && p[len(base)] == '/'
}

// Places resolves the operator's paths, the output directory's and the
// ledger's, and holds them to where they may lie.
type Places struct {
	Paths ports.PathResolver
	// OutputDir and Ledger are the operator's paths; empty when not given.
	OutputDir, Ledger string
	// ReadOnly: nothing will be appended to the ledger ("tool-runner
	// ledger" and "tool-runner report"), so it may be any file in the
	// workspace.
	ReadOnly bool
}

// ResolveOutput resolves the operator's output directory, which must lie
// inside the workspace whichever tool runs. For analyze, write
// applies the write boundary of protocol §6 too: not the workspace itself,
// clear of the protected folders (wherever their own symlinks lead), and
// not inside existing evidence. Last, what exists there must be a
// directory.
func (s Places) ResolveOutput(write bool) (ports.Location, error) {
	out, err := s.Paths.Resolve(s.OutputDir)
	if err != nil {
		return ports.Location{}, OutputFault(err)
	}
	if write && !out.Store {
		if err := s.writable(out.Rel, "the output directory"); err != nil {
			return ports.Location{}, protocol.Errorf(protocol.PathBoundary, "%v", err)
		}
		if err := s.clearOfEvidence(out.Rel, "the output directory"); err != nil {
			return ports.Location{}, protocol.Errorf(protocol.PathBoundary, "%v", err)
		}
	}
	if out.Exists && !out.Dir {
		return ports.Location{}, protocol.Errorf(protocol.InvalidOutput, "the output directory exists and is not a directory")
	}
	return out, nil
}

// Join joins a location and the names below it: as paths, or, in an
// object store, as its URL and keys, whose scheme's "//" path.Join would
// fold.
func Join(loc ports.Location, names ...string) string {
	if loc.Store {
		return strings.Join(append([]string{strings.TrimSuffix(loc.Rel, "/")}, names...), "/")
	}
	return path.Join(append([]string{loc.Rel}, names...)...)
}

// dirOf is the directory a location lies in, or the prefix a store's
// place does: "" for a bucket itself, which lies in none (the "//" of the
// URL's scheme is no directory).
func dirOf(loc ports.Location) string {
	if !loc.Store {
		return path.Dir(loc.Rel)
	}
	if i := strings.LastIndex(loc.Rel, "/"); i > 0 && loc.Rel[i-1] != '/' {
		return loc.Rel[:i]
	}
	return ""
}

// OutputFault is an output directory that could not be resolved.
func OutputFault(err error) *protocol.Error {
	switch {
	case errors.Is(err, ports.ErrOutside):
		return protocol.Errorf(protocol.PathBoundary, "the output directory resolves outside the workspace")
	case errors.Is(err, ports.ErrNotDir):
		return protocol.Errorf(protocol.InvalidOutput, "the output directory's path runs through a file")
	case errors.Is(err, ports.ErrNameTooLong):
		return protocol.Errorf(protocol.InvalidOutput, "the output directory's path is not one its file system accepts%s", remedy.Because(err))
	}
	return protocol.Errorf(protocol.IOOrNumericError, "the output directory could not be resolved%s", remedy.Because(err))
}

// writable is the write boundary of protocol §6 for a resolved path what
// names: not the workspace itself, and clear of the protected folders.
func (s Places) writable(rel, what string) error {
	if rel == "." {
		return fmt.Errorf("%s may not be the workspace itself", what)
	}
	for _, name := range protectedFolders() {
		folder, err := s.Paths.Resolve(name)
		if err != nil {
			continue // a protected folder that leads outside cannot hold it
		}
		if within(rel, folder.Rel) || within(folder.Rel, rel) {
			return fmt.Errorf("%s may not equal, contain or sit inside %s", what, name)
		}
	}
	return nil
}

// clearOfEvidence refuses a directory that is, or sits inside, a run
// directory or a pending directory: writing there would add entries to
// evidence, which would then never verify again. The evidence store checks
// again where it creates the output directory, for a run committed
// meanwhile.
func (s Places) clearOfEvidence(rel, what string) error {
	if rel == "." {
		return nil
	}
	parts := strings.Split(rel, "/")
	for i := range parts {
		if strings.HasPrefix(parts[i], ports.PendingPrefix) {
			return fmt.Errorf("%s may not be or sit inside a pending directory", what)
		}
		dir := path.Join(parts[:i+1]...)
		for _, name := range ports.RunFileNames() {
			if loc, err := s.Paths.Resolve(path.Join(dir, name)); err == nil && loc.Exists {
				return fmt.Errorf("%s may not be or sit inside a run directory", what)
			}
		}
	}
	return nil
}

// ResolveLedger resolves the ledger's path (protocol §11.2): inside the
// workspace and the write boundary, in the output directory or outside it
// but never below it, in a directory that exists, and a regular file if it
// exists. For a service that records calls it may not share a name with
// the writer lock, nor take a run file's name directly in the output
// directory, nor lie in a directory that is or sits inside a run; a
// read-only service checks any file (one a tool call made included:
// runs/result.json, its directory looking like a run's because of the
// ledger itself). A ledger in object storage is held only to lie beside
// the output directory, never below it.
func (s Places) ResolveLedger() (ports.Location, error) {
	loc, err := s.Paths.Resolve(s.Ledger)
	if err != nil {
		return ports.Location{}, LedgerFault(err)
	}
	var out *ports.Location
	if s.OutputDir != "" {
		if o, err := s.Paths.Resolve(s.OutputDir); err == nil {
			out = &o
		}
	}
	if out != nil && out.Store != loc.Store && !s.ReadOnly {
		// A record names its run by ID alone: the runs a ledger records
		// must all be where one run ID is taken once.
		return ports.Location{}, protocol.Errorf(protocol.InvalidOptions, "--ledger and --output-dir must both name object storage or both name the disk, so that every run the ledger records lies where its run ID is taken once: move the other one")
	}
	// elsewhere is a refusal of the ledger's place, with the way out.
	elsewhere := func(format string, args ...any) error {
		return protocol.Errorf(protocol.PathBoundary, "%s; give --ledger another path", fmt.Sprintf(format, args...))
	}
	below := func(dirRel string) bool {
		return out != nil && (loc.Rel == out.Rel || dirRel != out.Rel && within(dirRel, out.Rel))
	}
	if loc.Store {
		if below(dirOf(loc)) {
			return ports.Location{}, elsewhere("the ledger may lie in the output directory itself or outside it, never below it")
		}
		return loc, nil
	}
	if err := s.writable(loc.Rel, "the ledger"); err != nil {
		return ports.Location{}, elsewhere("%v", err)
	}
	dirRel := dirOf(loc)
	if !s.ReadOnly {
		name := path.Base(loc.Rel)
		switch {
		case name == ports.LockFile:
			// Appends would wait on analyze's writer lock, and analyze on them.
			return ports.Location{}, elsewhere("the ledger may not be a writer lock file (%s)", ports.LockFile)
		case out != nil && dirRel == out.Rel && slices.Contains(ports.RunFileNames(), name):
			// Its directory would then look like a run's, and every later
			// call would refuse the output directory and the ledger.
			return ports.Location{}, elsewhere("the ledger may not take the name of a run file (%s) directly in the output directory", name)
		}
		if err := s.clearOfEvidence(dirRel, "the ledger's directory"); err != nil {
			return ports.Location{}, elsewhere("%v", err)
		}
	}
	if below(dirRel) {
		return ports.Location{}, elsewhere("the ledger may lie in the output directory itself or outside it, never below it")
	}
	dir, err := s.Paths.Resolve(dirRel)
	switch {
	case err != nil:
		return ports.Location{}, LedgerFault(err)
	case !dir.Exists || !dir.Dir:
		return ports.Location{}, LedgerFault(ports.ErrMissing)
	case loc.Exists && !loc.Regular:
		return ports.Location{}, LedgerFault(ports.ErrNotRegular)
	}
	return loc, nil
}

// LedgerFault is a ledger path that could not be resolved to a place
// a ledger may be.
func LedgerFault(err error) *protocol.Error {
	switch {
	case errors.Is(err, ports.ErrOutside):
		return protocol.Errorf(protocol.PathBoundary, "the ledger resolves outside the workspace; give --ledger a path inside it")
	case errors.Is(err, ports.ErrNotDir):
		return protocol.Errorf(protocol.InvalidOutput, "the ledger's path runs through a file; give --ledger a file's name in an existing directory")
	case errors.Is(err, ports.ErrMissing):
		return protocol.Errorf(protocol.InvalidOutput, "the ledger's directory does not exist; create it first")
	case errors.Is(err, ports.ErrNameTooLong):
		return protocol.Errorf(protocol.InvalidOutput, "the ledger's path is not one its file system accepts%s", remedy.Because(err))
	case errors.Is(err, ports.ErrNotRegular):
		return protocol.Errorf(protocol.InvalidOutput, "the ledger exists and is not a regular file; give --ledger a regular file, or a new name in an existing directory")
	case errors.Is(err, ports.ErrMoved):
		return protocol.Errorf(protocol.PathBoundary, "a directory on the ledger's path was replaced by a symlink while the ledger was being opened; nothing was run: restore it, or give --ledger the place you mean")
	}
	return protocol.Errorf(protocol.IOOrNumericError, "the ledger could not be resolved%s", remedy.Because(err))
}
