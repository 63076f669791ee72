// Package stdio is the one-shot transport of protocol 1.0 (protocol §1–§3):
// it parses the options, reads one request from standard input under the
// character limit, hands it to the call layer, writes the one response
// line and maps the answer to the exit status. It also frames the operator
// commands "tool-runner ledger" (protocol §11.6) and "tool-runner version"
// (protocol §1.4).
//
// It only frames: every check and every code is the app's. Each command
// is opened first (its options, the workspace, keys and ledger checked,
// before standard input is read) and then run, so that the composition
// root can do what must come between, once.
package stdio

import (
	"context"
	"errors"
	"io"

	"github.com/metricproof/metricproof/adapters/cli"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/call"
	"github.com/metricproof/metricproof/app/jsonout"
	"github.com/metricproof/metricproof/app/protocol"
)

// Usage is what --help prints.
const Usage = `usage: tool-runner --workspace W [--output-dir O] [--cancel-file F]
                   [--ledger L] [--signing-key K] [--trusted-key P]
       tool-runner mcp --workspace W [--output-dir O] [same options]
       tool-runner ledger --workspace W --ledger L
       tool-runner report --workspace W --output-dir O --run-id R [--format html]
       tool-runner version

Reads one JSON request on standard input until EOF and writes exactly one
compact JSON response line on standard output (protocol 1.0).

  --workspace W     the directory holding data/ and contracts/ (required)
  --output-dir O    where analyze commits runs and verify_result reads them;
                    workspace-relative or absolute, inside W
  --cancel-file F   a marker path inside W; when it exists the call stops
  --ledger L        record every call in the hash-chained ledger L, inside W
  --signing-key K   sign every run with this Ed25519 private key (PKCS#8 PEM,
                    mode 600); K may lie anywhere
  --trusted-key P   accept only runs signed by this Ed25519 public key (PEM)
  -h, --help        print this text and exit 0

Tools: inspect_inputs {}, analyze {"expected_source_digest"}, verify_result {"run_id"}.
Exit status: 0 success, 1 handled error, 3 cancelled. SIGINT and SIGTERM
cancel the call; it still answers. With no argument at all, tool-runner
makes no call: it prints this text to standard error and exits 2.
"mcp" serves the same tools over the Model Context Protocol on standard
input and output; "ledger" checks the ledger's chain; "report" verifies a
run and prints its reviewer's page; "version" prints the engine's SHA256,
its build facts and settings, and whether it can be rebuilt, as one JSON
line (compare it with a receipt; docs/engine.md says how to rebuild an
engine). Each takes -h or --help for its own usage.
`

// LedgerUsage is what "tool-runner ledger --help" prints.
const LedgerUsage = `usage: tool-runner ledger --workspace W --ledger L

Checks the call ledger L's whole chain (every line a well-formed record,
numbered from 1 without a gap, each chained to the line before by its
SHA256) and prints one compact JSON line: {"ledger":"verified"} with the
count of records and the head, or {"ledger":"tampered"} with the first
damaged line, its code and message. It writes nothing and changes no mode.

  --workspace W   the workspace the ledger lies in (required)
  --ledger L      the ledger, inside W (required)
  -h, --help      print this text and exit 0

Exit status: 0 the chain is unbroken, 1 it is damaged, 2 an option fault
(one JSON line naming its code).
`

// Bare answers tool-runner run with no argument at all, which is no call
// (protocol §1): the usage on standard error, nothing on standard output,
// standard input never read, exit 2. A person typing the bare command
// learns how to use it; a client, which always passes --workspace, is
// never answered so.
func Bare(stderr io.Writer) int {
	_, _ = io.WriteString(stderr, Usage)
	return 2
}

// Exit is the exit status of an answer: 0 success, 3 cancelled, 1 any
// other failure.
func Exit(a call.Answer) int {
	switch {
	case a.OK():
		return 0
	case a.Code == protocol.Cancelled:
		return 3
	}
	return 1
}

// transport is how the one-shot runner describes itself to the call
// layer.
var transport = call.Transport{Name: "stdio"}

// OneShot is one call of the one-shot runner, opened.
type OneShot struct {
	opts   app.Options
	svc    *app.Service
	stdout io.Writer
}

