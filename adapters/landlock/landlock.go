// Package landlock confines the running process with Linux's Landlock
// (protocol §16), so that a fault in the program's own path checks cannot
// reach a file or a port the command does not need: once a command's
// options are checked, and before it reads a request, the kernel refuses
// every other file access, every TCP bind and connect but the ports the
// command names (Landlock ABI 4), and signals and abstract UNIX sockets
// reaching outside the process (ABI 6). no_new_privs is set.
//
// # What a command is allowed
//
// [Need] says, from a command's checked options, which of its paths it
// reads and which it writes; [New] resolves them through the workspace's
// own resolver, as the calls will, and [Confinement.Apply] tells the
// kernel:
//
//   - the workspace and every directory below it: listed (names only), since
//     os.Root opens each directory on the way to a path, and the resolver
//     walks every operator path one directory at a time;
//   - the directories holding the four sources (data/, contracts/): files
//     read;
//   - the output directory: read, create, write and remove below it (read
//     only for the report command);
//   - the ledger file: read and append (read only for the ledger and
//     report commands); a missing ledger is created first, since a right
//     to create it would be a right over its whole directory;
//   - the running executable: read (the engine hashes its own bytes).
//
// A location in an object store (an s3:// output directory or ledger) is
// granted nothing here: the store is reached through Need.Connect.
//
// Nothing else: no other file of the workspace, nothing outside it, no
// executing, no symlinks, devices, FIFOs or sockets made. The cancel file
// is only looked for (lstat, which Landlock does not restrict), and the
// keys are read before confining and never again.
//
// An output directory that does not exist yet cannot carry a rule, and a
// right on its nearest existing ancestor reaches that ancestor's whole
// tree. So the ancestor holds the grant only until analyze has created the
// output directory: [Confinement.Narrow], which the evidence store calls
// once it has created it, then adds a second, narrower layer (layers
// intersect) in which the output directory replaces the ancestor.
//
// Every path is opened below the workspace without following a symlink
// (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) once the resolver has
// resolved it, so a symlink swapped in meanwhile cannot move a rule
// outside the workspace; the rule is added through that descriptor.
//
// Where the kernel lacks Landlock, or a feature of it, the command runs as
// before (best effort); [Kernel] reports what is enforced. The program's
// own path checks still run first: Landlock does not look at hard links,
// so a hard link inside the workspace to a file outside it is theirs to
// refuse.
package landlock

import (
	"net"
	"sync"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/metricproof/metricproof/ports"
)

// Use is what a command does with one of the operator's paths.
type Use int

const (
	// None: the command does not touch it.
	None Use = iota
	// Read: the command reads it.
	Read
	// Write: the command reads, creates and writes it (and, for the
	// output directory, removes below it).
	Write
)

// Need is what a command needs once confined, from its checked options:
// paths as the operator gave them (the workspace resolves them), and the
// TCP ports it binds and connects to.
type Need struct {
	// Workspace is the workspace directory as the operator named it; empty
	// for a command without one (version).
	Workspace string
	// Sources: the command reads the four sources.
	Sources bool
	// OutputDir and Output: the output directory and its use.
	OutputDir string
	Output    Use
	// Ledger and LedgerUse: the call ledger and its use.
	Ledger    string
	LedgerUse Use
	// Bind and Connect are the TCP ports the command may bind and connect
	// to, on any address; with none, the kernel (ABI 4 and later) refuses
	// every TCP bind and connect. A transport or store that needs the
	// network adds its own here: an HTTP server its listening port (0
	// when it asks the kernel for a free one), a client its server's port
	// (an object store's endpoint, a token issuer's). Naming any port to
	// connect to also allows looking names up (the resolver's files, DNS
	// on port 53) and loads the system's TLS roots before confining, since
	// their files get no rule. A kernel below ABI 4 restricts no TCP;
	// one from ABI 10 restricts UDP too (DNS's alone allowed).
	Bind    []uint16
	Connect []uint16
	// Off leaves the process unconfined: the operator's choice for
	// debugging (METRICPROOF_LANDLOCK=off), shown by tool-runner version.
	Off bool
}

// Kernel reports what a confinement enforces on the running kernel: file
// access from ABI 1; TCP bind and connect from ABI 4, when Go opens plain
// TCP sockets (a multipath TCP socket escapes the rules); signals and
// abstract UNIX sockets from ABI 6, without the kernel's signal scoping
// erratum. off is the operator's switch: nothing is enforced then,
// whatever the kernel offers.
func Kernel(off bool) ports.Confinement {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 0 {
		abi = 0
	}
	s := ports.Confinement{LandlockABI: abi}
	if off {
		return s
	}
	s.Filesystem = abi >= 1
	s.Network = abi >= 4 && plainTCP()
	if abi >= 6 {
		errata, err := ll.LandlockGetErrata()
		// go-landlock leaves signal scoping off on a kernel whose
		// erratum 2 (a signal scoping bug) is not fixed.
		s.Scoped = err == nil && errata&0x2 != 0
	}
	return s
}

// plainTCP reports whether Go's listeners and dialers default to plain
// TCP in this process: Landlock's TCP rules do not cover a multipath TCP
// socket, which Go's listeners use by default since Go 1.24 unless
// GODEBUG multipathtcp=0 (which cmd/tool-runner sets by a //go:debug
// directive; GODEBUG in the environment can set it back).
func plainTCP() bool {
	var lc net.ListenConfig
	var d net.Dialer
	return !lc.MultipathTCP() && !d.MultipathTCP()
}

// Confinement is one process's confinement, made by [New] from a
// command's need, applied by [Confinement.Apply] once, and narrowed by
// [Confinement.Narrow] once its output directory exists.
type Confinement struct {
	need  Need
	paths ports.PathResolver

	mu     sync.Mutex
	status ports.Confinement
	// applied: Apply has run; pending: the output directory's grant is
	// still on its nearest existing ancestor.
	applied, pending bool
}

// New returns the confinement of a command that needs need, whose paths
// paths resolves (nil for a command without a workspace). Nothing is
// enforced before Apply.
func New(need Need, paths ports.PathResolver) *Confinement {
	return &Confinement{need: need, paths: paths}
}

// Apply confines the process, for good, and reports what the kernel
// enforces. Call it once the command's options are checked and before it
// reads a request; later calls do nothing. An error means the kernel
// refused a rule it should have taken: the command must not go on.
func (c *Confinement) Apply() (ports.Confinement, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.applied {
		return c.status, nil
	}
	c.applied = true
	c.status = Kernel(c.need.Off)
	if c.need.Off {
		return c.status, nil
	}
	p := derive(c.need, c.paths)
	if err := restrict(c.need, p, c.status.LandlockABI); err != nil {
		return ports.Confinement{LandlockABI: c.status.LandlockABI}, err
	}
	c.pending = p.pending
	return c.status, nil
}

// Narrow adds the narrower layer once a missing output directory exists:
// its own grant replaces its ancestor's (layers intersect). The evidence
// store calls it once its OpenWriter has created the output directory, and
// before anything is written below it; it does nothing when there is no
// such grant pending, or when the directory was not created after all.
func (c *Confinement) Narrow() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pending {
		return nil
	}
	p := derive(c.need, c.paths)
	if p.pending {
		return nil // not created yet (a fault before it was)
	}
	if err := restrict(c.need, p, c.status.LandlockABI); err != nil {
		return err
	}
	c.pending = false
	return nil
}
