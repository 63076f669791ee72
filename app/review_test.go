package app_test

import (
	"context"
	"path"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/cli"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/internal/testutil"
)

// parseOptions parses a command line as tool-runner does, --help aside.
func parseOptions(cmd cli.Command, args []string) (cli.Options, *protocol.Error) {
	o, _, e := cli.Parse(cmd, args)
	return o, e
}

func TestReportOptions(t *testing.T) {
	base := []string{"--workspace", "ws", "--output-dir", "runs", "--run-id", "demo-001"}
	tests := []struct {
		name   string
		args   []string
		code   protocol.Code // "" when accepted
		format string
	}{
		{"the default format", base, "", cli.FormatMarkdown},
		{"markdown", append(base, "--format", "markdown"), "", cli.FormatMarkdown},
		{"html, inline", append(base, "--format=html"), "", cli.FormatHTML},
		{"a trusted key and a ledger", append(base, "--trusted-key", "p.pem", "--ledger", "l"), "", cli.FormatMarkdown},
		{"an unknown format", append(base, "--format", "pdf"), protocol.InvalidOptions, ""},
		{"a format in capitals", append(base, "--format", "HTML"), protocol.InvalidOptions, ""},
		{"a repeated format", append(base, "--format", "html", "--format", "html"), protocol.InvalidOptions, ""},
		{"a repeated run ID", append(base, "--run-id", "demo-001"), protocol.InvalidOptions, ""},
		{"no run ID", base[:4], protocol.InvalidOptions, ""},
		{"no output directory", []string{"--workspace", "ws", "--run-id", "r"}, protocol.InvalidOptions, ""},
		{"no workspace", []string{"--output-dir", "runs", "--run-id", "r"}, protocol.MissingWorkspace, ""},
		{"a run ID with a slash", []string{"--workspace", "ws", "--output-dir", "runs", "--run-id", "../r"}, protocol.InvalidOptions, ""},
		{"a run ID with a space", []string{"--workspace", "ws", "--output-dir", "runs", "--run-id", "a b"}, protocol.InvalidOptions, ""},
		{"a run ID of 65 characters", []string{"--workspace", "ws", "--output-dir", "runs", "--run-id", strings.Repeat("a", 65)}, protocol.InvalidOptions, ""},
		{"a run ID starting with _", []string{"--workspace", "ws", "--output-dir", "runs", "--run-id", "_r"}, protocol.InvalidOptions, ""},
		{"a run ID with markup", []string{"--workspace", "ws", "--output-dir", "runs", "--run-id", "<script>"}, protocol.InvalidOptions, ""},
		{"an empty run ID", []string{"--workspace", "ws", "--output-dir", "runs", "--run-id="}, protocol.InvalidOptions, ""},
		{"a signing key", append(base, "--signing-key", "k"), protocol.InvalidOptions, ""},
		{"a cancel file", append(base, "--cancel-file", "c"), protocol.InvalidOptions, ""},
		{"a list limit", append(base, "--list-limit", "3"), protocol.InvalidOptions, ""},
		{"a positional argument", append(base, "extra"), protocol.InvalidOptions, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			o, e := parseOptions(cli.Report, tt.args)
			if tt.code != "" {
				is.True(e != nil)
				is.Equal(e.Code, tt.code)
				is.True(!strings.Contains(e.Message, "../r") && !strings.Contains(e.Message, "<script>")) // never the value
				return
			}
			is.True(e == nil)
			is.Equal(o.Format, tt.format)
			is.Equal(o.RunID, "demo-001")
			is.True(o.ReadOnly) // the report writes nothing, to the ledger neither
		})
	}
}

// The report's options are unknown options to every other command, with
// the very answer they gave before the report existed.
func TestOtherCommandsRefuseTheReportsOptionsAsUnknown(t *testing.T) {
	for _, cmd := range []cli.Command{cli.OneShot, cli.MCP, cli.LedgerCheck} {
		for _, opt := range []string{"--run-id", "--format"} {
			is := is.New(t)
			_, e := parseOptions(cmd, []string{"--workspace", "ws", opt, "x"})
			_, unknown := parseOptions(cmd, []string{"--workspace", "ws", "--bogus", "x"})
			is.True(e != nil && unknown != nil)
			is.Equal(*e, *unknown)
		}
	}
}

// review opens a service for tool-runner report and gathers its page.
func (m *memWorkspace) review(args ...string) (app.Review, *protocol.Error) {
	m.t.Helper()
	o, e := parseOptions(cli.Report, append([]string{"--workspace", wsRoot}, args...))
	if e != nil {
		return app.Review{}, e
	}
	s, err := app.Open(o.Options, m.wire)
	if err != nil {
		return app.Review{}, protocol.ErrorOf(err)
	}
	defer s.Close()
	r, err := s.Review(context.Background(), o.RunID)
	return r, protocol.ErrorOf(err)
}

