// Package app holds metricproof's three use cases (inspect_inputs, analyze,
// verify_result) and protocol 1.0 around them: the options, the request
// checks of SPEC §2 in their order, and the response envelope of SPEC §3.
//
// It is the only place that turns failures into the protocol's error codes:
// [classify] is the one table from domain and port errors to [Code]s, and a
// [Code] alone decides the status, exit status and retryability. A refusal
// is a value: every path, including a recovered panic, ends in exactly one
// [Reply].
//
// The app reaches the world only through the interfaces of package ports,
// which a composition root (cmd/tool-runner) fills with adapters.
//
// Start reading at [Runner.Run].
package app
