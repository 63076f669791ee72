//go:build linux

package landlock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/adapters/landlock"
)

// childEnv makes the test binary a child that confines itself with the
// Need in the variable's value, tries the network, and prints what it
// got: confining is for good, so it never runs in the test's own process.
const childEnv = "METRICPROOF_LANDLOCK_TEST_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(child(spec))
	}
	os.Exit(m.Run())
}

// childSpec is what the child confines itself to, and the ports it tries.
type childSpec struct {
	Need    landlock.Need
	Bind    int // allowed
	Connect int // allowed, listened on by the test
	Refused int // not allowed, listened on by the test
}

// child confines the process with spec's Need and reports each attempt's
// outcome, "ok" or the errno's name, as one JSON object.
func child(spec string) int {
	var s childSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Println(err)
		return 2
	}
	if _, err := landlock.New(s.Need, nil).Apply(); err != nil {
		fmt.Println(err)
		return 2
	}
	// Plain TCP, as the shipped runner's directive makes Go's default:
	// this test binary has no such directive.
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	var d net.Dialer
	d.SetMultipathTCP(false)
	listen := func(port int) error {
		l, err := lc.Listen(context.Background(), "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			l.Close()
		}
		return err
	}
	dial := func(host string, port int) error {
		c, err := d.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			c.Close()
		}
		return err
	}
	readFile := func(name string) error {
		_, err := os.ReadFile(name)
		return err
	}
	got := map[string]string{
		"bind_allowed":        outcome(listen(s.Bind)),
		"bind_other":          outcome(listen(0)),
		"connect_allowed":     outcome(dial("127.0.0.1", s.Connect)),
		"connect_by_name":     outcome(dial("localhost", s.Connect)),
		"connect_other":       outcome(dial("127.0.0.1", s.Refused)),
		"read_hosts":          outcome(readFile("/etc/hosts")),
		"read_other_in_etc":   outcome(readFile("/etc/passwd")),
		"read_own_exe":        outcome(readFile("/proc/self/exe")),
		"list_root_directory": outcome(func() error { _, err := os.ReadDir("/"); return err }()),
	}
	line, _ := json.Marshal(got)
	fmt.Println(string(line))
	return 0
}

func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return "other: " + err.Error()
}

// The ports a later transport will name (an HTTP server's own, a store's,
// an identity provider's) are the only ones it may bind and connect to,
// by address or by name, and naming a port to connect to lets the
// resolver read its files and nothing else of /etc. The kernel decides:
// a child process confines itself and tries.
func TestOnlyTheNamedPortsAreBoundAndConnected(t *testing.T) {
	k := landlock.Kernel(false)
	if k.LandlockABI < 4 { // Network is false here anyway: this test binary keeps Go's multipath default
		t.Skipf("this kernel (Landlock ABI %d) does not confine TCP", k.LandlockABI)
	}
	is := is.New(t)
	listener := func() (net.Listener, int) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		is.NoErr(err)
		return l, l.Addr().(*net.TCPAddr).Port
	}
	allowed, connect := listener()
	defer allowed.Close()
	other, refused := listener()
	defer other.Close()
	free, bind := listener()
	free.Close() // a port free for the child to bind
	spec, _ := json.Marshal(childSpec{
		Need:    landlock.Need{Bind: []uint16{uint16(bind)}, Connect: []uint16{uint16(connect)}},
		Bind:    bind,
		Connect: connect,
		Refused: refused,
	})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the child failed: %v\n%s", err, out)
	}
	var got map[string]string
	is.NoErr(json.Unmarshal(out, &got))
	t.Logf("Landlock ABI %d: %v", k.LandlockABI, got)
	is.Equal(got, map[string]string{
		"bind_allowed":        "ok",
		"bind_other":          "EACCES",
		"connect_allowed":     "ok",
		"connect_by_name":     "ok",
		"connect_other":       "EACCES",
		"read_hosts":          "ok",
		"read_other_in_etc":   "EACCES",
		"read_own_exe":        "ok",
		"list_root_directory": "EACCES",
	})
}
