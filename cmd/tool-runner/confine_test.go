//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/engine"
	"github.com/metricproof/metricproof/adapters/oauth/oauthtest"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/internal/wire"
)

// recordingConfiner stands in for wire.Confiner in this process (the real
// one would confine the test): it records what the composition root asks
// of it, in order, and refuses when told to.
type recordingConfiner struct {
	kind    wire.Command
	refuse  error
	wired   bool
	confine []app.Options // one per Confine
	// bind and connect are the ports Allow was given.
	bind, connect []uint16
	// events is the order of what happened: "wired", "confined", "read".
	events *[]string
}

func (f *recordingConfiner) Wire(w app.Wire) app.Wire {
	return func(o app.Options) (app.Ports, io.Closer, error) {
		f.wired = true
		*f.events = append(*f.events, "wired")
		return w(o)
	}
}

func (f *recordingConfiner) Confine(o app.Options) error {
	f.confine = append(f.confine, o)
	*f.events = append(*f.events, "confined")
	return f.refuse
}

func (f *recordingConfiner) Allow(bind, connect []uint16) {
	f.bind = append(f.bind, bind...)
	f.connect = append(f.connect, connect...)
	*f.events = append(*f.events, "allowed")
}

// refusedConfinement is the error wire.Confiner gives when the kernel
// refuses its rules.
func refusedConfinement() error {
	return protocol.Errorf(protocol.IOOrNumericError, "the program could not confine itself to the files and ports this command needs, so it did nothing: retry")
}

// readRecorder is standard input that notes when it is first read.
type readRecorder struct {
	r      io.Reader
	events *[]string
	read   bool
}

func (s *readRecorder) Read(b []byte) (int, error) {
	if !s.read {
		s.read = true
		*s.events = append(*s.events, "read")
	}
	return s.r.Read(b)
}

// dispatched is one command run by dispatch in this process.
type dispatched struct {
	exit           int
	stdout, stderr string
	confiners      []*recordingConfiner
	events         []string
}

// dispatchRecorded runs args through dispatch over the real disk, with
// recording confiners that refuse with refuse (nil: none).
func dispatchRecorded(t *testing.T, refuse error, stdin string, args ...string) dispatched {
	t.Helper()
	var d dispatched
	in := &readRecorder{r: strings.NewReader(stdin), events: &d.events}
	var stdout, stderr bytes.Buffer
	d.exit = dispatch(context.Background(), args, in, &stdout, &stderr, wire.Real(engine.New()), func(c wire.Command) confiner {
		f := &recordingConfiner{kind: c, refuse: refuse, events: &d.events}
		d.confiners = append(d.confiners, f)
		return f
	})
	d.stdout, d.stderr = stdout.String(), stderr.String()
	return d
}

// The composition root confines every command once its options, keys,
// paths and ledger are checked and before its request is read (protocol
// §16): an option, key or ledger fault is answered before any confinement;
// a confined call reads its request afterwards and is answered and
// recorded; a refused confinement is IO_OR_NUMERIC_ERROR with request_id
// null, the request unread, nothing written and nothing recorded.
func TestConfinementComesAfterTheOptionsAndBeforeTheRequest(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		refuse   error
		confined bool
		code     string
	}{
		{"confined, then the call is answered and recorded", []string{"--ledger", "ledger.jsonl"}, nil, true, ""},
		{"an option fault is answered first", []string{"--nope"}, nil, false, "INVALID_OPTIONS"},
		{"so is a key fault", []string{"--signing-key", "no/such/key.pem"}, nil, false, "INVALID_OPTIONS"},
		{"and a ledger's place", []string{"--ledger", "data/ledger.jsonl"}, nil, false, "PATH_BOUNDARY"},
		{"and a damaged ledger (the pre-check)", []string{"--ledger", "damaged.jsonl"}, nil, false, "LEDGER_TAMPERED"},
		{"a refused confinement runs nothing", []string{"--ledger", "ledger.jsonl", "--output-dir", "runs"}, refusedConfinement(), true, "IO_OR_NUMERIC_ERROR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ws := fixture(t)
			writeFile(t, filepath.Join(ws, "damaged.jsonl"), []byte("not a record\n"))
			before := snapshotTree(t, ws)
			d := dispatchRecorded(t, tt.refuse, inspectRequest("i1"), append([]string{"--workspace", ws}, tt.args...)...)
			is.Equal(len(d.confiners), 1)
			f := d.confiners[0]
			is.Equal(f.kind, wire.Tools) // a one-shot call reads sources, writes runs and the ledger
			var r struct {
				RequestID any `json:"request_id"`
				Error     *struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			is.NoErr(json.Unmarshal([]byte(d.stdout), &r)) // one answer
			code := ""
			if r.Error != nil {
				code = r.Error.Code
			}
			is.Equal(code, tt.code)
			is.Equal(len(f.confine) == 1, tt.confined) // confined once, or never
			if tt.confined {
				is.Equal(f.confine[0].Workspace, ws) // with the options checked
				is.Equal(f.confine[0].Ledger, "ledger.jsonl")
			}
			if tt.code == "" {
				is.Equal(d.events, []string{"wired", "confined", "read"}) // the request is read confined
				_, err := os.Stat(filepath.Join(ws, "ledger.jsonl"))
				is.NoErr(err) // recorded
				return
			}
			is.True(!strings.Contains(strings.Join(d.events, " "), "read")) // the request is never read
			is.Equal(r.RequestID, nil)
			sameTree(t, before, snapshotTree(t, ws)) // nothing written, nothing recorded
		})
	}
}

