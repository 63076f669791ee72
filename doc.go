// Package metricproof runs one fixed, auditable business calculation over an
// operator's local files for an AI agent, and leaves evidence that anyone can
// verify later.
//
// The agent can call exactly three tools (inspect_inputs, analyze,
// verify_result) through cmd/tool-runner; it never chooses a path, runs a
// command, loads code or reaches a network. The contract is docs/protocol.md; README.md says how to run it and ARCHITECTURE.md where
// everything lives. This root package holds no code: only the tests that
// guard the layout (architecture_test.go) and the shipped fixture.
package metricproof