func checkNames(r app.Review) (names []string, passed []bool) {
	for _, c := range r.Checks {
		names = append(names, c.Name)
		passed = append(passed, c.Passed)
	}
	return names, passed
}

// The page verifies a run with verify_result's own checks: on a run that
// verifies, the same checks pass; on each damage, the same first fault,
// code and message, with the checks up to it.
func TestTheReviewVerifiesAsVerifyResultDoes(t *testing.T) {
	tests := []struct {
		name   string
		damage func(m *memWorkspace)
		code   string
		failed string // the check that fails, last of the page's checks
	}{
		{"a run that verifies", func(*memWorkspace) {}, "", ""},
		{"no such run", func(m *memWorkspace) { is.New(t).NoErr(m.fs.RemoveAll(wsRoot + "/runs/r1")) }, "MISSING_RESULT", "run_present"},
		{"no output directory", func(m *memWorkspace) { is.New(t).NoErr(m.fs.RemoveAll(wsRoot + "/runs")) }, "MISSING_RESULT", "run_present"},
		{"a missing receipt", func(m *memWorkspace) { is.New(t).NoErr(m.fs.Remove(wsRoot + "/runs/r1/receipt.json")) }, "MISSING_RESULT", "run_present"},
		{"a stray file", func(m *memWorkspace) { m.write("runs/r1/extra", "") }, "INVALID_SAVED_RESULT", "saved_files_valid"},
		{"an edited receipt", func(m *memWorkspace) {
			m.write("runs/r1/receipt.json", strings.Replace(string(m.read("runs/r1/receipt.json")), "2026", "2025", 1))
		}, "RECEIPT_TAMPERED", "receipt_bound"},
		{"an edited result", func(m *memWorkspace) {
			m.write("runs/r1/result.json", strings.Replace(string(m.read("runs/r1/result.json")), `"140"`, `"141"`, 1))
		}, "RESULT_TAMPERED", "result_bound"},
		{"a changed source", func(m *memWorkspace) {
			m.write("data/groups.csv", string(m.read("data/groups.csv"))+"G3,1,1\n")
		}, "STALE_SOURCES", "sources_unchanged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			m := newMem(t, testutil.Fixture(t))
			is.Equal(m.run(analyzeReq("r1", m.digest()), "--workspace", wsRoot, "--output-dir", "runs").Exit, 0)
			tt.damage(m)
			verify := m.run(verifyReq("v1", "r1"), "--workspace", wsRoot, "--output-dir", "runs")
			before := m.tree()
			r, e := m.review("--output-dir", "runs", "--run-id", "r1")
			is.True(e == nil) // a damaged run is the page's fault, not an option fault
			is.Equal(m.tree(), before)
			is.Equal(r.RunID, "r1")
			names, passed := checkNames(r)
			if tt.code == "" {
				is.True(r.Verified())
				is.Equal(verify.code(), "")
				is.Equal(strings.Join(names, ","), strings.Join(app.Checks()[:4], ",")+","+strings.Join(app.Checks()[5:], ","))
				is.True(!strings.Contains(strings.Join(names, ","), "signature_valid")) // unsigned: not run, not listed
				is.True(r.Result != nil && r.Receipt != nil)
				is.Equal(r.Result.Conversion.Successes, int64(91))
				is.Equal(r.Receipt.RunID, "r1")
				return
			}
			is.True(!r.Verified())
			is.Equal(string(r.Fault.Code), tt.code)
			is.Equal(r.Fault.Code, protocol.Code(verify.code()))
			is.Equal(r.Fault.Message, verify.Body.Error.Message) // the same words
			is.Equal(names[len(names)-1], tt.failed)
			is.Equal(passed[len(passed)-1], false)
			for _, p := range passed[:len(passed)-1] {
				is.True(p)
			}
			is.True(r.Result == nil && r.Receipt == nil) // no numbers, no evidence of a run that does not verify
		})
	}
}

