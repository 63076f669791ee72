// Package app holds metricproof's three use cases (inspect_inputs, analyze,
// verify_result) as a service that transports drive: one call (its
// request checks, protocol §2 and §9, are package protocol's), the use cases,
// the response object of protocol §3, signed evidence (protocol §10, with package
// attest) and the call ledger's records (protocol §11, with package ledger).
//
// # How a call runs
//
// A transport opens a [Service] once ([Open]: the workspace, the keys and
// the ledger's place, decided before any input is read), and hands it
// every call as an [Input]: the raw bytes as they arrived. [Service.Serve]
// runs the ledger's pre-check, the request checks in their declared order,
// the tool (under the call's context, which every cancel check reads
// beside the operator's marker), and appends the call's record, and returns
// one [Answer]: the response object encoded once, which the stdio transport
// writes as its line and the MCP transport as its tool result. A panic
// anywhere below is recovered into INTERNAL_ERROR.
//
// # Codes
//
// app is the only place that turns failures into the protocol's codes
// (but for the command line's option faults, which package adapters/cli
// gives): [classify] is the one table from failures to [Code]s. Checks do not pick
// codes; they return what they found (a port or domain error, or a
// finding), and the step that ran them, declared beside each check,
// decides the code. A [Code] alone decides the status and retryability;
// exit statuses are the stdio transport's.
//
// # The reviewer's page
//
// [Service.Review] verifies a run with verify_result's own checks and
// gathers what "tool-runner report" prints as plain values ([Review]);
// adapters/report renders them. app holds no Markdown or HTML.
//
// The app reaches the world only through the interfaces of package ports,
// which a composition root (cmd/tool-runner) fills with adapters.
//
// Start reading at [Service.Serve].
package app
