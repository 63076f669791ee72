package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/contracts"
)

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
			name:  app.ToolAnalyze,
			title: "Analyze the inputs and commit a run",
			description: "Computes the fixed synthetic-v1 metrics over the operator's sources (conversion rate with a pooled denominator, " +
				"exact revenue contributions, customer-join cardinality, release blockers) and commits them as a new run directory " +
				"(result.json, receipt.json, checksums.json, and attestation.json when the operator signs runs). " +
				"Needs expected_source_digest: the source_digest that inspect_inputs just returned; if the sources changed since, " +
				"it answers STALE_CONTEXT and writes nothing, so inspect again. run_id is optional and names the run " +
				"(else one is assigned); the response's request_id is the run ID to pass to verify_result. " +
				"It never overwrites existing evidence (OUTPUT_COLLISION: choose a new run_id), never repairs a defect in the data, " +
				"never takes a path, and never grants human approval.",
		},
		{
			name:  app.ToolInspect,
			title: "Inspect the inputs",
			description: "Reads and strictly validates the operator's four fixed sources (data/transactions.csv, data/groups.csv, " +
				"data/customers.csv and the metric-definition contract) and returns the SHA256 of each, the combined source_digest, " +
				"the row counts and the release blockers. Call it first: analyze needs the source_digest it returns. " +
				"Takes no arguments. It writes nothing, never takes a path, and never repairs a defect: blockers are reported as found.",
			readOnly: true, idempotent: true,
		},
		{
			name:  app.ToolVerify,
			title: "Verify a committed run",
			description: "Re-reads a run that analyze committed and checks every byte and binding: the checksum map, the receipt, " +
				"the result, the signature of a signed run, that the sources and the engine are unchanged, and that a fresh computation " +
				"gives the same result byte for byte. Needs run_id: the request_id of the analyze that committed the run. " +
				"Answers integrity \"verified\" with the checks it ran, or the first fault's code. It writes nothing.",
			readOnly: true, idempotent: true,
		},
	}
}