func TestTheReviewFindsTheRunsLedgerRecord(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	args := []string{"--workspace", wsRoot, "--output-dir", "runs", "--ledger", "ledger.jsonl"}
	m.run(inspect("i1"), args...)
	is.Equal(m.run(analyzeReq("r1", m.digest()), args...).Exit, 0)
	m.run(verifyReq("v1", "r1"), args...)

	r, e := m.review("--output-dir", "runs", "--run-id", "r1", "--ledger", "ledger.jsonl")
	is.True(e == nil)
	is.True(r.Verified())
	names, _ := checkNames(r)
	is.Equal(names[len(names)-1], app.LedgerCheckName)
	is.True(r.Ledger != nil && r.Ledger.Verified)
	is.Equal(r.Ledger.Records, int64(3))
	is.True(r.Ledger.Record != nil)
	is.Equal(r.Ledger.Record.Line, int64(2)) // the analyze, after the inspect
	is.Equal(r.Ledger.Record.Seq, int64(2))
	is.Equal(r.Ledger.Record.ResultSHA256, r.Receipt.ResultSHA256)

	// A run no record names.
	is.Equal(m.run(analyzeReq("r2", m.digest()), "--workspace", wsRoot, "--output-dir", "runs").Exit, 0)
	r, e = m.review("--output-dir", "runs", "--run-id", "r2", "--ledger", "ledger.jsonl")
	is.True(e == nil && r.Verified())
	is.True(r.Ledger.Record == nil)

	// A run made again under a recorded run's ID, from other sources: the
	// ledger's record of that ID is of another result, and the review says
	// so rather than that no record names the run.
	is.NoErr(m.fs.RemoveAll(path.Join(wsRoot, "runs", "r1")))
	m.write("data/transactions.csv", strings.Replace(string(m.read("data/transactions.csv")), "T1,C1,2,", "T1,C1,3,", 1))
	m.run(inspect("i2"), "--workspace", wsRoot)
	is.Equal(m.run(analyzeReq("r1", m.digest()), "--workspace", wsRoot, "--output-dir", "runs").Exit, 0)
	r, e = m.review("--output-dir", "runs", "--run-id", "r1", "--ledger", "ledger.jsonl")
	is.True(e == nil && r.Verified())
	is.True(r.Ledger.Record == nil)
	is.True(r.Ledger.Other != nil)          // the record of the first r1
	is.Equal(r.Ledger.Other.Line, int64(2)) // the analyze, after the inspect
	is.True(r.Ledger.Other.ResultSHA256 != r.Receipt.ResultSHA256)

	// A damaged chain is the page's fault, with its line, after every check passed.
	lines := strings.SplitAfter(string(m.read("ledger.jsonl")), "\n")
	lines[0] = strings.Replace(lines[0], `"stdio"`, `"mcp"`, 1)
	m.write("ledger.jsonl", strings.Join(lines, ""))
	before := m.tree()
	r, e = m.review("--output-dir", "runs", "--run-id", "r1", "--ledger", "ledger.jsonl")
	is.True(e == nil)
	is.Equal(m.tree(), before)
	is.Equal(r.Fault.Code, protocol.LedgerTampered)
	is.Equal(r.FaultLine, int64(2)) // the line whose prev no longer matches
	names, passed := checkNames(r)
	is.Equal(names[len(names)-1], app.LedgerCheckName)
	is.Equal(passed[len(passed)-1], false)
	is.True(r.Result == nil)

	// A ledger that does not exist is an option fault: no page.
	_, e = m.review("--output-dir", "runs", "--run-id", "r1", "--ledger", "nope.jsonl")
	is.True(e != nil)
	is.Equal(e.Code, protocol.InvalidOptions)
}

// The places of the options are option faults, for no page.
func TestTheReviewRefusesOptionPlaces(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code protocol.Code
	}{
		{"an output directory outside the workspace", []string{"--output-dir", "/elsewhere", "--run-id", "r1"}, protocol.PathBoundary},
		{"an output directory that is a file", []string{"--output-dir", "data/groups.csv", "--run-id", "r1"}, protocol.InvalidOutput},
		{"a ledger outside the workspace", []string{"--output-dir", "runs", "--run-id", "r1", "--ledger", "/elsewhere/l"}, protocol.PathBoundary},
		{"a ledger in data", []string{"--output-dir", "runs", "--run-id", "r1", "--ledger", "data/l"}, protocol.PathBoundary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			m := newMem(t, testutil.Fixture(t))
			before := m.tree()
			_, e := m.review(tt.args...)
			is.True(e != nil)
			is.Equal(e.Code, tt.code)
			is.Equal(m.tree(), before)
		})
	}
}

// The page explains every field of the verification block, in its order.
func TestDisclaimerIsTheVerificationBlock(t *testing.T) {
	is := is.New(t)
	m := newMem(t, testutil.Fixture(t))
	raw := m.run(inspect("i1"), "--workspace", wsRoot).Raw
	var fields []string
	for _, d := range app.Disclaimer() {
		fields = append(fields, `"`+d.Field+`":"`+d.Value+`"`)
	}
	is.True(strings.Contains(raw, `"verification":{`+strings.Join(fields, ",")+`}`))
}
