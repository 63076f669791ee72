//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/landlock"
	"github.com/metricproof/metricproof/adapters/s3store/s3test"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/internal/tools/buildcmd"
)

// probeWord is the first argument of the test-only probe
// (probe_landlockprobe.go), which only a build tagged landlockprobe has;
// probeMarker is a string of its code, the name of one of its attempts
// (the compiler keeps a string that short as instructions, not data).
const (
	probeWord   = "landlock-probe"
	probeMarker = "listen_go_default"
)

// long skips a test that builds the runner (each build takes seconds,
// tens of them on a loaded machine) unless the long suite is asked for,
// and under -short (the race detector's run).
func long(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s: not under -short", what)
	}
	testutil.SkipUnlessLong(t)
}

// buildRunner builds tool-runner with README's command into a fresh
// directory, with the build tags given (none for the shipped runner).
func buildRunner(t *testing.T, tags ...string) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "tool-runner")
	cmd := buildcmd.Command(testutil.Root(t), exe, "./cmd/tool-runner")
	if len(tags) > 0 {
		cmd.Args = slices.Insert(cmd.Args, 2, "-tags", strings.Join(tags, ","))
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	return exe
}

// probed is the probe's line: what the kernel enforces, and each
// attempt's outcome, "ok" or the errno's name.
type probed struct {
	Confinement struct {
		LandlockABI int
		Filesystem  bool
		Network     bool
		Scoped      bool
	} `json:"confinement"`
	Attempts map[string]string `json:"attempts"`
}

// runProbe confines the probe as a one-shot call into ws (output
// directory runs, ledger calls.jsonl) and has it try to reach a file and a
// directory outside ws, a file of ws that is neither source nor output,
// a TCP port and an abstract UNIX socket this test listens on, and this
// test's process. env is added to the probe's environment.
func runProbe(t *testing.T, probe string, env ...string) probed {
	t.Helper()
	return runProbeWith(t, probe, []string{"--output-dir", "runs", "--ledger", "calls.jsonl"}, 0, env...)
}

// runProbeWith is runProbe with the probe's options after --workspace, and
// the port of a store the probe must still reach (0: none).
func runProbeWith(t *testing.T, probe string, opts []string, storePort int, env ...string) probed {
	t.Helper()
	ws := fixture(t)
	mustMkdir(t, filepath.Join(ws, "runs"))
	writeFile(t, filepath.Join(ws, "notes.txt"), []byte("not a source\n"))
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret"), []byte("outside the workspace\n"))
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	abstract := fmt.Sprintf("metricproof-probe-%d-%s", os.Getpid(), filepath.Base(outside))
	unixListener, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer unixListener.Close()
	targets, _ := json.Marshal(map[string]any{
		"outside_file":   filepath.Join(outside, "secret"),
		"outside_dir":    outside,
		"workspace_file": "notes.txt",
		"tcp_port":       tcp.Addr().(*net.TCPAddr).Port,
		"abstract_unix":  abstract,
		"pid":            os.Getpid(),
		"store_port":     storePort,
	})
	cmd := exec.Command(probe, append([]string{probeWord, "--workspace", ws}, opts...)...)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(targets)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the probe failed: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	var r probed
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("the probe's report is not JSON: %v: %q", err, stdout.String())
	}
	return r
}

