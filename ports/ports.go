// Package ports declares what the application needs from the world outside
// the calculation: source bytes, a place to commit and read back evidence, a
// clock, a cancellation signal and the engine's identity.
//
// Adapters implement these interfaces (the OS filesystem in production, an
// afero in-memory filesystem in tests); the app package consumes them. Each
// interface is small and promises exactly what the app relies on, and the
// errors below are the closed set an adapter may report besides a plain I/O
// failure. The contract test suites in adapters/porttest hold every adapter
// to these promises.
//
// All paths that cross a port are workspace-relative and use forward
// slashes; an adapter never returns an absolute path.
package ports

import (
	"context"
	"crypto/ed25519"
	"errors"
	"time"
)

// Errors an adapter reports. Anything else is an I/O failure.
var (
	// ErrMissing: nothing exists at the path.
	ErrMissing = errors.New("does not exist")
	// ErrOutside: the path resolves, after symlinks, outside the workspace.
	ErrOutside = errors.New("resolves outside the workspace")
	// ErrNotRegular: the path exists but is not a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrNotDir: the path exists but is not a directory.
	ErrNotDir = errors.New("not a directory")
	// ErrTooLarge: the file holds more bytes than the limit.
	ErrTooLarge = errors.New("larger than the limit")
	// ErrBusy: another process holds the writer lock, or a wait for the
	// ledger's lock saw the ledger unchanged for a whole period: its
	// holder keeps it without recording anything.
	ErrBusy = errors.New("another writer holds the lock")
	// ErrWaitedTooLong: a wait for the ledger's lock saw the ledger change
	// in every period (the lock passing from call to call) for
	// MaxLockWaitPeriods periods, and its turn did not come.
	ErrWaitedTooLong = errors.New("the lock kept passing to others for the whole wait")
	// ErrExists: the commit found an entry already at the run's name.
	ErrExists = errors.New("already exists")
	// ErrNoReplaceUnsupported: the filesystem cannot rename without
	// replacing, so no commit can be promised safe.
	ErrNoReplaceUnsupported = errors.New("the filesystem cannot rename without replacing")
	// ErrInsideEvidence: a directory on the way to an output directory is
	// a run directory or a pending directory, so creating anything in it
	// would add an entry to evidence.
	ErrInsideEvidence = errors.New("is or lies inside a run or a pending directory")
	// ErrKeyFormat: a key file is not a PEM key of the kind asked for.
	ErrKeyFormat = errors.New("not a key of the expected kind")
	// ErrKeyExposed: a private key file grants some access to group or
	// others.
	ErrKeyExposed = errors.New("the private key is readable by others")
	// ErrLockExposed: a lock file (the writer lock, the ledger) grants
	// some access to group or others, and this process cannot take it
	// away. flock needs only a descriptor open for reading, so any account
	// that can open the file can hold its lock.
	ErrLockExposed = errors.New("the lock file is open to group or others and its mode cannot be changed")
	// ErrMaybeCommitted: a commit renamed the run into place, a flush
	// after the rename failed, and the rename back out of sight failed
	// too. The run stands, whole, but may not survive a crash.
	ErrMaybeCommitted = errors.New("the run was renamed into place but could not be made durable or taken back")
	// ErrMoved: a directory on a path resolved before was swapped (for a
	// symlink) by the time it was opened.
	ErrMoved = errors.New("a directory on the path changed after the path was resolved")
	// ErrRecordRemains: a ledger record was written whole, its flush
	// failed, and it could not be cut back off for good (the cut failed,
	// or could not be flushed): it may remain in the ledger, now or after
	// a crash.
	ErrRecordRemains = errors.New("the record could not be cut back off for good and may remain in the ledger")
	// ErrTornRemains: part of a ledger record was written and could not be
	// cut back off: it stays at the ledger's end, a torn last line.
	ErrTornRemains = errors.New("part of the record could not be cut back off and stays at the end of the ledger")
	// ErrLinked: a lock file (the writer lock, the ledger) has more than
	// one hard link. Its other name may lie outside the workspace, so a
	// write or a mode change through it would reach a file the operator
	// never named; it is refused before either.
	ErrLinked = errors.New("the file has more than one hard link")
)

// Causes of I/O failures that an adapter recognises and wraps into the
// error it returns, so the operator is told what to fix. Their texts are
// shown as they are.
var (
	ErrNoSpace     = errors.New("no space left on the device")
	ErrReadOnly    = errors.New("read-only file system")
	ErrPermission  = errors.New("permission denied")
	ErrNameTooLong = errors.New("name too long")
	ErrQuota       = errors.New("disk quota exceeded")
	// ErrPlatform: the platform cannot take a file lock or commit a run
	// without replacing (Windows), so analyze and the ledger are refused
	// there while inspection and verification work.
	ErrPlatform = errors.New("this platform cannot lock files or commit a run atomically")
)

