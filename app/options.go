package app

// Options are the operator's choices, given on the command line (which
// package adapters/cli parses for both transports). Paths are the
// operator's and never a request's.
type Options struct {
	// Workspace is the directory holding the sources.
	Workspace string
	// OutputDir holds the run directories; empty when not given.
	OutputDir string
	// CancelFile is the cancel marker's path; empty when not given.
	CancelFile string
	// Ledger is the call ledger's path; empty when not given.
	Ledger string
	// SigningKey and TrustedKey are the paths of the operator's Ed25519
	// private and public key; empty when not given. They may lie anywhere.
	SigningKey string
	TrustedKey string
	// ListLimit is K of protocol §9: over MCP every list that grows with the
	// data is cut to its first K items. For mcp it is DefaultListLimit
	// unless --list-limit is given; the other commands have no lists to
	// cut and leave it 0.
	ListLimit int
	// RunID and Format are the run and the page format of "tool-runner
	// report" (protocol §13); empty for the other commands. Format is
	// FormatMarkdown unless --format is given.
	RunID  string
	Format string
	// Command is the command these options were given to: the ledger's
	// place has rules for tool calls that "tool-runner ledger" does not
	// apply (protocol §11).
	Command Command
}

// The bounds of --list-limit (protocol §9), and its value when not given.
const (
	DefaultListLimit = 10
	MaxListLimit     = 1000
)

// Command names a command of tool-runner, for its option rules.
type Command int

// The commands of tool-runner (protocol §1).
const (
	// OneShot answers one call over standard input and output.
	OneShot Command = iota
	// MCP serves the tools over MCP: "tool-runner mcp …".
	MCP
	// LedgerCheck checks the call ledger: "tool-runner ledger …".
	LedgerCheck
	// Report prints the reviewer's page of one run: "tool-runner report …"
	// (protocol §13).
	Report
)

// The formats of the reviewer's page (protocol §13).
const (
	FormatMarkdown = "markdown"
	FormatHTML     = "html"
)