// The kernel, not the program, refuses what the rules do not allow: a
// test-only build of the runner confines itself exactly as a one-shot
// call does, then tries to read and write outside its rules, execute,
// bind, listen and connect TCP (Go's defaults and plain TCP), reach an
// abstract UNIX socket and signal a process outside it, and reports each
// errno. Each refusal must be the kernel's (EACCES, or EPERM for the
// scoped ones), on the features this kernel has; what the command needs
// must still work. With METRICPROOF_LANDLOCK=off the same attempts
// succeed: the test can tell. Multipath TCP asked for explicitly is
// reported, not asserted: Landlock's TCP rules do not cover it
// (docs/guarantees.md).
func TestTheKernelRefusesWhatTheRulesDoNotAllow(t *testing.T) {
	long(t, "builds the test-only probe")
	k := landlock.Kernel(false)
	if k.LandlockABI == 0 {
		t.Skip("this kernel has no Landlock (ABI 0): the command runs unconfined, as protocol §16 allows")
	}
	probe := buildRunner(t, "landlockprobe")
	type feature int
	const (
		always feature = iota
		filesystem
		network
		scoped
	)
	tests := []struct {
		attempt string
		needs   feature
		want    string
	}{
		{"read_outside_file", filesystem, "EACCES"},
		{"create_outside", filesystem, "EACCES"},
		{"read_workspace_file", filesystem, "EACCES"},
		{"create_in_data", filesystem, "EACCES"},
		{"write_source", filesystem, "EACCES"},
		{"remove_source", filesystem, "EACCES"},
		{"symlink_in_output", filesystem, "EACCES"},
		{"execute", filesystem, "EACCES"},
		{"bind_tcp", network, "EACCES"},
		{"listen_go_default", network, "EACCES"},
		{"connect_tcp", network, "EACCES"},
		{"connect_go_default", network, "EACCES"},
		{"connect_abstract", scoped, "EPERM"},
		{"signal_outside", scoped, "EPERM"},
		{"read_source", always, "ok"},
		{"read_executable", always, "ok"},
		{"write_output", always, "ok"},
		{"list_workspace", always, "ok"},
		{"append_to_ledger", always, "ok"},
	}
	if k.LandlockABI >= 3 {
		tests = append(tests, struct {
			attempt string
			needs   feature
			want    string
		}{"truncate_source", filesystem, "EACCES"})
	}
	r := runProbe(t, probe)
	t.Logf("Landlock ABI %d, confinement %+v", r.Confinement.LandlockABI, r.Confinement)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for name := range r.Attempts {
			if !yield(name) {
				return
			}
		}
	}) {
		t.Logf("  %-20s %s", name, r.Attempts[name])
	}
	enforced := map[feature]bool{always: true, filesystem: r.Confinement.Filesystem, network: r.Confinement.Network, scoped: r.Confinement.Scoped}
	is := is.New(t)
	is.Equal(r.Confinement.LandlockABI, k.LandlockABI) // the probe ran on this kernel
	is.True(r.Confinement.Filesystem)                  // every Landlock confines files
	for _, tt := range tests {
		t.Run(tt.attempt, func(t *testing.T) {
			if !enforced[tt.needs] {
				t.Skipf("this kernel (Landlock ABI %d) does not enforce it", k.LandlockABI)
			}
			is := is.New(t)
			is.Equal(r.Attempts[tt.attempt], tt.want)
		})
	}

	t.Run("Go's multipath TCP default would escape the TCP rules", func(t *testing.T) {
		if !r.Confinement.Network {
			t.Skipf("this kernel (Landlock ABI %d) does not confine TCP", k.LandlockABI)
		}
		is := is.New(t)
		// GODEBUG=multipathtcp=2 is Go's own default, which the build's
		// directive overrides: the listen refused above gets through.
		mptcp := runProbe(t, probe, "GODEBUG=multipathtcp=2")
		t.Logf("with GODEBUG=multipathtcp=2: listen_go_default %s, network %v", mptcp.Attempts["listen_go_default"], mptcp.Confinement.Network)
		is.True(!mptcp.Confinement.Network) // reported
		if mptcp.Attempts["listen_multipath"] == "ok" {
			is.Equal(mptcp.Attempts["listen_go_default"], "ok") // this kernel lets multipath TCP through: so would Go's default
		}
	})

	t.Run("METRICPROOF_LANDLOCK=off leaves the probe unconfined", func(t *testing.T) {
		is := is.New(t)
		off := runProbe(t, probe, "METRICPROOF_LANDLOCK=off")
		is.True(!off.Confinement.Filesystem && !off.Confinement.Network && !off.Confinement.Scoped) // reported off
		for _, attempt := range []string{"read_outside_file", "create_outside", "read_workspace_file", "bind_tcp", "connect_tcp", "signal_outside"} {
			is.Equal(off.Attempts[attempt], "ok") // nothing refused it
		}
	})
}