// Open parses args (the command line without the program's name) and
// opens the service: option, workspace, key and ledger faults are decided
// here, before standard input is read, and so is the ledger's pre-check
// (protocol §11.4), so that a damaged ledger is answered at once even
// while the caller holds the input open. When the call ends here (a fault,
// whose answer it writes, or --help) it returns nil and the exit status.
func Open(ctx context.Context, args []string, stdout io.Writer, wire app.Wire) (*OneShot, int) {
	o, help, e := cli.Parse(cli.OneShot, args)
	if e != nil {
		return nil, reply(stdout, call.Refuse(e))
	}
	if help {
		_, _ = io.WriteString(stdout, Usage)
		return nil, 0
	}
	s, err := app.Open(o.Options, wire)
	if err != nil {
		return nil, reply(stdout, call.Refuse(err))
	}
	if err := s.CheckLedger(ctx); err != nil {
		s.Close()
		return nil, reply(stdout, call.Refuse(err))
	}
	return &OneShot{opts: o.Options, svc: s, stdout: stdout}, 0
}

// Options are the options the call was opened with.
func (c *OneShot) Options() app.Options { return c.opts }

// Run reads the request and answers it, and returns the exit status.
// Nothing is written to standard error on any handled path. When ctx is
// cancelled (SIGINT, SIGTERM), the call stops at its next cancel check and
// answers CANCELLED, or finishes if it was past its last. The call checks
// the ledger again once the request is read, which may have taken as long
// as the caller liked.
func (c *OneShot) Run(ctx context.Context, stdin io.Reader) int {
	data, short := readInput(ctx, stdin)
	a := call.New(c.svc).OneShot(ctx, transport, data, short)
	defer a.Done()
	return reply(c.stdout, a)
}

// Refuse answers a fault met once the call was opened and before it ran
// (the composition root's confinement) as a fault of its opening is
// answered, unrecorded, and returns the exit status.
func (c *OneShot) Refuse(err error) int { return reply(c.stdout, call.Refuse(err)) }

// Close closes the service.
func (c *OneShot) Close() error { return c.svc.Close() }

// Run answers one call, as tool-runner does: Open, Run, Close.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer, wire app.Wire) int {
	c, exit := Open(ctx, args, stdout, wire)
	if c == nil {
		return exit
	}
	defer c.Close()
	return c.Run(ctx, stdin)
}

// reply writes the answer's line in one write and returns the exit status.
// A success whose line could not be written exits 1: the answer was not
// delivered (a run it committed stays committed).
func reply(stdout io.Writer, a call.Answer) int {
	line := append(a.JSON, '\n')
	if err := Write(stdout, line); err != nil && a.OK() {
		return 1
	}
	return Exit(a)
}

// readInput reads standard input under the limit, and gives up at once
// when ctx is cancelled first.
func readInput(ctx context.Context, stdin io.Reader) ([]byte, call.Short) {
	type read struct {
		data []byte
		over bool
		err  error
	}
	done := make(chan read, 1)
	go func() {
		data, over, err := Read(stdin, protocol.RequestLimitChars)
		done <- read{data, over, err}
	}()
	select {
	case r := <-done:
		switch {
		case r.err != nil:
			return nil, call.ReadFailed
		case r.over:
			return nil, call.OverLimit
		}
		return r.data, call.Whole
	case <-ctx.Done():
		return nil, call.Interrupted
	}
}

// chunkBytes is how much Read asks for at a time.
const chunkBytes = 32 << 10

