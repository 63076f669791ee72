package mcp

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/app/protocol"
)

// Instructions are the server's instructions to the model (protocol
// §9.2), which the SDK sends with initialize and server/discover: the
// order of the calls, what the tools never do, and where the evidence is.
const Instructions = "metricproof runs one fixed, auditable calculation (synthetic-v1) over the operator's four source files " +
	"and keeps evidence anyone can verify later. " +
	"Call inspect_inputs first; then analyze with the source_digest it returned, unchanged, which commits a run; " +
	"then verify_result with that run's ID, the request_id of the analyze that succeeded. " +
	"The tools never take a path, never change or repair the sources, never overwrite evidence and never grant human approval: " +
	"a fault of the sources is the operator's to fix, so tell the user what its message says. " +
	"Each run's complete evidence (result.json, receipt.json, checksums.json, and attestation.json when signed) stays in " +
	"the operator's output directory, readable as the resource metricproof://runs/{run_id}/{file}; resources/list lists the runs. " +
	"Answers hold the first items of long lists (truncated names each list cut and its length). " +
	"A refusal's message says what to do next; when its retryable is true you can do it yourself " +
	"(call again later, or inspect again and pass the new digest), otherwise it needs other arguments or the user."

// tool is what a tool definition says besides its schemas.
type tool struct {
	name, title, description string
	readOnly, idempotent     bool
}

// tools are the three tools, sorted by name, each described for a model:
// what it does, what it needs first, what it never does.
func tools() []tool {
	return []tool{
		{
			name:  protocol.ToolAnalyze,
			title: "Analyze the inputs and commit a run",
			description: "Computes the fixed synthetic-v1 metrics over the operator's sources (conversion rate with a pooled denominator, " +
				"exact revenue contributions, customer-join cardinality, release blockers) and commits them as a new run directory " +
				"(result.json, receipt.json, checksums.json, and attestation.json when the operator signs runs). " +
				"Needs expected_source_digest: the source_digest that inspect_inputs just returned; if it is not the digest of " +
				"the sources now, it answers STALE_CONTEXT (retryable) and writes nothing: inspect again and pass the new digest. " +
				"run_id is optional and names the run (else one is assigned). When analyze succeeds, the response's request_id " +
				"is the ID of the run it committed, to pass to verify_result; a refusal commits no run. " +
				"The answer holds only the first items of each list that grows with the data (truncated names each list cut " +
				"and its full length); it links the run's files, whose complete result.json is the resource " +
				"metricproof://runs/{run_id}/result.json. " +
				"It never overwrites existing evidence (OUTPUT_COLLISION: that run_id is taken by an earlier run; analyze again " +
				"with another run_id or none, and the refusal's request_id is then this call's own), never repairs a defect in " +
				"the data (a fault of the sources is the operator's to fix: tell the user), never takes a path, and never grants " +
				"human approval.",
		},
		{
			name:  protocol.ToolInspect,
			title: "Inspect the inputs",
			description: "Reads and strictly validates the operator's four fixed sources (data/transactions.csv, data/groups.csv, " +
				"data/customers.csv and the metric-definition contract) and returns the SHA256 of each, the combined source_digest, " +
				"the row counts and the release blockers (the first subjects of each; truncated gives the full counts). " +
				"Call it first: analyze needs the source_digest it returns. " +
				"Takes no arguments. It writes nothing, never takes a path, and never repairs a defect: blockers are reported as found.",
			readOnly: true, idempotent: true,
		},
		{
			name:  protocol.ToolVerify,
			title: "Verify a committed run",
			description: "Re-reads a run that analyze committed and checks every byte and binding: the checksum map, the receipt, " +
				"the result, the signature of a signed run, that the sources and the engine are unchanged, and that a fresh computation " +
				"gives the same result byte for byte. Needs run_id: the request_id of the analyze that committed the run " +
				"(resources/list lists the committed runs). " +
				"Answers integrity \"verified\" with the checks it ran and a link to the run's result.json, or the first fault's code. " +
				"It writes nothing.",
			readOnly: true, idempotent: true,
		},
	}
}

//go:generate go run ../../internal/tools/schemagen schemas.json

// schemasJSON are the served schemas, generated from contracts/schemas by
// internal/tools/schemagen (go generate): for each tool, its input schema
// and its output schema with the list limit K as placeholders.
//
//go:embed schemas.json
var schemasJSON []byte

// Tools returns the three tool definitions, sorted by name, with their
// input and output schemas (protocol §9.3); listLimit is the K of protocol
// §9.5 the answers' lists are cut to, which the output schemas state.
func Tools(listLimit int) ([]*sdk.Tool, error) {
	var all map[string]struct{ Input, Output json.RawMessage }
	if err := json.Unmarshal(schemasJSON, &all); err != nil {
		return nil, fmt.Errorf("schemas.json: %w", err)
	}
	f := false
	var out []*sdk.Tool
	for _, t := range tools() {
		s, ok := all[t.name]
		if !ok {
			return nil, fmt.Errorf("schemas.json has no %s: run go generate ./adapters/mcp", t.name)
		}
		out = append(out, &sdk.Tool{
			Name:         t.name,
			Title:        t.title,
			Description:  t.description,
			InputSchema:  compact(s.Input),
			OutputSchema: compact(withListLimit(s.Output, listLimit)),
			Annotations: &sdk.ToolAnnotations{
				ReadOnlyHint:    t.readOnly,
				DestructiveHint: &f,
				IdempotentHint:  t.idempotent,
				OpenWorldHint:   &f,
			},
		})
	}
	return out, nil
}

// placeholders are the list limit's places in a generated output schema:
// the JSON strings "@K@" (K), "@K+1@" (K+1) and "@min(n,K)@" (the lesser of
// n and K), and @K@ within a description.
var placeholders = regexp.MustCompile(`"@K@"|"@K\+1@"|"@min\(([0-9]+),K\)@"|@K@`)

// withListLimit is a generated output schema for the list limit k.
func withListLimit(schema []byte, k int) []byte {
	return placeholders.ReplaceAllFunc(schema, func(p []byte) []byte {
		switch s := string(p); {
		case s == `"@K+1@"`:
			return strconv.AppendInt(nil, int64(k)+1, 10)
		case strings.HasPrefix(s, `"@min(`):
			n, _ := strconv.Atoi(string(placeholders.FindSubmatch(p)[1]))
			return strconv.AppendInt(nil, int64(min(n, k)), 10)
		}
		return strconv.AppendInt(nil, int64(k), 10) // "@K@", or @K@ in a string
	})
}

// compact is a schema without white space, as the SDK sends it.
func compact(schema []byte) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, schema); err != nil {
		return schema // the SDK refuses it, and says so
	}
	return buf.Bytes()
}