// The probe is never in the shipped runner: README's build holds no trace
// of it and answers its command as a stray argument, while the tagged
// build holds it (so the check can fail).
func TestTheShippedRunnerHasNoProbe(t *testing.T) {
	long(t, "builds the runner twice")
	is := is.New(t)
	shipped := buildRunner(t)
	tagged := buildRunner(t, "landlockprobe")
	for _, b := range []struct {
		exe  string
		want bool
	}{{shipped, false}, {tagged, true}} {
		data, err := os.ReadFile(b.exe)
		is.NoErr(err)
		is.Equal(bytes.Contains(data, []byte(probeMarker)), b.want) // the probe's code in the binary
	}
	ws := fixture(t)
	o := callWith(t, shipped, ws, "", probeWord, "--workspace", ws)
	is.Equal(o.exit, 1)
	is.Equal(o.code(), "INVALID_OPTIONS")
}

// straceRule is one landlock_add_rule call as strace -y shows it: the
// path its descriptor names and the rights it grants.
type straceRule struct {
	path   string
	rights []string
}

// straceLayer is one Landlock ruleset a process built and enforced.
type straceLayer struct {
	rules []straceRule
}

// landlockRights names the filesystem rights by their bit, as the kernel's
// uapi header does; strace names the ones it knows and writes the others
// in hexadecimal.
var landlockRights = []string{"EXECUTE", "WRITE_FILE", "READ_FILE", "READ_DIR", "REMOVE_DIR", "REMOVE_FILE", "MAKE_CHAR", "MAKE_DIR", "MAKE_REG", "MAKE_SOCK", "MAKE_FIFO", "MAKE_BLOCK", "MAKE_SYM", "REFER", "TRUNCATE", "IOCTL_DEV", "RESOLVE_UNIX"}

