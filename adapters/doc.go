// Package adapters is the home of everything that touches the world outside
// the calculation; each subpackage adapts one thing and implements ports:
//
//   - osfs: the real filesystem (os.Root, flock, renameat2, fsync); production.
//   - memfs: an afero filesystem, MemMapFs in tests; deterministic and fast.
//   - stdio: the one-shot stdio transport's bounded reader and line writer.
//   - sysclock: the system clock.
//   - engine: the running executable's SHA256 and build facts.
//   - keyfile: the operator's Ed25519 signing and trusted keys, from PEM files.
//   - porttest: the contract suites every adapter of a port must pass, and
//     fixed fakes for the clock and engine.
//
// Adapters import only domain, ports, the standard library and the
// third-party packages they adapt; they never import app or each other
// (porttest aside, which exists to test them).
package adapters