// IOCauses returns the causes above.
func IOCauses() []error {
	return []error{ErrNoSpace, ErrQuota, ErrReadOnly, ErrPermission, ErrNameTooLong, ErrPlatform}
}

// SourceReader reads the fixed source files of the workspace.
type SourceReader interface {
	// ReadSource returns the exact bytes of the workspace-relative file
	// name. It reads at most limitBytes+1 bytes and reports ErrTooLarge when
	// the file holds more than limitBytes. The file must resolve inside the
	// workspace after symlinks (else ErrOutside), exist (else ErrMissing)
	// and be a regular file (else ErrNotRegular).
	ReadSource(name string, limitBytes int64) ([]byte, error)
}

// Location is where an operator-chosen path resolves.
type Location struct {
	// Rel is the workspace-relative path with every symlink resolved, with
	// forward slashes; "." is the workspace itself.
	Rel string
	// Exists reports whether anything is there.
	Exists bool
	// Dir reports whether what is there is a directory.
	Dir bool
	// Regular reports whether what is there is a regular file.
	Regular bool
	// Store reports a location in an object store rather than a workspace
	// path: Rel is then the store's URL (s3://bucket/prefix), and the
	// workspace's write boundary, which is about its folders, does not
	// apply. A resolver of workspace paths never sets it.
	Store bool
}

// PathResolver resolves the paths an operator gives as options.
type PathResolver interface {
	// Resolve resolves path, absolute or workspace-relative, following every
	// symlink that exists along it; the part that does not exist yet is
	// taken as written. A path that leaves the workspace is ErrOutside.
	Resolve(path string) (Location, error)
}

// Names on disk that are part of the contract (protocol §6).
const (
	// LockFile is the writer lock's file inside an output directory.
	LockFile = ".writer.lock"
	// PendingPrefix starts the name of every pending directory; the leading
	// '.' hides it, and no run ID can start with it.
	PendingPrefix = ".pending-"

	// The files of a run directory, in the order analyze writes them and
	// verify_result reads them. AttestationFile is there only in a signed
	// run.
	ResultFile      = "result.json"
	ReceiptFile     = "receipt.json"
	ChecksumsFile   = "checksums.json"
	AttestationFile = "attestation.json"
)

// RunFileNames returns every name a run directory may hold. A directory
// holding any of them is taken for a run, and nothing is ever created in it.
func RunFileNames() []string {
	return []string{ResultFile, ReceiptFile, ChecksumsFile, AttestationFile}
}

// File is one file of a run directory.
type File struct {
	Name string
	Data []byte
}

// EvidenceStore commits run directories inside an output directory and reads
// them back. dir is always a Location.Rel returned by PathResolver.Resolve.
type EvidenceStore interface {
	// OpenWriter creates dir if it does not exist and takes the writer lock
	// dir/.writer.lock without waiting: ErrBusy when another process holds
	// it. The lock dies with its holder. The lock file is created with
	// mode 0600, and an existing one that grants anything to group or
	// others is set to 0600 before it is locked (ErrLockExposed when that
	// cannot be done). A lock file with more than one hard link is
	// ErrLinked, before its mode is looked at. Directories it creates are made durable by Commit,
	// which fsyncs each into its parent.
	//
	// It creates dir one component at a time, and before it creates
	// anything inside a directory that already existed (the next component,
	// or the lock file), it checks through that directory's open handle
	// that it is not a pending directory and holds none of RunFileNames:
	// else ErrInsideEvidence, with nothing created inside it. A directory
	// this call created itself can never become a run meanwhile, because a
	// commit never replaces.
	OpenWriter(dir string) (EvidenceWriter, error)
	// ReadRun reads the named files of run directory dir/runID without
	// writing anything; see SavedRun.
	ReadRun(dir, runID string, names []string, limitBytes int64) (SavedRun, error)
	// ListRuns lists, without writing anything, the entries of dir that
	// are directories (not symlinks to one) holding a regular file
	// ResultFile (not a symlink), in no particular order, each with the
	// size of that file. A dir that does not exist lists nothing.
	ListRuns(dir string) ([]ListedRun, error)
}