// rightsOf reads strace's allowed_access: names and hexadecimal bits.
func rightsOf(t *testing.T, field string) []string {
	t.Helper()
	var names []string
	for _, tok := range strings.Split(field, "|") {
		if name, ok := strings.CutPrefix(tok, "LANDLOCK_ACCESS_FS_"); ok {
			names = append(names, name)
			continue
		}
		bits, err := strconv.ParseUint(strings.TrimPrefix(tok, "0x"), 16, 64)
		if err != nil {
			t.Fatalf("strace wrote an access right %q this test cannot read", tok)
		}
		for i, name := range landlockRights {
			if bits&(1<<i) != 0 {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

var (
	createRuleset = regexp.MustCompile(`landlock_create_ruleset\(\{handled_access_fs=.*= (\d+)<anon_inode:\[landlock-ruleset\]>`)
	addRule       = regexp.MustCompile(`landlock_add_rule\((\d+)<anon_inode:\[landlock-ruleset\]>, LANDLOCK_RULE_PATH_BENEATH, \{allowed_access=([^,]+), parent_fd=\d+<([^>]*)>\}, 0\) = 0`)
	restrictSelf  = regexp.MustCompile(`landlock_restrict_self\((\d+)<anon_inode:\[landlock-ruleset\]>, 0\) = (-?\d+)`)
	noNewPrivs    = regexp.MustCompile(`prctl\(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0\) = 0`)
)

// landlockTrace runs exe with args under strace -f -y and returns the Landlock
// layers it enforced, in order; it fails the test unless every thread's
// landlock_restrict_self succeeded and no_new_privs was set.
func landlockTrace(t *testing.T, exe, dir, stdin string, args ...string) []straceLayer {
	t.Helper()
	trace := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command("strace", append([]string{"-f", "-y", "-qq", "-s", "4096", "-o", trace,
		"-e", "trace=landlock_create_ruleset,landlock_add_rule,landlock_restrict_self,prctl", exe}, args...)...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("strace did not run: %v\n%s", err, out)
	}
	f, err := os.Open(trace)
	if err != nil {
		t.Skipf("strace wrote no trace (it may not be allowed to trace here): %v\n%s", err, out)
	}
	defer f.Close()
	var layers []straceLayer
	byFD := map[string]int{} // the ruleset descriptor → its layer
	restricted, nnp := 0, false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case createRuleset.MatchString(line):
			m := createRuleset.FindStringSubmatch(line)
			byFD[m[1]] = len(layers)
			layers = append(layers, straceLayer{})
		case addRule.MatchString(line):
			m := addRule.FindStringSubmatch(line)
			i, ok := byFD[m[1]]
			if !ok {
				t.Fatalf("a rule for a ruleset never created: %s", line)
			}
			layers[i].rules = append(layers[i].rules, straceRule{path: m[3], rights: rightsOf(t, m[2])})
		case strings.Contains(line, "landlock_add_rule("):
			t.Fatalf("a rule strace shows in a form this test cannot read, or that failed: %s", line)
		case restrictSelf.MatchString(line):
			if m := restrictSelf.FindStringSubmatch(line); m[2] != "0" {
				t.Fatalf("landlock_restrict_self failed: %s", line)
			}
			restricted++
		case noNewPrivs.MatchString(line):
			nnp = true
		}
	}
	if restricted < len(layers) || len(layers) == 0 {
		t.Fatalf("%d rulesets, %d landlock_restrict_self calls\n%s", len(layers), restricted, out)
	}
	if !nnp {
		t.Fatal("no_new_privs was never set")
	}
	for i := range layers {
		slices.SortFunc(layers[i].rules, func(a, b straceRule) int { return strings.Compare(a.path, b.path) })
	}
	return layers
}

// An outside observer sees what each command is allowed: strace -f of
// every command of the shipped runner shows no_new_privs set, the
// rulesets enforced by landlock_restrict_self on every thread, and each
// rule's path and rights; they are exactly the command's need (protocol
// §16), and an analyze into a new output directory adds a second, narrower
// layer once it has made it.
func TestStraceShowsWhatEachCommandMayTouch(t *testing.T) {
	long(t, "builds the runner and traces each command")
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace is not installed: an outside observer's view needs it")
	}
	if landlock.Kernel(false).LandlockABI == 0 {
		t.Skip("this kernel has no Landlock: no rule is added")
	}
	exe := buildRunner(t)
	exeReal, err := filepath.EvalSymlinks(exe)
	if err != nil {
		t.Fatal(err)
	}
	var (
		list     = []string{"READ_DIR"}
		readFile = []string{"READ_FILE"}
		read     = []string{"READ_DIR", "READ_FILE"}
		appends  = []string{"READ_FILE", "TRUNCATE", "WRITE_FILE"}
		write    = []string{"MAKE_DIR", "MAKE_REG", "READ_DIR", "READ_FILE", "REMOVE_DIR", "REMOVE_FILE", "TRUNCATE", "WRITE_FILE"}
	)
	type rules map[string][]string // workspace-relative path ("" the executable) → rights
	tests := []struct {
		name   string
		stdin  func(ws string) string
		args   []string
		layers []rules
	}{
		{
			name:   "a one-shot inspect",
			stdin:  func(string) string { return inspectRequest("i1") },
			args:   []string{"--output-dir", "runs", "--ledger", "calls.jsonl", "--cancel-file", "stop"},
			layers: []rules{{".": list, "contracts": readFile, "data": readFile, "runs": write, "calls.jsonl": appends, "": readFile}},
		},
		{
			name:  "a one-shot analyze into a new output directory",
			stdin: func(ws string) string { return analyzeRequest("a1", digestOf(t, ws)) },
			args:  []string{"--output-dir", "runs/new", "--ledger", "calls.jsonl"},
			layers: []rules{
				{".": list, "contracts": readFile, "data": readFile, "runs": write, "calls.jsonl": appends, "": readFile},
				{".": list, "contracts": readFile, "data": readFile, "runs/new": write, "calls.jsonl": appends, "": readFile},
			},
		},
		{
			name:   "the MCP server",
			stdin:  func(string) string { return initialize("2025-06-18") + "\n" },
			args:   []string{"mcp", "--output-dir", "runs", "--ledger", "calls.jsonl"},
			layers: []rules{{".": list, "contracts": readFile, "data": readFile, "runs": write, "calls.jsonl": appends, "": readFile}},
		},
		{
			name:   "the ledger command",
			stdin:  func(string) string { return "" },
			args:   []string{"ledger", "--ledger", "calls.jsonl"},
			layers: []rules{{".": list, "calls.jsonl": readFile, "": readFile}},
		},
		{
			name:   "the report command",
			stdin:  func(string) string { return "" },
			args:   []string{"report", "--output-dir", "runs", "--run-id", "r1", "--ledger", "calls.jsonl"},
			layers: []rules{{".": list, "contracts": readFile, "data": readFile, "runs": read, "calls.jsonl": readFile, "": readFile}},
		},
		{
			name:   "the version command",
			stdin:  func(string) string { return "" },
			args:   []string{"version"},
			layers: []rules{{"": readFile}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ws := fixture(t)
			mustMkdir(t, filepath.Join(ws, "runs"))
			writeFile(t, filepath.Join(ws, "calls.jsonl"), nil)
			args := tt.args
			if tt.args[0] != "version" {
				at := 0
				if !strings.HasPrefix(tt.args[0], "--") {
					at = 1
				}
				args = slices.Insert(slices.Clone(tt.args), at, "--workspace", ws)
			}
			got := landlockTrace(t, exe, ws, tt.stdin(ws), args...)
			is.Equal(len(got), len(tt.layers)) // the layers enforced
			for i, want := range tt.layers {
				var wantRules []straceRule
				for rel, rights := range want {
					p := exeReal
					if rel != "" {
						p = filepath.Join(ws, rel)
					}
					wantRules = append(wantRules, straceRule{path: p, rights: rights})
				}
				slices.SortFunc(wantRules, func(a, b straceRule) int { return strings.Compare(a.path, b.path) })
				if !slices.EqualFunc(got[i].rules, wantRules, func(a, b straceRule) bool { return a.path == b.path && slices.Equal(a.rights, b.rights) }) {
					t.Errorf("layer %d:\n got %v\nwant %v", i+1, got[i].rules, wantRules)
				}
			}
		})
	}
}

// A command whose options name a bucket confines itself like any other,
// and still reaches its store: the kernel lets it connect to the store's
// endpoint port (and look names up), to no other port, and to no file
// outside its rules (protocol §16.3). The probe, confined exactly as a
// one-shot call into the bucket, tries both ports; the shipped runner,
// confined the same way, makes and verifies a run there and the ledger
// command checks the chain.
func TestAConfinedRunnerReachesItsStoreAndNoOtherPort(t *testing.T) {
	long(t, "builds the test-only probe")
	if !landlock.Kernel(false).Network {
		t.Skip("this kernel does not confine TCP (Landlock ABI 4 or later): there is no port rule to test")
	}
	st := startStore(t, s3test.Options{}, 0)
	_, portText, err := net.SplitHostPort(strings.TrimPrefix(st.srv.Endpoint, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	opts := []string{"--output-dir", st.url("runs"), "--ledger", st.url("ledger")}
	probe := buildRunner(t, "landlockprobe")
	r := runProbeWith(t, probe, opts, port)
	is := is.New(t)
	is.True(r.Confinement.Network)                      // confined, TCP included
	is.Equal(r.Attempts["connect_store"], "ok")         // the store's port
	is.Equal(r.Attempts["connect_tcp"], "EACCES")       // and no other
	is.Equal(r.Attempts["read_outside_file"], "EACCES") // files still confined

	ws := fixture(t)
	args := append([]string{"--workspace", ws}, opts...)
	is.Equal(call(t, ws, analyzeRequest("r1", digestOf(t, ws)), args...).exit, 0)
	is.Equal(call(t, ws, verifyRequest("v1", "r1"), args...).result()["integrity"], "verified")
	is.Equal(len(st.checkLedger(ws, "ledger")), 2)
}