// Tools returns the three tool definitions, sorted by name, with their
// input and output schemas derived from contracts/schemas.
func Tools() ([]*sdk.Tool, error) {
	f := false
	var out []*sdk.Tool
	docs := schemas{}
	for _, t := range tools() {
		in, err := docs.inputSchema(t.name)
		if err != nil {
			return nil, err
		}
		res, err := docs.outputSchema(t.name)
		if err != nil {
			return nil, err
		}
		out = append(out, &sdk.Tool{
			Name:         t.name,
			Title:        t.title,
			Description:  t.description,
			InputSchema:  in,
			OutputSchema: res,
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

// schemas are the schemas of contracts/schemas, each decoded once, when
// first needed (decoding one for every $ref made a server's start cost
// 13 ms). The decoded documents are never changed: inline copies.
type schemas map[string]map[string]any

// inputSchema is the tool's inputSchema (SPEC §9): the request schema's
// arguments of the tool, self-contained, plus the optional run_id for
// analyze.
func (docs schemas) inputSchema(tool string) (json.RawMessage, error) {
	request, err := docs.load("request")
	if err != nil {
		return nil, err
	}
	defs, _ := request["$defs"].(map[string]any)
	args, ok := defs[tool+"_arguments"]
	if !ok {
		return nil, fmt.Errorf("request.schema.json has no $defs.%s_arguments", tool)
	}
	schema, err := docs.inline(args, "request", 0)
	if err != nil {
		return nil, err
	}
	if tool == app.ToolAnalyze {
		id, err := docs.inline(defs["id"], "request", 0)
		if err != nil {
			return nil, err
		}
		obj, _ := schema.(map[string]any)
		props, _ := obj["properties"].(map[string]any)
		if props == nil {
			return nil, fmt.Errorf("analyze's arguments schema has no properties")
		}
		props["run_id"] = id
	}
	return json.Marshal(schema)
}

// outputSchema is the tool's outputSchema (SPEC §9): the whole response
// object of SPEC §3, self-contained, with tool fixed to its name and
// result its result schema or null, so error results conform too. Of the
// response schema's conditions, the ones about other tools are dropped.
func (docs schemas) outputSchema(tool string) (json.RawMessage, error) {
	response, err := docs.load("response")
	if err != nil {
		return nil, err
	}
	schema, err := docs.inline(response, "response", 0)
	if err != nil {
		return nil, err
	}
	obj, _ := schema.(map[string]any) // a copy: it may be changed
	if conditions, ok := obj["allOf"].([]any); ok {
		var kept []any
		for _, c := range conditions {
			if about, ok := conditionTool(c); !ok || about == tool {
				kept = append(kept, c)
			}
		}
		obj["allOf"] = kept
	}
	props, _ := obj["properties"].(map[string]any)
	if props == nil {
		return nil, fmt.Errorf("response.schema.json has no properties")
	}
	result, err := docs.load(resultSchemaName(tool))
	if err != nil {
		return nil, err
	}
	inlined, err := docs.inline(result, resultSchemaName(tool), 0)
	if err != nil {
		return nil, err
	}
	props["tool"] = map[string]any{"type": "string", "const": tool}
	props["result"] = map[string]any{"anyOf": []any{inlined, map[string]any{"type": "null"}}}
	return json.Marshal(obj)
}

// conditionTool returns the tool an if/then condition of the response
// schema is about, if it is about one.
func conditionTool(c any) (string, bool) {
	m, _ := c.(map[string]any)
	cond, _ := m["if"].(map[string]any)
	props, _ := cond["properties"].(map[string]any)
	t, _ := props["tool"].(map[string]any)
	name, ok := t["const"].(string)
	return name, ok
}

// resultSchemaName is the schema of the tool's result.
func resultSchemaName(tool string) string {
	switch tool {
	case app.ToolInspect:
		return "inspect-result"
	case app.ToolAnalyze:
		return "analyze-result"
	}
	return "verify-result"
}

// load returns the decoded schema of contracts/schemas with that name.
func (docs schemas) load(name string) (map[string]any, error) {
	if m, ok := docs[name]; ok {
		return m, nil
	}
	data, ok := contracts.Schema(name)
	if !ok {
		return nil, fmt.Errorf("no schema %s", name)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers keep their literal
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s.schema.json: %w", name, err)
	}
	docs[name] = m
	return m, nil
}

// maxInlineDepth bounds the inlining of refs, so a cycle fails instead of
// running forever.
const maxInlineDepth = 64

// metaKeys are the keys a self-contained served schema drops: clients
// cache compiled validators by $id, and $schema, $defs and $comment have
// nothing left to say once every ref is inlined.
func metaKeys() []string { return []string{"$schema", "$id", "$defs", "$comment"} }

// inline returns a copy of the schema node v of the schema doc, with every
// {"$ref": r} replaced by the schema r names (in doc, or in another schema
// file), recursively, and the meta keys dropped.
func (docs schemas) inline(v any, doc string, depth int) (any, error) {
	if depth > maxInlineDepth {
		return nil, fmt.Errorf("schema refs nest deeper than %d: a cycle?", maxInlineDepth)
	}
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			if len(v) != 1 {
				return nil, fmt.Errorf("%s: a $ref beside other keywords cannot be inlined", doc)
			}
			target, targetDoc, err := docs.resolveRef(ref, doc)
			if err != nil {
				return nil, err
			}
			return docs.inline(target, targetDoc, depth+1)
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			if slices.Contains(metaKeys(), k) {
				continue
			}
			y, err := docs.inline(x, doc, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			y, err := docs.inline(x, doc, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	}
	return v, nil
}

// resolveRef finds the schema node a ref names, and the schema it is in.
func (docs schemas) resolveRef(ref, doc string) (any, string, error) {
	file, pointer, _ := strings.Cut(strings.TrimPrefix(ref, contracts.SchemaIDBase), "#")
	if file != "" {
		doc = strings.TrimSuffix(file, ".schema.json")
	}
	root, err := docs.load(doc)
	if err != nil {
		return nil, "", fmt.Errorf("$ref %q: %w", ref, err)
	}
	var node any = root
	for _, part := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		if part == "" {
			continue
		}
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := node.(map[string]any)
		if !ok {
			return nil, "", fmt.Errorf("$ref %q does not name a schema", ref)
		}
		if node, ok = m[part]; !ok {
			return nil, "", fmt.Errorf("$ref %q does not name a schema", ref)
		}
	}
	return node, doc, nil
}
