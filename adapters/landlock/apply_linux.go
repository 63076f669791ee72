//go:build linux

package landlock

import (
	"crypto/x509"
	"errors"
	"fmt"
	"path"

	golandlock "github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// config is what the process restricts: everything go-landlock knows,
// down to what the kernel offers (best effort).
func config() golandlock.Config { return golandlock.V11.BestEffort() }

// restrict tells the kernel plan's rules and confines every thread of the
// process, for good: one more Landlock layer. With no Landlock (abi 0) it
// sets no_new_privs alone.
func restrict(need Need, p plan, abi int) error {
	if abi == 0 {
		return ll.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
	}
	var rules []golandlock.Rule
	if need.Workspace != "" {
		ws, err := unix.Open(need.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("opening the workspace: %w", err)
		}
		defer unix.Close(ws)
		if p.createLedger != "" {
			createLedger(ws, p.createLedger)
		}
		for _, g := range p.grants {
			fd, err := beneath(ws, g.Rel)
			if err != nil {
				if changed(err) {
					continue // moved since it was resolved: granted nothing
				}
				return fmt.Errorf("opening a path to confine to: %w", err)
			}
			defer unix.Close(fd)
			rules = append(rules, golandlock.PathAccess(g.Access, fdPath(fd)))
		}
	}
	// The engine hashes the image it runs, through /proc/self/exe: the rule
	// is on that very file, even when the file at its path was replaced.
	rules = append(rules, golandlock.PathAccess(readFile, "/proc/self/exe"))
	for _, port := range need.Bind {
		rules = append(rules, golandlock.BindTCP(port))
	}
	for _, port := range need.Connect {
		rules = append(rules, golandlock.ConnectTCP(port))
	}
	if len(need.Connect) > 0 {
		rules = append(rules, lookups()...)
	}
	return config().Restrict(rules...)
}

// lookups are the rules a process that connects by name needs: the
// resolver's files and DNS on port 53, over TCP and (ABI 10) UDP from an
// ephemeral port. The system's TLS roots are loaded now, once per process
// (crypto/x509 keeps them), since their files are not granted.
func lookups() []golandlock.Rule {
	_, _ = x509.SystemCertPool()
	return []golandlock.Rule{
		golandlock.PathAccess(readFile, "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/services").IgnoreIfMissing(),
		golandlock.ConnectTCP(53),
		golandlock.ConnectSendUDP(53),
		golandlock.BindUDP(0),
	}
}

// resolveBeneath opens nothing that is not below the workspace, and
// follows no symlink: the paths were resolved already, so one met now was
// swapped in since.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// beneath opens the workspace-relative rel as an O_PATH descriptor, below
// ws only, following no symlink.
func beneath(ws int, rel string) (int, error) {
	if rel == "." {
		return unix.Dup(ws)
	}
	return unix.Openat2(ws, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolveBeneath})
}

// changed reports an error of beneath that means the path is no longer
// what the resolver found (gone, or a symlink or another mount in the way).
func changed(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOTDIR)
}

// fdPath names the open descriptor fd for go-landlock, which opens a rule's
// path itself: the magic link leads to the very file fd holds.
func fdPath(fd int) string { return fmt.Sprintf("/proc/self/fd/%d", fd) }

// createLedger creates the missing ledger rel, empty and 0600 as the
// ledger store would (protocol §11), and makes its name durable. A failure
// is left for the first record to meet and answer.
func createLedger(ws int, rel string) {
	fd, err := unix.Openat2(ws, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Mode:    0o600,
		Resolve: resolveBeneath,
	})
	if err != nil {
		return
	}
	unix.Close(fd)
	dir, err := unix.Openat2(ws, path.Dir(rel), &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolveBeneath})
	if err != nil {
		return
	}
	_ = unix.Fsync(dir)
	unix.Close(dir)
}
