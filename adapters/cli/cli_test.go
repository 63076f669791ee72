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

// The options of the server over HTTP are mcp's only; --allowed-host and
// --allowed-origin may be repeated and keep their order; each other is
// given once; each needs --http, and the issuer and audience, and the
// certificate and key, go in pairs. No message echoes a value.
func TestTheHTTPOptionsAreMCPsAndGoTogether(t *testing.T) {
	is := is.New(t)
	o, help, e := cli.Parse(cli.MCP, []string{"--workspace", "ws", "--http", "0.0.0.0:8443",
		"--auth-issuer=https://id.example.com", "--auth-audience", "https://mcp.example.com/mcp", "--auth-jwks", "jwks.json",
		"--allowed-host", "mcp.example.com", "--allowed-host=10.0.0.5:8443", "--allowed-origin", "https://app.example.com",
		"--tls-cert", "cert.pem", "--tls-key", "key.pem"})
	is.True(e == nil && !help)
	is.Equal(o.HTTP, cli.HTTP{Addr: "0.0.0.0:8443", AuthIssuer: "https://id.example.com", AuthAudience: "https://mcp.example.com/mcp", AuthJWKS: "jwks.json",
		AllowedHosts: []string{"mcp.example.com", "10.0.0.5:8443"}, AllowedOrigins: []string{"https://app.example.com"}, TLSCert: "cert.pem", TLSKey: "key.pem"})
	o, _, e = cli.Parse(cli.MCP, []string{"--workspace", "ws"})
	is.True(e == nil)
	is.Equal(o.HTTP, cli.HTTP{}) // over stdio

	tests := []struct {
		name string
		cmd  cli.Command
		args []string
		msg  string
	}{
		{"the one-shot call", cli.OneShot, []string{"--http", "127.0.0.1:0"}, "argument 3 is not a known option; see --help"},
		{"the ledger check", cli.LedgerCheck, []string{"--ledger", "l", "--allowed-host", "h"}, "argument 6 is not a known option; see --help"},
		{"the report", cli.Report, []string{"--tls-cert", "c"}, "argument 4 is not a known option; see --help"},
		{"--http twice", cli.MCP, []string{"--http", "127.0.0.1:1", "--http=127.0.0.1:2"}, "argument 6 repeats --http"},
		{"--auth-issuer twice", cli.MCP, []string{"--http", "127.0.0.1:1", "--auth-issuer", "https://a", "--auth-issuer", "https://b"}, "argument 8 repeats --auth-issuer"},
		{"an empty --allowed-host", cli.MCP, []string{"--http", "127.0.0.1:1", "--allowed-host="}, "--allowed-host (argument 6) has an empty value"},
		{"--allowed-origin without a value", cli.MCP, []string{"--http", "127.0.0.1:1", "--allowed-origin"}, "--allowed-origin (argument 6) needs a value"},
		{"an issuer without --http", cli.MCP, []string{"--auth-issuer", "https://secret.example", "--auth-audience", "https://a"}, "--auth-issuer is an option of the server over HTTP: give --http HOST:PORT too, or leave it out"},
		{"an allowed host without --http", cli.MCP, []string{"--allowed-host", "secret.example"}, "--allowed-host is an option of the server over HTTP: give --http HOST:PORT too, or leave it out"},
		{"a key without --http", cli.MCP, []string{"--tls-key", "/secret/key.pem"}, "--tls-key is an option of the server over HTTP: give --http HOST:PORT too, or leave it out"},
		{"an issuer alone", cli.MCP, []string{"--http", "127.0.0.1:0", "--auth-issuer", "https://secret.example"}, "--auth-issuer and --auth-audience go together: the issuer whose tokens are accepted, and this server's URL that they must name as their audience"},
		{"an audience alone", cli.MCP, []string{"--http", "127.0.0.1:0", "--auth-audience", "https://secret.example"}, "--auth-issuer and --auth-audience go together: the issuer whose tokens are accepted, and this server's URL that they must name as their audience"},
		{"a key set alone", cli.MCP, []string{"--http", "127.0.0.1:0", "--auth-jwks", "/secret/jwks.json"}, "--auth-jwks needs --auth-issuer and --auth-audience: it is the key set of that issuer"},
		{"a certificate alone", cli.MCP, []string{"--http", "127.0.0.1:0", "--tls-cert", "/secret/cert.pem"}, "--tls-cert and --tls-key go together: the server's certificate chain and its private key, both PEM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			_, _, e := cli.Parse(tt.cmd, append([]string{"--workspace", "ws"}, tt.args...))
			is.True(e != nil)
			is.Equal(e.Code, protocol.InvalidOptions)
			is.Equal(e.Message, tt.msg)
			is.True(!strings.Contains(e.Message, "secret")) // no value echoed
		})
	}
	t.Run("an option fault comes before the workspace", func(t *testing.T) {
		is := is.New(t)
		_, _, e := cli.Parse(cli.MCP, []string{"--tls-cert", "c"})
		is.Equal(e.Code, protocol.InvalidOptions)
	})
}