// ListedRun is one entry ListRuns found.
type ListedRun struct {
	// Name is the entry's name in the output directory.
	Name string
	// ResultBytes is the size of its ResultFile.
	ResultBytes int64
}

// EvidenceWriter is one writer's hold on an output directory. Only the
// process that made a pending directory ever removes it.
type EvidenceWriter interface {
	// Exists reports whether any entry is at dir/runID.
	Exists(runID string) (bool, error)
	// Stage creates a fresh hidden pending directory (its name starts with
	// '.') unique to this writer, creates each file in it exclusively,
	// writes, fsyncs and closes it, and fsyncs the pending directory.
	Stage(files []File) error
	// Commit renames the pending directory to runID without ever replacing
	// an entry (ErrExists), then fsyncs dir, and its parents that
	// OpenWriter created. If a sync after the rename fails, the run is
	// moved back out of sight and the error returned: a run that is visible
	// is complete. If it cannot be moved back either, the error is also
	// ErrMaybeCommitted: the run stays visible and whole, and may or may
	// not survive a crash.
	Commit(runID string) error
	// Where names the file name of the run runID that this writer
	// committed, as an answer's artifacts name it (protocol §3): dir/runID/name
	// in a workspace; in an object store, the URL of the object that
	// holds it. It asks nothing of the store, and may be called after
	// Close.
	Where(runID, name string) string
	// Close removes the pending directory if it was not committed and
	// releases the lock. The lock file stays.
	Close() error
}

// SavedRun is what ReadRun found.
type SavedRun struct {
	// Exists reports whether any entry is at dir/runID.
	Exists bool
	// Dir reports whether that entry is a directory (not a symlink to one).
	Dir bool
	// Files holds one SavedFile per requested name, in the requested order.
	Files []SavedFile
	// Extra reports whether the directory holds entries other than the
	// requested names.
	Extra bool
}

// SavedFile is one file of a saved run.
type SavedFile struct {
	Name string
	// Err is nil when Data holds the whole file; else ErrMissing,
	// ErrNotRegular (a symlink included), ErrTooLarge, or an I/O failure.
	Err  error
	Data []byte
}

// MaxLockWaitPeriods bounds a wait for the ledger's lock that keeps seeing
// the ledger change: at most this many periods in all (10 minutes for the
// 10 s period of protocol §11).
const MaxLockWaitPeriods = 60

// LedgerStore opens the call ledger (protocol §11): a file of records, one
// per line.
type LedgerStore interface {
	// OpenLedger opens the ledger at rel, a Location.Rel returned by
	// PathResolver.Resolve whose directory exists: it opens that directory
	// once, following no symlink on the way (a component that is now a
	// symlink, swapped in after rel was resolved, is ErrMoved; one gone,
	// ErrMissing; one that is not a directory, ErrNotDir). Every later
	// access to the ledger goes through that handle, by the ledger's name
	// in it and never through a symlink there, so a directory swapped
	// meanwhile cannot send a read or a record anywhere else: they go on
	// reaching the directory that was opened. The ledger file itself need
	// not exist yet.
	OpenLedger(rel string) (Ledger, error)
}

// Ledger is one open ledger: its directory opened once by OpenLedger.
//
// Waiting for the ledger's lock sleeps in the kernel, never in a polling
// loop, and a process has at most one blocked flock per ledger: its other
// callers queue in the process for their turn. A wait lasts while the
// line moves: at the end of each period it looks at the ledger, and goes
// on waiting if the ledger changed in that period (every holder that lets
// go has recorded a call), up to MaxLockWaitPeriods periods
// (ErrWaitedTooLong); a period with no change means the holder keeps the
// lock without recording anything, and the wait gives up (ErrBusy). A wait
// ends at once when its ctx is done while the turn is with another
// process (a kernel wait); ctx does not cut short a wait for a turn held
// in this process (a holder working under the lock), since it ends by
// itself.
//
// Something other than a regular file at the ledger's name (a symlink
// included) is ErrNotRegular. A ledger with more than one hard link is
// ErrLinked for LastLine and Lock, whose callers go on to append: its
// other name may lie anywhere.
type Ledger interface {
	// LastLine returns the ledger's last line, its newline included when
	// it has one, under a shared flock and without reading the whole file;
	// nil for an empty or missing ledger. Its wait for the flock, with the
	// store's read period, ends as the type's comment says. It changes
	// nothing, the file's mode included.
	LastLine(ctx context.Context) ([]byte, error)
	// Lock takes an exclusive flock on the ledger, creating the file with
	// mode 0600 (and then fsyncing its directory, at the first append)
	// when it is missing, and setting an existing file's mode to 0600 when
	// it grants anything to group or others (ErrLockExposed when it
	// cannot; nothing is waited for then). Its wait, with period wait,
	// ends as the type's comment says. The lock is the caller's until it
	// calls Release: a record is appended through the hold.
	Lock(ctx context.Context, wait time.Duration) (HeldLedger, error)
	// Scan calls line with every line of the ledger in order, each with
	// its newline when it has one, until line returns an error. It reads
	// the ledger as it was when the scan began, and appends made meanwhile
	// neither wait for it nor show in it. A missing ledger is ErrMissing.
	// Its wait for the shared lock ends at once, with ctx's error, when
	// ctx is done while another process holds the lock. It changes
	// nothing, the file's mode included, and reads a ledger of any link
	// count.
	Scan(ctx context.Context, line func(data []byte) error) error
	// Close releases the directory's handle. A hold taken before stays
	// the caller's until it is released.
	Close() error
}