// Read reads r until EOF, unless the input passes limitChars characters
// first: then it stops at once, without waiting for the rest, and reports
// over. A character is counted at each byte that does not continue a UTF-8
// sequence, which is exactly the code point count of valid UTF-8. Invalid
// UTF-8 is left for the JSON check to refuse, but cannot stretch the read:
// more than 4×limitChars bytes is over the limit whatever they hold, since
// valid UTF-8 never needs more.
func Read(r io.Reader, limitChars int) (data []byte, over bool, err error) {
	maxBytes := 4 * limitChars
	chars := 0
	buf := make([]byte, 0, chunkBytes)
	for {
		if cap(buf)-len(buf) < chunkBytes {
			buf = append(buf[:cap(buf)], make([]byte, chunkBytes)...)[:len(buf)]
		}
		n, rerr := r.Read(buf[len(buf) : len(buf)+chunkBytes])
		for _, b := range buf[len(buf) : len(buf)+n] {
			if b&0xC0 != 0x80 {
				chars++
			}
		}
		buf = buf[:len(buf)+n]
		if chars > limitChars || len(buf) > maxBytes {
			return nil, true, nil
		}
		if errors.Is(rerr, io.EOF) {
			return buf, false, nil
		}
		if rerr != nil {
			return nil, false, rerr
		}
	}
}

// Write writes the response line in one call.
func Write(w io.Writer, line []byte) error {
	_, err := w.Write(line)
	return err
}

// LedgerCheck is "tool-runner ledger", opened.
type LedgerCheck struct {
	opts   app.Options
	svc    *app.Service
	stdout io.Writer
}

// OpenLedger parses args (the command line after "ledger") and opens the
// service. When the command ends here (an option fault, whose line it
// writes, or --help) it returns nil and the exit status: 2 for a fault.
func OpenLedger(args []string, stdout io.Writer, wire app.Wire) (*LedgerCheck, int) {
	o, help, e := cli.Parse(cli.LedgerCheck, args)
	if e == nil && help {
		_, _ = io.WriteString(stdout, LedgerUsage)
		return nil, 0
	}
	if e != nil {
		return nil, ledgerFault(stdout, e)
	}
	s, err := app.Open(o.Options, wire)
	if err != nil {
		return nil, ledgerFault(stdout, err)
	}
	return &LedgerCheck{opts: o.Options, svc: s, stdout: stdout}, 0
}

// Options are the options the command was opened with.
func (c *LedgerCheck) Options() app.Options { return c.opts }

// Refuse answers a fault met once the command was opened and before it
// ran (the composition root's confinement) as a fault of its opening is
// answered, and returns the exit status: 2.
func (c *LedgerCheck) Refuse(err error) int { return ledgerFault(c.stdout, err) }

// Run checks the ledger's whole chain and prints one compact JSON line:
// {"ledger":"verified","records","head"}, exit 0, or
// {"ledger":"tampered","line","code","message"}, exit 1. It changes
// nothing, so a signal does not stop it.
func (c *LedgerCheck) Run(context.Context, io.Reader) int {
	report, err := c.svc.CheckChain(context.Background())
	if err != nil {
		return ledgerFault(c.stdout, err)
	}
	var v any
	if report.Verified {
		v = struct {
			Ledger  string `json:"ledger"`
			Records int64  `json:"records"`
			Head    string `json:"head"`
		}{"verified", report.Records, report.Head}
	} else {
		v = struct {
			Ledger  string        `json:"ledger"`
			Line    int64         `json:"line"`
			Code    protocol.Code `json:"code"`
			Message string        `json:"message"`
		}{"tampered", report.Line, report.Fault.Code, report.Fault.Message}
	}
	line, _ := jsonout.Line(v) // plain strings and numbers always encode
	_ = Write(c.stdout, line)
	if !report.Verified {
		return 1
	}
	return 0
}

// Close closes the service.
func (c *LedgerCheck) Close() error { return c.svc.Close() }

// Ledger runs "tool-runner ledger": OpenLedger, Run, Close.
func Ledger(args []string, stdout io.Writer, wire app.Wire) int {
	c, exit := OpenLedger(args, stdout, wire)
	if c == nil {
		return exit
	}
	defer c.Close()
	return c.Run(context.Background(), nil)
}

// ledgerFault writes the line of an option fault of "tool-runner ledger",
// {"ledger":"error","code","message"}, and returns 2.
func ledgerFault(stdout io.Writer, err error) int {
	e := protocol.ErrorOf(err)
	line, _ := jsonout.Line(struct {
		Ledger  string        `json:"ledger"`
		Code    protocol.Code `json:"code"`
		Message string        `json:"message"`
	}{"error", e.Code, e.Message})
	_ = Write(stdout, line)
	return 2
}
