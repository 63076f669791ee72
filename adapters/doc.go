// Package adapters is the home of everything that touches the world outside
// the calculation. Each subpackage adapts one thing.
//
// Driven adapters implement ports, and never import app or one another:
//
//   - osfs: the real filesystem (os.Root, flock, renameat2, fsync) for the
//     sources, the evidence store and the call ledger; production.
//   - memfs: an afero filesystem, MemMapFs in tests; deterministic and fast.
//   - s3store: the evidence store and the call ledger in S3-compatible
//     object storage, for several servers sharing one body of evidence;
//     s3store/s3test starts a real S3 server (versitygw) for tests.
//   - keyfile: the operator's Ed25519 keys from PEM files.
//   - sysclock: the system clock.
//   - engine: the running executable's SHA256 (taken once) and build facts.
//   - porttest: the contract suites every adapter of the filesystem ports
//     must pass (and Runs and Records, which every store passes, in object
//     storage too), and fixed fakes for the clock and engine; it imports no
//     adapter, the adapters' tests call it.
//
// Driving adapters are the transports: they drive the app, so they import
// it, and never one another. They only frame; every check and code is the
// app's.
//
//   - stdio: the one-shot protocol (options, usage, the bounded read, the
//     line, exit statuses) and the operator command "tool-runner ledger".
//   - mcp: "tool-runner mcp", a Model Context Protocol server over the SDK,
//     behind a strict line transport of its own.
//   - report: "tool-runner report", the reviewer's page of one run, in
//     Markdown or HTML, rendered from the app's plain values.
//
// The remote MCP server's HTTP front and its token verifier are
// driving-side infrastructure, which the MCP transport and the composition
// root use, and which never import the app:
//
//   - remote: the HTTP front (Host, Origin, CORS, bounds, health, the
//     bearer token and its scope, TLS, the stop) before the SDK's
//     Streamable HTTP handler.
//   - oauth: JWT access tokens verified against the issuer's key set;
//     oauthtest, a test issuer.
//
// architecture_test.go at the repository's root keeps these rules.
package adapters