// HeldLedger is the ledger under an exclusive lock that its holder keeps
// across several steps: analyze takes it before its commit, so that the
// run and its record are made under one lock (protocol §11).
type HeldLedger interface {
	// LastLine returns the ledger's last line as LedgerStore.LastLine
	// does, under the held lock.
	LastLine() ([]byte, error)
	// Append reads the last line and appends what record returns for it
	// with one write to the file opened with O_APPEND, then fsyncs it
	// (and the ledger's directory, when Lock created the file). A short
	// write, or a failed fsync, is truncated back to the length before
	// it, still under the lock, and reported; the record's own error is
	// returned as it is, with nothing appended. It may be called once.
	//
	// A whole record is cut back for good: the truncation is fsynced too,
	// since the record may have reached the disk before its own fsync
	// failed. When the truncation or its fsync fails, the error is also
	// ErrRecordRemains: the record may remain, now (a reader builds on
	// it) or after a crash. Part of a record that cannot be cut back is
	// ErrTornRemains: a torn last line, which is no record.
	Append(record func(last []byte) ([]byte, error)) error
	// Release drops the lock. Calling it again does nothing.
	Release() error
}

// KeyReader reads the operator's signing keys (protocol §10). Key paths are
// the operator's configuration: they may lie anywhere, and never appear in
// a message.
type KeyReader interface {
	// SigningKey reads an Ed25519 private key in PKCS#8 PEM, the file's
	// one PEM block, without headers. ErrMissing, ErrNotRegular (a
	// directory, a FIFO: never waited on), ErrKeyFormat (not PEM, not
	// Ed25519, a public key, a second block) and, for a file that does
	// hold such a key, ErrKeyExposed (any permission for group or others).
	SigningKey(path string) (ed25519.PrivateKey, error)
	// TrustedKey reads an Ed25519 public key in SPKI PEM under the same
	// rules, its mode aside; ErrKeyFormat for anything else, a private key
	// included.
	TrustedKey(path string) (ed25519.PublicKey, error)
}

// Canceller reports the operator's cooperative cancellation.
type Canceller interface {
	// Cancelled reports whether the operator asked this call to stop. A
	// marker path that resolves outside the workspace is ErrOutside.
	// ctx is the call's context: a port may wait on it, never past it.
	Cancelled(ctx context.Context) (bool, error)
}

// Clock tells the time for receipts.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
}

// Engine identifies the running engine.
type Engine interface {
	// Identity returns the SHA256 of the running executable and its build
	// facts. It is safe to call concurrently: the app warms it on another
	// goroutine while a call reads its sources.
	Identity() (EngineIdentity, error)
}

// EngineIdentity is the running engine's fingerprint and build facts.
type EngineIdentity struct {
	// SHA256 of the running executable's bytes, lowercase hex.
	SHA256 string
	// GoVersion is the toolchain that built the engine.
	GoVersion string
	// ModuleVersion, VCSRevision and VCSModified are empty or nil where the
	// build did not record them.
	ModuleVersion string
	VCSRevision   string
	VCSModified   *bool
}

// Confinement is what the kernel confines the program's commands to in
// this environment (protocol §16), as tool-runner version reports it.
type Confinement struct {
	// LandlockABI is the kernel's Landlock ABI version, 0 when it has none.
	LandlockABI int
	// Filesystem: file access outside what a command needs is refused.
	Filesystem bool
	// Network: TCP bind and connect outside the ports a command needs are
	// refused.
	Network bool
	// Scoped: signals and abstract UNIX sockets reaching outside the
	// process are refused.
	Scoped bool
}
