package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/cli"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/protocol"
)

func TestOptionFormsAreAccepted(t *testing.T) {
	is := is.New(t)
	o, help, e := cli.Parse(cli.OneShot, []string{"--workspace=ws", "--output-dir", "runs", "--cancel-file=stop", "--ledger", "l", "--signing-key=k", "--trusted-key", "p"})
	is.True(e == nil && !help)
	is.Equal(o, cli.Options{Options: app.Options{Workspace: "ws", OutputDir: "runs", CancelFile: "stop", Ledger: "l", SigningKey: "k", TrustedKey: "p"}})
	_, help, e = cli.Parse(cli.OneShot, []string{"--help"})
	is.True(e == nil)
	is.True(help)
}

func TestListLimitIsAnIntegerFrom0To1000ForMCPOnly(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  int
		ok    bool
	}{
		{"0", 0, true}, {"10", 10, true}, {"1000", 1000, true}, {"007", 7, true},
		{"1001", 0, false}, {"-1", 0, false}, {"+5", 0, false}, {"1e3", 0, false}, {"5.0", 0, false},
		{" 5", 0, false}, {"five", 0, false}, {"99999999999999999999", 0, false}, {"", 0, false},
	} {
		t.Run(tt.value, func(t *testing.T) {
			is := is.New(t)
			for _, form := range [][]string{{"--list-limit", tt.value}, {"--list-limit=" + tt.value}} {
				o, _, e := cli.Parse(cli.MCP, append([]string{"--workspace", "ws"}, form...))
				if !tt.ok {
					is.True(e != nil && e.Code == protocol.InvalidOptions) // refused
					is.True(!strings.Contains(e.Message, "five"))          // the value is never echoed
					continue
				}
				is.True(e == nil)
				is.Equal(o.ListLimit, tt.want)
			}
		})
	}
	is := is.New(t)
	o, _, e := cli.Parse(cli.MCP, []string{"--workspace", "ws"})
	is.True(e == nil)
	is.Equal(o.ListLimit, cli.DefaultListLimit) // 10 unless given
	_, _, e = cli.Parse(cli.MCP, []string{"--workspace", "ws", "--list-limit", "3", "--list-limit", "4"})
	is.True(e != nil && e.Code == protocol.InvalidOptions) // repeated
	for cmd, pos := range map[cli.Command]int{cli.OneShot: 5, cli.LedgerCheck: 6} {
		_, _, e := cli.Parse(cmd, []string{"--workspace", "ws", "--ledger", "l", "--list-limit", "3"})
		is.True(e != nil && e.Code == protocol.InvalidOptions)                                 // mcp only
		is.Equal(e.Message, fmt.Sprintf("argument %d is not a known option; see --help", pos)) // as before it existed
	}
}

// Each option fault is one code and a message naming the argument's
// position on the whole command line, never its text.
func TestEachOptionFaultNamesItsPosition(t *testing.T) {
	tests := []struct {
		cmd  cli.Command
		args []string
		code protocol.Code
		msg  string
	}{
		{cli.OneShot, []string{"--workspace", "/secret/ws", "--bogus"}, protocol.InvalidOptions, "argument 3 is not a known option; see --help"},
		{cli.OneShot, []string{"/secret/ws"}, protocol.InvalidOptions, "argument 1 is a positional argument; tool-runner takes none"},
		{cli.MCP, []string{"--workspace", "w", "--workspace=/secret"}, protocol.InvalidOptions, "argument 4 repeats --workspace"},
		{cli.OneShot, []string{"--help", "--help"}, protocol.InvalidOptions, "argument 2 repeats --help"},
		{cli.OneShot, []string{"-h", "-h"}, protocol.InvalidOptions, "argument 2 repeats -h"},
		{cli.Report, []string{"-h", "--help"}, protocol.InvalidOptions, "argument 3 repeats the help option (-h, --help)"},
		{cli.OneShot, []string{"-h", "--bogus"}, protocol.InvalidOptions, "argument 2 is not a known option; see --help"},
		{cli.OneShot, []string{"-help"}, protocol.InvalidOptions, "argument 1 is not a known option; see --help"},
		{cli.OneShot, []string{"--workspace"}, protocol.InvalidOptions, "--workspace (argument 1) needs a value"},
		{cli.OneShot, []string{"--workspace="}, protocol.InvalidOptions, "--workspace (argument 1) has an empty value"},
		{cli.OneShot, []string{"--workspace", "--ledger"}, protocol.InvalidOptions, "--workspace (argument 1) has a value starting with --"},
		{cli.LedgerCheck, []string{"--workspace", "w", "--output-dir", "o"}, protocol.InvalidOptions, "argument 4 is an option that tool-runner ledger does not take; it takes --workspace and --ledger"},
		{cli.LedgerCheck, []string{"--workspace", "w"}, protocol.InvalidOptions, "--ledger is required"},
		{cli.MCP, []string{"--output-dir", "o"}, protocol.MissingWorkspace, "--workspace is required"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			is := is.New(t)
			_, _, e := cli.Parse(tt.cmd, tt.args)
			is.True(e != nil)
			is.Equal(e.Code, tt.code)
			is.Equal(e.Message, tt.msg)
		})
	}
	// --help spares the missing --workspace, not a malformed option.
	_, help, e := cli.Parse(cli.LedgerCheck, []string{"--help"})
	if !help || e != nil {
		t.Errorf("--help alone: help %v, fault %v", help, e)
	}
}

// Only the commands that append to no ledger open their service read-only.
func TestOnlyTheLedgerAndReportCommandsAreReadOnly(t *testing.T) {
	for _, tt := range []struct {
		cmd      cli.Command
		args     []string
		readOnly bool
	}{
		{cli.OneShot, nil, false},
		{cli.MCP, nil, false},
		{cli.LedgerCheck, []string{"--ledger", "l"}, true},
		{cli.Report, []string{"--output-dir", "runs", "--run-id", "r"}, true},
	} {
		is := is.New(t)
		o, _, e := cli.Parse(tt.cmd, append([]string{"--workspace", "ws"}, tt.args...))
		is.True(e == nil)
		is.Equal(o.ReadOnly, tt.readOnly) // tt.cmd
	}
}

// -h is --help, for every command: alone, or beside good options, it asks
// for the usage and spares the required options.
func TestDashHIsHelpForEveryCommand(t *testing.T) {
	for _, cmd := range []cli.Command{cli.OneShot, cli.MCP, cli.LedgerCheck, cli.Report} {
		for _, args := range [][]string{{"-h"}, {"--help"}, {"--workspace", "w", "-h"}} {
			t.Run(fmt.Sprint(cmd, args), func(t *testing.T) {
				is := is.New(t)
				_, help, e := cli.Parse(cmd, args)
				is.True(e == nil)
				is.True(help)
			})
		}
	}
}
