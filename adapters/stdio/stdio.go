// Package stdio is the one-shot transport of protocol 1.0 (protocol §1–§3): it
// parses the options, reads one request from standard input under the
// character limit, hands it to the app, writes the one response line and
// maps the answer to the exit status. It also frames the operator commands
// "tool-runner ledger" (protocol §11) and "tool-runner version" (protocol §1).
//
// It only frames: every check and every code is the app's.
package stdio

import (
	"context"
	"errors"
	"io"

	"github.com/metricproof/metricproof/adapters/cli"
	"github.com/metricproof/metricproof/app"
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
func Exit(a app.Answer) int {
	switch {
	case a.OK():
		return 0
	case a.Code == app.Cancelled:
		return 3
	}
	return 1
}

// Run answers one call and returns the exit status. args are the command
// line without the program's name; wire opens the adapters. Option,
// workspace, key and ledger faults are decided before standard input is
// read. Nothing is written to standard error on any handled path. When
// ctx is cancelled (SIGINT, SIGTERM), the call stops at its next cancel
// check and answers CANCELLED, or finishes if it was past its last.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer, wire app.Wire) int {
	o, help, e := cli.Parse(app.OneShot, args)
	if e != nil {
		return reply(stdout, app.Refuse(e))
	}
	if help {
		_, _ = io.WriteString(stdout, Usage)
		return 0
	}
	s, e := app.Open(o, wire)
	if e != nil {
		return reply(stdout, app.Refuse(e))
	}
	defer s.Close()
	// The ledger's pre-check comes before the read (protocol §11), so that a
	// damaged ledger is answered at once even while the caller holds the
	// input open; Serve checks it again once the request is read, which
	// may have taken as long as the caller liked.
	if e := s.CheckLedger(ctx); e != nil {
		return reply(stdout, app.Refuse(e))
	}
	data, short := readInput(ctx, stdin)
	return reply(stdout, s.Serve(ctx, app.Input{Transport: app.Stdio{}, Data: data, Short: short}))
}

// reply writes the answer's line in one write and returns the exit status.
// A success whose line could not be written exits 1: the answer was not
// delivered (a run it committed stays committed).
func reply(stdout io.Writer, a app.Answer) int {
	line := append(a.JSON, '\n')
	if err := Write(stdout, line); err != nil && a.OK() {
		return 1
	}
	return Exit(a)
}

// readInput reads standard input under the limit, and gives up at once
// when ctx is cancelled first.
func readInput(ctx context.Context, stdin io.Reader) ([]byte, app.Short) {
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
			return nil, app.ReadFailed
		case r.over:
			return nil, app.OverLimit
		}
		return r.data, app.Whole
	case <-ctx.Done():
		return nil, app.Interrupted
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

// Ledger runs "tool-runner ledger" (protocol §11): it checks the ledger's whole
// chain and prints one compact JSON line. Exit 0 verified, 1 tampered, 2
// an option fault.
func Ledger(args []string, stdout io.Writer, wire app.Wire) int {
	o, help, e := cli.Parse(app.LedgerCheck, args)
	if e == nil && help {
		_, _ = io.WriteString(stdout, LedgerUsage)
		return 0
	}
	var s *app.Service
	if e == nil {
		s, e = app.Open(o, wire)
	}
	var report app.LedgerReport
	if e == nil {
		defer s.Close()
		report, e = s.CheckChain()
	}
	if e != nil {
		_ = Write(stdout, append(app.LedgerFault(e), '\n'))
		return 2
	}
	_ = Write(stdout, append(report.JSON(), '\n'))
	if !report.Verified {
		return 1
	}
	return 0
}