// Every command answers a refused confinement as it answers a fault of
// its opening, and runs nothing: the one-shot call its response line
// (exit 1), the MCP server and the report a line on standard error naming
// the code (exit 2), the ledger command its error line (exit 2). Each is
// confined as its kind: the tools write, the report reads, the ledger
// command reads the ledger alone.
func TestEachCommandAnswersARefusedConfinementAsAnOpeningFault(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		kind   wire.Command
		exit   int
		stdout string // a substring of standard output ("" when empty)
		stderr string // a substring of standard error ("" when empty)
	}{
		{"one-shot", []string{"--output-dir", "runs"}, wire.Tools, 1, `"code":"IO_OR_NUMERIC_ERROR"`, ""},
		{"mcp", []string{"mcp", "--output-dir", "runs"}, wire.Tools, 2, "", "IO_OR_NUMERIC_ERROR: the program could not confine itself"},
		{"report", []string{"report", "--output-dir", "runs", "--run-id", "r1"}, wire.Report, 2, "", "IO_OR_NUMERIC_ERROR: the program could not confine itself"},
		{"ledger", []string{"ledger", "--ledger", "calls.jsonl"}, wire.LedgerCheck, 2, `{"ledger":"error","code":"IO_OR_NUMERIC_ERROR"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ws := fixture(t)
			writeFile(t, filepath.Join(ws, "calls.jsonl"), nil)
			before := snapshotTree(t, ws)
			args := append([]string{"--workspace", ws}, tt.args...)
			if tt.name != "one-shot" {
				args = append([]string{tt.args[0], "--workspace", ws}, tt.args[1:]...)
			}
			d := dispatchRecorded(t, refusedConfinement(), inspectRequest("i1"), args...)
			is.Equal(d.exit, tt.exit)
			is.Equal(len(d.confiners), 1)
			is.Equal(d.confiners[0].kind, tt.kind)
			is.Equal(d.events, []string{"wired", "confined"}) // never run: its input unread
			is.Equal(d.stdout == "", tt.stdout == "")
			is.True(strings.Contains(d.stdout, tt.stdout))
			is.Equal(d.stderr == "", tt.stderr == "")
			is.True(strings.Contains(d.stderr, tt.stderr))
			is.True(!strings.Contains(d.stdout+d.stderr, ws)) // no absolute path
			sameTree(t, before, snapshotTree(t, ws))          // nothing written
		})
	}
}

// mcp --http is confined with the TCP it needs once serving (protocol
// §16): the composition root allows the port it listens on and the
// issuer's key set's port, after opening it and before confining it;
// over stdio it allows no port.
func TestTheServerOverHTTPIsAllowedItsPortAndItsIssuers(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	iss := oauthtest.New(t, oauthtest.NewClock())
	d := dispatchRecorded(t, refusedConfinement(), "", "mcp", "--workspace", ws, "--http", "127.0.0.1:0",
		"--auth-issuer", iss.URL, "--auth-audience", "https://mcp.example.com/mcp")
	is.Equal(d.exit, 2) // the refusal: the server never serves
	is.Equal(d.events, []string{"wired", "allowed", "confined"})
	f := d.confiners[0]
	is.Equal(len(f.bind), 1)
	is.True(f.bind[0] != 0) // the port the kernel picked for :0
	u, err := url.Parse(iss.URL)
	is.NoErr(err)
	is.Equal(f.connect, []uint16{uint16(atoiT(t, u.Port()))})

	d = dispatchRecorded(t, refusedConfinement(), "", "mcp", "--workspace", ws)
	is.Equal(d.events, []string{"wired", "confined"}) // over stdio, no port
}

// atoiT is strconv.Atoi that must succeed.
func atoiT(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
