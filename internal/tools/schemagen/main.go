// Command schemagen writes the schemas "tool-runner mcp" serves
// (protocol §9.3) into adapters/mcp/schemas.json, from the schemas of
// contracts/schemas, which never change at run time: go generate
// ./adapters/mcp runs it, and adapters/mcp's tests check that running it
// again changes nothing.
//
// The served schemas are self-contained (every $ref inlined, no $id,
// $schema, $defs or $comment) and input schemas are flat (every allOf
// merged, no anyOf, oneOf or $ref at any depth). An output schema states
// the list limit K in force, which is an option of the server: the file
// holds it as the placeholders of [Placeholders], which the server fills
// in at start.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/metricproof/metricproof/app/call"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/contracts"
	"github.com/metricproof/metricproof/domain"
)

// The placeholders of K in the output schemas: a number that is K, or K+1,
// or the lesser of K and n (the JSON string "@min(n,K)@"), and K within a
// description.
const (
	k        = "@K@"
	kPlusOne = "@K+1@"
	minOfK   = "@min(%d,K)@"
)

func main() {
	out := "schemas.json"
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	data, err := Generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}

// Generate is the content of schemas.json: for each tool, sorted by name,
// its input and output schemas, indented for review.
func Generate() ([]byte, error) {
	docs := schemas{}
	all := map[string]any{}
	for _, tool := range protocol.Tools() {
		in, err := docs.inputSchema(tool)
		if err != nil {
			return nil, err
		}
		res, err := docs.outputSchema(tool)
		if err != nil {
			return nil, err
		}
		all[tool] = map[string]any{"input": in, "output": res}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // its HTML escapes are the served bytes' since the first release
	enc.SetIndent("", "  ")
	if err := enc.Encode(all); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// schemas are the schemas of contracts/schemas, each decoded once, when
// first needed (decoding one for every $ref made a server's start cost
// 13 ms). The decoded documents are never changed: inline copies.
type schemas map[string]map[string]any

// runIDDescription describes analyze's run_id, which only MCP takes.
const runIDDescription = "Optional: the run ID to commit the run under (1 to 64 ASCII letters, digits, '_' or '-', " +
	"starting with a letter or digit); it must be new. Absent, the server assigns one."

// inputSchema is the tool's inputSchema (protocol §9.3): the request schema's
// arguments of the tool, self-contained and flat, plus the optional run_id
// for analyze.
func (docs schemas) inputSchema(tool string) (any, error) {
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
	if tool == protocol.ToolAnalyze {
		id, err := docs.inline(defs["id"], "request", 0)
		if err != nil {
			return nil, err
		}
		obj, _ := schema.(map[string]any)
		props, _ := obj["properties"].(map[string]any)
		if props == nil {
			return nil, fmt.Errorf("analyze's arguments schema has no properties")
		}
		idSchema, _ := id.(map[string]any)
		idSchema["description"] = runIDDescription
		props["run_id"] = idSchema
	}
	if schema, err = flatten(schema); err != nil {
		return nil, fmt.Errorf("%s's inputSchema: %w", tool, err)
	}
	return schema, nil
}

// combinators are the keywords an input schema may not hold at any depth
// (protocol §9): hosts convert tool schemas into function-calling subsets
// that lack them.
func combinators() []string { return []string{"allOf", "anyOf", "oneOf", "$ref"} }

// flatten merges each allOf into the schema that holds it, recursively:
// {"description": d, "allOf": [{"type": "string", "pattern": p}]} becomes
// {"description": d, "type": "string", "pattern": p}. The outer schema's
// annotations win; any other keyword that two of them set is an error,
// as is anyOf, oneOf or $ref anywhere: such a schema is not flat.
func flatten(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if k == "allOf" {
				continue
			}
			if slices.Contains(combinators(), k) {
				return nil, fmt.Errorf("%s cannot be flattened", k)
			}
			y, err := flatten(x)
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		parts, _ := v["allOf"].([]any)
		if _, ok := v["allOf"]; ok && parts == nil {
			return nil, fmt.Errorf("allOf is not a list")
		}
		for _, part := range parts {
			p, err := flatten(part)
			if err != nil {
				return nil, err
			}
			m, ok := p.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("an allOf member is not a schema object")
			}
			for k, x := range m {
				if _, set := out[k]; set {
					if k == "description" || k == "title" {
						continue // the outer annotation says it for this place
					}
					return nil, fmt.Errorf("allOf sets %s twice", k)
				}
				out[k] = x
			}
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			y, err := flatten(x)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	}
	return v, nil
}

// outputSchema is the tool's outputSchema (protocol §9.3, §12): the whole
// response object of protocol §3, self-contained, with tool fixed to its
// name and result its result schema or null, so error results conform
// too; the lists an MCP answer cuts hold at most K items, and the object
// has the tenth key "truncated". Of the response schema's conditions, the
// ones about other tools are dropped, and the one about this tool leaves
// the result to properties.result. K stays a placeholder (see Placeholders).
func (docs schemas) outputSchema(tool string) (map[string]any, error) {
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
			about, ok := conditionTool(c)
			if !ok {
				kept = append(kept, c)
				continue
			}
			if about != tool {
				continue
			}
			// Its result schema is the one properties.result holds below,
			// with the lists' limits stated once.
			then, _ := c.(map[string]any)["then"].(map[string]any)
			thenProps, _ := then["properties"].(map[string]any)
			if thenProps["result"] == nil {
				return nil, fmt.Errorf("the response schema's condition about %s says nothing of its result", tool)
			}
			delete(thenProps, "result")
			kept = append(kept, c)
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
	for _, pointer := range call.CutLists(tool) {
		if err := limitList(inlined, strings.TrimPrefix(pointer, "/result/")); err != nil {
			return nil, fmt.Errorf("%s's outputSchema: %s: %w", tool, pointer, err)
		}
	}
	props["tool"] = map[string]any{"type": "string", "const": tool}
	props["result"] = map[string]any{"anyOf": []any{inlined, map[string]any{"type": "null"}}}
	props["truncated"] = truncatedSchema(tool)
	required, _ := obj["required"].([]any)
	obj["required"] = append(slices.Clone(required), "truncated")
	return obj, nil
}

// truncatedSchema describes the "truncated" key of an MCP answer of tool:
// the pointers of the lists it may cut, each mapped to a full length
// greater than K.
func truncatedSchema(tool string) map[string]any {
	lists := call.CutLists(tool)
	if len(lists) == 0 {
		return map[string]any{
			"description":          "The lists this answer cut: this tool's answers cut none, so always {}.",
			"type":                 "object",
			"properties":           map[string]any{},
			"additionalProperties": false,
		}
	}
	alternatives := make([]string, len(lists))
	for i, l := range lists {
		alternatives[i] = strings.ReplaceAll(regexp.QuoteMeta(strings.TrimPrefix(l, "/result/")), regexp.QuoteMeta(call.AnyIndex), "[0-9]+")
	}
	whole := "The complete lists are in the committed run's result.json (resource metricproof://runs/{run_id}/result.json)."
	if tool == protocol.ToolInspect {
		whole = "analyze commits the complete lists in its run's result.json."
	}
	return map[string]any{
		"description": fmt.Sprintf("The lists this answer cut to their first %s items, in document order: "+
			"each RFC 6901 JSON Pointer mapped to the list's full length; {} when nothing was cut. %s", k, whole),
		"type":                 "object",
		"propertyNames":        map[string]any{"pattern": "^/result/(" + strings.Join(alternatives, "|") + ")$"},
		"additionalProperties": map[string]any{"type": "integer", "minimum": kPlusOne, "maximum": domain.MaxDataRows},
	}
}

// limitList states in the inlined result schema that the list at path
// (names of properties, call.AnyIndex for the items of an array) holds at
// most K items: maxItems, and every minItems lowered to K, in the list's
// own schema and in the conditions of the object holding it.
func limitList(schema any, path string) error {
	node, _ := schema.(map[string]any)
	steps := strings.Split(path, "/")
	for _, step := range steps[:len(steps)-1] {
		var next map[string]any
		if step == call.AnyIndex {
			next, _ = node["items"].(map[string]any)
		} else {
			props, _ := node["properties"].(map[string]any)
			next, _ = props[step].(map[string]any)
		}
		if next == nil {
			return fmt.Errorf("the result schema has no %s", step)
		}
		node = next
	}
	name := steps[len(steps)-1]
	props, _ := node["properties"].(map[string]any)
	list, _ := props[name].(map[string]any)
	if list == nil || list["type"] != "array" {
		return fmt.Errorf("the result schema has no list %s", name)
	}
	clampItems(list, true)
	clampConditions(node, name)
	desc, _ := list["description"].(string)
	list["description"] = strings.TrimSpace(desc + fmt.Sprintf(" Over MCP only the first %s; truncated holds the full length of a list cut.", k))
	return nil
}

// clampConditions lowers the item counts the conditions of the object
// schema obj (its allOf, anyOf and oneOf, and their then and else) ask of
// its property name to at most K. An "if" is left alone: it asks nothing,
// it chooses.
func clampConditions(obj map[string]any, name string) {
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := obj[kw].([]any)
		for _, c := range list {
			cond, _ := c.(map[string]any)
			if cond == nil {
				continue
			}
			for _, branch := range []map[string]any{cond, asSchema(cond["then"]), asSchema(cond["else"])} {
				if branch == nil {
					continue
				}
				props, _ := branch["properties"].(map[string]any)
				if s, ok := props[name].(map[string]any); ok {
					clampItems(s, false)
				}
				clampConditions(branch, name)
			}
		}
	}
}

func asSchema(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// clampItems lowers minItems and maxItems of the array schema s to at most
// K; with setMax, s gets a maxItems of K when it has none.
func clampItems(s map[string]any, setMax bool) {
	for _, kw := range []string{"minItems", "maxItems"} {
		if n, ok := count(s[kw]); ok {
			s[kw] = fmt.Sprintf(minOfK, n)
		} else if kw == "maxItems" && setMax {
			s[kw] = k
		}
	}
}

// count reads a schema's item count, a json.Number as the schemas decode.
func count(v any) (int, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	case int:
		return n, true
	}
	return 0, false
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
	case protocol.ToolInspect:
		return "inspect-result"
	case protocol.ToolAnalyze:
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
