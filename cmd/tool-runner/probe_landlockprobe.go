//go:build landlockprobe

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/adapters/landlock"
	"github.com/metricproof/metricproof/adapters/stdio"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/internal/wire"
	"github.com/metricproof/metricproof/ports"
)

// probeCommand is the first argument of the probe: only a build tagged
// landlockprobe knows it (the tests prove the shipped build does not).
const probeCommand = "landlock-probe"

// probeTargets are what the probe attempts to reach, named by the test
// on standard input once the probe is confined: a file and a directory
// outside the workspace, a TCP port and an abstract UNIX socket the test
// listens on, and a process outside the probe.
type probeTargets struct {
	OutsideFile   string `json:"outside_file"`
	OutsideDir    string `json:"outside_dir"`
	WorkspaceFile string `json:"workspace_file"` // workspace-relative, neither source nor output
	TCPPort       int    `json:"tcp_port"`
	StorePort     int    `json:"store_port"`    // an object store's endpoint, when the options name one
	AbstractUnix  string `json:"abstract_unix"` // without its leading '@'
	PID           int    `json:"pid"`
}

// probeReport is the probe's one line: the confinement the kernel
// reports, and each attempt's outcome, "ok" or the errno's name.
type probeReport struct {
	Confinement ports.Confinement `json:"confinement"`
	Attempts    map[string]string `json:"attempts"`
}

// probe is "tool-runner landlock-probe [one-shot options]": it opens and
// confines itself exactly as a one-shot call does (stdio.Open, then
// runOpened with f), then, instead of a request, reads probeTargets on
// standard input and tries to reach each, printing a probeReport. A fault
// of the opening or the confinement is answered as the one-shot call
// answers it.
func probe(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer, f confiner, disk app.Wire) (int, bool) {
	if len(args) == 0 || args[0] != probeCommand {
		return 0, false
	}
	c, exit := stdio.Open(ctx, args[1:], stdout, f.Wire(disk))
	if c == nil {
		return exit, true
	}
	return runOpened(ctx, &probing{OneShot: c, stdout: stdout}, 0, stdin, f), true
}

// probing is the probe's command: a one-shot call opened, whose run tries
// the targets instead of answering a request.
type probing struct {
	*stdio.OneShot
	stdout io.Writer
}

// Run reads the targets and reports each attempt: exit 0 once it has
// reported, 2 when the targets could not be read.
func (p *probing) Run(_ context.Context, stdin io.Reader) int {
	var targets probeTargets
	if err := json.NewDecoder(stdin).Decode(&targets); err != nil {
		fmt.Fprintf(p.stdout, "the targets could not be read: %v\n", err)
		return 2
	}
	r := probeReport{Confinement: landlock.Kernel(os.Getenv(wire.OffVariable) == "off"), Attempts: attempts(p.Options(), targets)}
	line, _ := json.Marshal(r)
	fmt.Fprintf(p.stdout, "%s\n", line)
	return 0
}

// attempts tries every access, outside the rules and (as controls) inside
// them, and names each outcome.
func attempts(o app.Options, t probeTargets) map[string]string {
	ws := func(rel string) string { return filepath.Join(o.Workspace, rel) }
	out := func(name string) string { return filepath.Join(ws(o.OutputDir), name) }
	plain := func(mptcp bool) *net.ListenConfig {
		var lc net.ListenConfig
		lc.SetMultipathTCP(mptcp)
		return &lc
	}
	dialer := func(mptcp bool) *net.Dialer {
		var d net.Dialer
		d.SetMultipathTCP(mptcp)
		return &d
	}
	tcp := fmt.Sprintf("127.0.0.1:%d", t.TCPPort)
	return map[string]string{
		// Outside the rules.
		"read_outside_file":   attempted(openClose(t.OutsideFile, os.O_RDONLY)),
		"create_outside":      attempted(openClose(filepath.Join(t.OutsideDir, "probe"), os.O_WRONLY|os.O_CREATE|os.O_EXCL)),
		"read_workspace_file": attempted(openClose(ws(t.WorkspaceFile), os.O_RDONLY)),
		"create_in_data":      attempted(openClose(ws("data/probe.csv"), os.O_WRONLY|os.O_CREATE|os.O_EXCL)),
		"write_source":        attempted(openClose(ws("data/groups.csv"), os.O_WRONLY)),
		"truncate_source":     attempted(os.Truncate(ws("data/groups.csv"), 0)),
		"remove_source":       attempted(os.Remove(ws("data/groups.csv"))),
		"symlink_in_output":   attempted(os.Symlink(t.OutsideFile, out("probe-link"))),
		"execute":             attempted(exec.Command("/bin/true").Run()),
		"bind_tcp":            attempted(listen(plain(false))),
		"listen_go_default":   attempted(listen(&net.ListenConfig{})),
		"connect_tcp":         attempted(dial(dialer(false), "tcp", tcp)),
		"connect_go_default":  attempted(dial(&net.Dialer{}, "tcp", tcp)),
		"connect_abstract":    attempted(dial(&net.Dialer{}, "unix", "@"+t.AbstractUnix)),
		"signal_outside":      attempted(syscall.Kill(t.PID, 0)),
		// Multipath TCP asked for explicitly, which Landlock's rules do
		// not cover: reported, not promised.
		"listen_multipath":  attempted(listen(plain(true))),
		"connect_multipath": attempted(dial(dialer(true), "tcp", tcp)),
		// Inside the rules: what the command needs still works.
		"read_source":      attempted(openClose(ws("data/groups.csv"), os.O_RDONLY)),
		"read_executable":  attempted(openClose("/proc/self/exe", os.O_RDONLY)),
		"write_output":     attempted(writeRemove(out("probe.tmp"))),
		"list_workspace":   attempted(listDir(o.Workspace)),
		"append_to_ledger": attempted(openClose(ws(o.Ledger), os.O_WRONLY|os.O_APPEND)),
		"connect_store":    attempted(dial(&net.Dialer{}, "tcp", fmt.Sprintf("127.0.0.1:%d", t.StorePort))),
	}
}

// attempted names err's errno, "ok" for none, or "other" for an error
// without one.
func attempted(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return "other: " + err.Error()
}

func openClose(name string, flag int) error {
	f, err := os.OpenFile(name, flag, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

func writeRemove(name string) error {
	if err := os.WriteFile(name, []byte("probe\n"), 0o600); err != nil {
		return err
	}
	return os.Remove(name)
}

func listDir(name string) error {
	_, err := os.ReadDir(name)
	return err
}

func listen(lc *net.ListenConfig) error {
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	return l.Close()
}

func dial(d *net.Dialer, network, address string) error {
	c, err := d.Dial(network, address)
	if err != nil {
		return err
	}
	return c.Close()
}
