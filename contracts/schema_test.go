package contracts_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/contracts"
)

// wantSchemas are the schemas of protocol §12, sorted.
func wantSchemas() []string {
	return []string{"analyze-result", "attestation", "checksums", "inspect-result", "ledger-record",
		"ledger-report", "receipt", "request", "response", "statement", "verify-result", "version"}
}

// draft07Keywords are the keywords a schema may keep once its references
// are inlined: what an MCP host's ajv accepts in draft-07 strict mode.
func draft07Keywords() []string {
	return []string{"type", "properties", "required", "additionalProperties", "items", "enum", "const",
		"pattern", "minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength", "uniqueItems",
		"anyOf", "oneOf", "allOf", "not", "if", "then", "else", "title", "description"}
}

// Where a keyword's value holds subschemas: one, a map of them, or a list.
func singleSchemaKeywords() []string {
	return []string{"not", "if", "then", "else", "items", "additionalProperties", "contains", "propertyNames",
		"unevaluatedProperties", "unevaluatedItems", "additionalItems"}
}
func schemaMapKeywords() []string {
	return []string{"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"}
}
func schemaListKeywords() []string { return []string{"allOf", "anyOf", "oneOf", "prefixItems"} }

// conditionalKeywords hold schemas that narrow the schema beside them
// rather than describe a document of their own, so they need not be
// closed (and must not be: additionalProperties there would see only the
// few properties the condition names).
func conditionalKeywords() []string { return []string{"if", "then", "else", "not"} }

// schemaSet is every schema, parsed, by name.
type schemaSet map[string]map[string]any

// loadSchemas parses every embedded schema strictly: valid JSON, one
// document, no duplicate key.
func loadSchemas(t *testing.T) schemaSet {
	t.Helper()
	set := schemaSet{}
	for _, name := range contracts.SchemaNames() {
		data, ok := contracts.Schema(name)
		if !ok {
			t.Fatalf("%s is listed but not there", name)
		}
		if err := noDuplicateKeys(data); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s is not a JSON object: %v", name, err)
		}
		set[name] = doc
	}
	return set
}

// noDuplicateKeys fails on a JSON object that repeats a key, which
// encoding/json would silently let the last one win.
func noDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := k.(string)
				if seen[key] {
					return fmt.Errorf("duplicate key %q", key)
				}
				seen[key] = true
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := walk(); err != nil {
		return err
	}
	if _, err := dec.Token(); err == nil {
		return fmt.Errorf("a second document follows the first")
	}
	return nil
}

// validators holds every schema compiled twice: as written (draft
// 2020-12, references across files), and derived the way the MCP server
// derives its schemas (references inlined, draft-07), so that a document
// must satisfy both.
type validators struct {
	full, derived map[string]*jsonschema.Schema
}

func compileAll(t *testing.T, set schemaSet) validators {
	t.Helper()
	v := validators{full: map[string]*jsonschema.Schema{}, derived: map[string]*jsonschema.Schema{}}
	c := jsonschema.NewCompiler()
	for name, doc := range set {
		if err := c.AddResource(contracts.SchemaIDBase+name+".schema.json", toValidatorJSON(t, doc)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	d := jsonschema.NewCompiler()
	for name := range set {
		flat, err := set.inline(name)
		if err != nil {
			t.Fatalf("inlining %s: %v", name, err)
		}
		flat["$schema"] = "http://json-schema.org/draft-07/schema#"
		if err := d.AddResource("mem:///derived/"+name+".json", toValidatorJSON(t, flat)); err != nil {
			t.Fatalf("derived %s: %v", name, err)
		}
	}
	for name := range set {
		s, err := c.Compile(contracts.SchemaIDBase + name + ".schema.json")
		if err != nil {
			t.Fatalf("%s does not compile: %v", name, err)
		}
		v.full[name] = s
		if s, err = d.Compile("mem:///derived/" + name + ".json"); err != nil {
			t.Fatalf("%s, inlined, does not compile as draft-07: %v", name, err)
		}
		v.derived[name] = s
	}
	return v
}

// toValidatorJSON re-reads a value the way the validator wants it
// (numbers as json.Number).
func toValidatorJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// validate checks data against the named schema in both forms and
// returns the first failure.
func (v validators) validate(name string, data []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return v.validateValue(name, doc)
}

func (v validators) validateValue(name string, doc any) error {
	full, ok := v.full[name]
	if !ok {
		return fmt.Errorf("no schema %q", name)
	}
	if err := full.Validate(doc); err != nil {
		return fmt.Errorf("%s.schema.json: %w", name, err)
	}
	if err := v.derived[name].Validate(doc); err != nil {
		return fmt.Errorf("%s.schema.json inlined as draft-07: %w", name, err)
	}
	return nil
}

// inline returns the schema name with every $ref replaced by the schema
// it names, and without $schema, $id and $defs: what the MCP server's
// derivation makes of it. It fails on a $ref that is not the only key of
// its object, since such a ref could not simply be replaced.
func (s schemaSet) inline(name string) (map[string]any, error) {
	doc, ok := s[name]
	if !ok {
		return nil, fmt.Errorf("no schema %q", name)
	}
	flat, err := s.inlineNode(name, stripRoot(doc), 0)
	if err != nil {
		return nil, err
	}
	return flat.(map[string]any), nil
}

// stripRoot drops the keywords that only a document's root carries.
func stripRoot(doc map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range doc {
		switch k {
		case "$schema", "$id", "$defs":
		default:
			out[k] = v
		}
	}
	return out
}

func (s schemaSet) inlineNode(doc string, node any, depth int) (any, error) {
	if depth > 64 {
		return nil, fmt.Errorf("%s: references nest too deep (a cycle?)", doc)
	}
	m, ok := node.(map[string]any)
	if !ok {
		return node, nil // true, false
	}
	if ref, ok := m["$ref"].(string); ok {
		if len(m) != 1 {
			return nil, fmt.Errorf("%s: $ref %q has sibling keys", doc, ref)
		}
		target, targetDoc, err := s.resolve(doc, ref)
		if err != nil {
			return nil, err
		}
		return s.inlineNode(targetDoc, target, depth+1)
	}
	out := map[string]any{}
	for k, v := range m {
		var err error
		switch {
		case slices.Contains(singleSchemaKeywords(), k):
			out[k], err = s.inlineNode(doc, v, depth)
		case slices.Contains(schemaMapKeywords(), k):
			out[k], err = s.inlineEach(doc, k, v, depth)
		case slices.Contains(schemaListKeywords(), k):
			list, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("%s: %s is not a list", doc, k)
			}
			inlined := make([]any, len(list))
			for i, child := range list {
				if inlined[i], err = s.inlineNode(doc, child, depth); err != nil {
					break
				}
			}
			out[k] = inlined
		default:
			out[k] = v
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// inlineEach inlines every schema of the map keyword k.
func (s schemaSet) inlineEach(doc, k string, v any, depth int) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: %s is not an object", doc, k)
	}
	out := map[string]any{}
	for name, child := range m {
		c, err := s.inlineNode(doc, child, depth)
		if err != nil {
			return nil, err
		}
		out[name] = c
	}
	return out, nil
}

// resolve finds what ref names, read in the schema doc: "#/$defs/x" in
// doc itself, "other.schema.json" (another schema's root) or
// "other.schema.json#/$defs/x".
func (s schemaSet) resolve(doc, ref string) (any, string, error) {
	file, fragment, _ := strings.Cut(ref, "#")
	target := doc
	if file != "" {
		name, ok := strings.CutSuffix(file, ".schema.json")
		if !ok || strings.Contains(name, "/") {
			return nil, "", fmt.Errorf("%s: $ref %q is not a sibling schema's name", doc, ref)
		}
		target = name
	}
	root, ok := s[target]
	if !ok {
		return nil, "", fmt.Errorf("%s: $ref %q names no schema", doc, ref)
	}
	if fragment == "" {
		return stripRoot(root), target, nil
	}
	if !strings.HasPrefix(fragment, "/") {
		return nil, "", fmt.Errorf("%s: $ref %q is not a JSON pointer", doc, ref)
	}
	var node any = root
	for _, seg := range strings.Split(fragment[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		m, ok := node.(map[string]any)
		if !ok {
			return nil, "", fmt.Errorf("%s: $ref %q points into a non-object", doc, ref)
		}
		if node, ok = m[seg]; !ok {
			return nil, "", fmt.Errorf("%s: $ref %q points at nothing", doc, ref)
		}
	}
	return node, target, nil
}

// walkSchemas calls visit on every subschema of node (node included),
// with the path to it and whether it sits inside a conditional.
func walkSchemas(node any, path string, conditional bool, visit func(m map[string]any, path string, conditional bool)) {
	m, ok := node.(map[string]any)
	if !ok {
		return
	}
	visit(m, path, conditional)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		cond := conditional || slices.Contains(conditionalKeywords(), k)
		switch {
		case slices.Contains(singleSchemaKeywords(), k):
			walkSchemas(v, path+"/"+k, cond, visit)
		case slices.Contains(schemaMapKeywords(), k):
			sub, _ := v.(map[string]any)
			names := make([]string, 0, len(sub))
			for name := range sub {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				walkSchemas(sub[name], path+"/"+k+"/"+name, cond, visit)
			}
		case slices.Contains(schemaListKeywords(), k):
			list, _ := v.([]any)
			for i, child := range list {
				walkSchemas(child, fmt.Sprintf("%s/%s/%d", path, k, i), cond, visit)
			}
		}
	}
}

// openObjects lists the object schemas of doc that are not closed: a
// schema that describes an object (type object, or properties, required
// or additionalProperties) must say type object, list its properties and
// forbid any other. Inside a conditional, object keywords only narrow
// the closed schema beside it, and additionalProperties is refused there.
func openObjects(doc any) []string {
	var faults []string
	walkSchemas(doc, "#", false, func(m map[string]any, path string, conditional bool) {
		_, hasProps := m["properties"]
		_, hasRequired := m["required"]
		_, hasAdditional := m["additionalProperties"]
		typed := m["type"] == "object"
		if list, ok := m["type"].([]any); ok && slices.Contains(list, any("object")) {
			faults = append(faults, path+": type lists object among others")
		}
		if conditional {
			if hasAdditional {
				faults = append(faults, path+": additionalProperties inside a conditional")
			}
			return
		}
		if !typed && !hasProps && !hasRequired && !hasAdditional {
			return
		}
		if narrowsAllOf(m, path) {
			return
		}
		switch {
		case !typed:
			faults = append(faults, path+": object keywords without type object")
		case !hasProps:
			faults = append(faults, path+": an object schema without properties")
		case stringMap(m["additionalProperties"]):
			// A map of strings by design (version's settings: the keys
			// are Go's): open, and every value a string.
		case m["additionalProperties"] != false:
			faults = append(faults, path+": an object schema without additionalProperties false")
		}
		props, _ := m["properties"].(map[string]any)
		required, _ := m["required"].([]any)
		for _, r := range required {
			if _, ok := props[r.(string)]; !ok {
				faults = append(faults, fmt.Sprintf("%s: required %v is not among its properties", path, r))
			}
		}
	})
	return faults
}

// stringMap reports whether an additionalProperties value is exactly
// {"type": "string"}.
func stringMap(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 1 && m["type"] == "string"
}

// narrowsAllOf reports whether m, at path, is a member of an allOf that
// only requires more of the properties its siblings declare (the
// predicate of a statement is a receipt that names its signer): it adds no
// property, so it cannot open an object.
func narrowsAllOf(m map[string]any, path string) bool {
	if !allOfMember.MatchString(path) {
		return false
	}
	for k := range m {
		if k != "required" && k != "description" {
			return false
		}
	}
	return true
}

var allOfMember = regexp.MustCompile(`/allOf/[0-9]+$`)

// refFaults lists the $refs of doc that are not the only key of their
// object.
func refFaults(doc any) []string {
	var faults []string
	walkSchemas(doc, "#", false, func(m map[string]any, path string, _ bool) {
		if _, ok := m["$ref"]; ok && len(m) != 1 {
			faults = append(faults, path+": $ref has sibling keys")
		}
	})
	return faults
}

// TestSchemaReturnsEveryEmbeddedFileByName: the package's API gives
// exactly the files of schemas/, byte for byte, and nothing else.
func TestSchemaReturnsEveryEmbeddedFileByName(t *testing.T) {
	is := is.New(t)
	is.Equal(contracts.SchemaNames(), wantSchemas()) // the schemas of protocol §12, and version (protocol §1)
	entries, err := os.ReadDir("schemas")
	is.NoErr(err)
	is.Equal(len(entries), len(wantSchemas())) // no stray file in schemas/
	for _, name := range wantSchemas() {
		got, ok := contracts.Schema(name)
		is.True(ok)
		want, err := os.ReadFile("schemas/" + name + ".schema.json")
		is.NoErr(err)
		is.True(bytes.Equal(got, want)) // the embedded bytes are the file's
	}
	got, _ := contracts.Schema("response")
	got[0] = 'X'
	again, _ := contracts.Schema("response")
	is.Equal(again[0], byte('{')) // each call returns a fresh copy
	for _, name := range []string{"", "nope", "response.schema.json", "../contracts/schemas/response", "schemas/response", "metric-definitions", "."} {
		_, ok := contracts.Schema(name)
		is.True(!ok) // not a schema name
	}
}

// TestEverySchemaCompilesUnderDraft2020WithItsOwnID: each file declares
// draft 2020-12 and the $id of its name, compiles with an independent
// validator, references resolve, and the derived draft-07 form compiles
// too.
func TestEverySchemaCompilesUnderDraft2020WithItsOwnID(t *testing.T) {
	set := loadSchemas(t)
	for _, name := range wantSchemas() {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			doc := set[name]
			is.Equal(doc["$schema"], "https://json-schema.org/draft/2020-12/schema")
			is.Equal(doc["$id"], contracts.SchemaIDBase+name+".schema.json")
			title, _ := doc["title"].(string)
			description, _ := doc["description"].(string)
			is.True(title != "" && description != "") // every schema says what it is
		})
	}
	v := compileAll(t, set)
	is.New(t).Equal(len(v.full), len(wantSchemas()))
}

// TestEveryObjectSchemaIsClosed walks every schema: each object it
// describes lists its properties and allows no other.
func TestEveryObjectSchemaIsClosed(t *testing.T) {
	set := loadSchemas(t)
	for _, name := range wantSchemas() {
		t.Run(name, func(t *testing.T) {
			for _, f := range openObjects(set[name]) {
				t.Errorf("%s.schema.json%s", name, strings.TrimPrefix(f, "#"))
			}
			closed := 0
			walkSchemas(set[name], "#", false, func(m map[string]any, _ string, conditional bool) {
				if !conditional && m["additionalProperties"] == false {
					closed++
				}
			})
			is.New(t).True(closed > 0) // the walk saw the schema's objects
		})
	}
}

// The closure and reference checks themselves can fail.
func TestTheStructureChecksFindOpenObjectsAndRefsWithSiblings(t *testing.T) {
	open := []string{
		`{"type": "object", "properties": {"a": {"type": "string"}}}`,
		`{"type": "object", "additionalProperties": false}`,
		`{"properties": {"a": {}}, "additionalProperties": false}`,
		`{"type": "object", "properties": {"a": {}}, "additionalProperties": true}`,
		`{"type": "object", "properties": {"a": {}}, "additionalProperties": false, "required": ["b"]}`,
		`{"type": ["object", "null"], "properties": {}, "additionalProperties": false}`,
		`{"anyOf": [{"type": "object", "properties": {}}]}`,
		`{"$defs": {"x": {"type": "object"}}}`,
		`{"type": "array", "items": {"type": "object", "properties": {}}}`,
		`{"type": "object", "properties": {"a": {"type": "object"}}, "additionalProperties": false}`,
		`{"type": "object", "properties": {}, "additionalProperties": false, "allOf": [{"if": {"properties": {}}, "then": {"properties": {}, "additionalProperties": false}}]}`,
		`{"required": ["a"]}`,
		`{"anyOf": [{"$ref": "#/$defs/x"}, {"required": ["a"]}]}`,
		`{"allOf": [{"$ref": "#/$defs/x"}, {"required": ["a"], "properties": {"b": {}}}]}`,
		`{"type": "object", "properties": {}, "additionalProperties": {"type": "integer"}}`,
		`{"type": "object", "properties": {}, "additionalProperties": {"type": "string", "minLength": 1, "x": 1}}`,
	}
	for _, text := range open {
		var doc any
		is.New(t).NoErr(json.Unmarshal([]byte(text), &doc))
		if len(openObjects(doc)) == 0 {
			t.Errorf("%s passed as closed", text)
		}
	}
	closed := `{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false,
		"allOf": [{"if": {"properties": {"a": {"const": "x"}}}, "then": {"required": ["a"]}}]}`
	var doc any
	is.New(t).NoErr(json.Unmarshal([]byte(closed), &doc))
	is.New(t).Equal(openObjects(doc), []string(nil)) // a closed schema passes
	narrowed := `{"allOf": [{"$ref": "#/$defs/x"}, {"required": ["a"], "description": "d"}]}`
	is.New(t).NoErr(json.Unmarshal([]byte(narrowed), &doc))
	is.New(t).Equal(openObjects(doc), []string(nil)) // requiring more of a closed schema keeps it closed
	stringMap := `{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}`
	is.New(t).NoErr(json.Unmarshal([]byte(stringMap), &doc))
	is.New(t).Equal(openObjects(doc), []string(nil)) // a map of strings is declared, not open

	for _, text := range []string{
		`{"$ref": "#/$defs/x", "description": "d"}`,
		`{"properties": {"a": {"$ref": "a.schema.json", "type": "string"}}}`,
		`{"anyOf": [{"$ref": "#/$defs/x", "$defs": {}}]}`,
	} {
		var doc any
		is.New(t).NoErr(json.Unmarshal([]byte(text), &doc))
		if len(refFaults(doc)) == 0 {
			t.Errorf("%s passed the sole-$ref check", text)
		}
	}
}

// TestRefIsAlwaysTheOnlyKeyOfItsObject: so any reference can be replaced
// by the schema it names.
func TestRefIsAlwaysTheOnlyKeyOfItsObject(t *testing.T) {
	set := loadSchemas(t)
	refs := 0
	for _, name := range wantSchemas() {
		for _, f := range refFaults(set[name]) {
			t.Errorf("%s.schema.json%s", name, strings.TrimPrefix(f, "#"))
		}
		walkSchemas(set[name], "#", false, func(m map[string]any, _ string, _ bool) {
			if _, ok := m["$ref"]; ok {
				refs++
			}
		})
	}
	is.New(t).True(refs > 50) // the walk reaches the references
}

// TestInlinedSchemasUseOnlyDraft07Keywords: once every reference is
// replaced by what it names, only keywords an MCP host's draft-07
// validator knows remain, and no reference or identifier is left.
func TestInlinedSchemasUseOnlyDraft07Keywords(t *testing.T) {
	set := loadSchemas(t)
	allowed := draft07Keywords()
	for _, name := range wantSchemas() {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			flat, err := set.inline(name)
			is.NoErr(err)
			seen := 0
			walkSchemas(flat, "#", false, func(m map[string]any, path string, _ bool) {
				seen++
				for k := range m {
					if !slices.Contains(allowed, k) {
						t.Errorf("%s, inlined: %s uses %q", name, path, k)
					}
				}
			})
			is.True(seen > 1)
		})
	}
	// The keyword check can fail.
	bad := schemaSet{"x": {"type": "object", "properties": map[string]any{}, "additionalProperties": false, "$defs": map[string]any{}, "unevaluatedProperties": false}}
	flat, err := bad.inline("x")
	is.New(t).NoErr(err)
	_, kept := flat["unevaluatedProperties"]
	is.New(t).True(kept) // the inliner keeps what it does not know, for the check to see
}

// patternRule decides what a pattern may use so that RE2 (Go, the
// validator here) and ECMA-262 (ajv, the MCP hosts) read it alike:
// anchored at both ends, no escape but \. (no \d, \w, \s, \b, whose
// meaning differs), no "." wildcard (line terminators differ), no group
// modifiers or lookarounds, no {,n}.
func patternRule(p string) error {
	if !strings.HasPrefix(p, "^") || !strings.HasSuffix(p, "$") {
		return fmt.Errorf("not anchored at both ends")
	}
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\':
			if i+1 >= len(p) || p[i+1] != '.' {
				return fmt.Errorf("escape at %d other than \\.", i)
			}
			i++
		case inClass:
			if c == '[' {
				return fmt.Errorf("nested class at %d", i)
			}
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			if i+1 < len(p) && p[i+1] == ']' {
				return fmt.Errorf("empty class at %d", i)
			}
		case c == '.':
			return fmt.Errorf("wildcard . at %d", i)
		case c == '(' && i+1 < len(p) && p[i+1] == '?':
			return fmt.Errorf("group modifier at %d", i)
		case c == '{' && i+1 < len(p) && p[i+1] == ',':
			return fmt.Errorf("{,n} at %d", i)
		case c == '$' && i != len(p)-1, c == '^' && i != 0:
			return fmt.Errorf("inner anchor at %d", i)
		}
	}
	if inClass {
		return fmt.Errorf("unclosed class")
	}
	if _, err := regexp.Compile(p); err != nil {
		return err
	}
	return nil
}

// TestPatternsMeanTheSameInRE2AndECMA262 checks every pattern of every
// schema against the portable subset.
func TestPatternsMeanTheSameInRE2AndECMA262(t *testing.T) {
	set := loadSchemas(t)
	patterns := 0
	for _, name := range wantSchemas() {
		walkSchemas(set[name], "#", false, func(m map[string]any, path string, _ bool) {
			p, ok := m["pattern"].(string)
			if !ok {
				return
			}
			patterns++
			if err := patternRule(p); err != nil {
				t.Errorf("%s.schema.json%s: pattern %q: %v", name, strings.TrimPrefix(path, "#"), p, err)
			}
		})
	}
	is.New(t).True(patterns >= 10)
	for _, p := range []string{`[0-9]+`, `^\d+$`, `^a.b$`, `^(?=a)a$`, `^a{,3}$`, `^[a-z]`, `^[]a]$`, `^a$|^b$`, `^a\sb$`} {
		if patternRule(p) == nil {
			t.Errorf("pattern %q passed the portability rule", p)
		}
	}
}

// TestPatternsAcceptAndRefuseTheRightStrings pins what each shared
// string grammar means.
func TestPatternsAcceptAndRefuseTheRightStrings(t *testing.T) {
	set := loadSchemas(t)
	defs := func(schema, def string) map[string]any {
		return set[schema]["$defs"].(map[string]any)[def].(map[string]any)
	}
	rate := defs("analyze-result", "conversion")["properties"].(map[string]any)["rate"].(map[string]any)["anyOf"].([]any)[0].(map[string]any)
	signer := defs("receipt", "signer")["properties"].(map[string]any)
	envelope := set["attestation"]["properties"].(map[string]any)
	signature := defs("attestation", "signature")["properties"].(map[string]any)
	artifacts := defs("response", "run_artifacts")["properties"].(map[string]any)
	tests := []struct {
		name     string
		schema   map[string]any
		accepted []string
		refused  []string
	}{
		{"id", defs("request", "id"),
			[]string{"a", "T1", "demo-001", "A_b-C", "0", strings.Repeat("x", 64)},
			[]string{"", "-a", "_a", "a b", "a.b", "é", strings.Repeat("x", 65), "a\n", "a/b"}},
		{"digest", defs("request", "digest"),
			[]string{strings.Repeat("0", 64), "9595b299a48fd151a453e9c82b950c971af8e35b9fdc8953ed66c10fd33d151e"},
			[]string{strings.Repeat("A", 64), strings.Repeat("0", 63), strings.Repeat("0", 65), strings.Repeat("g", 64), strings.Repeat("0", 64) + "\n"}},
		{"money", defs("analyze-result", "money"),
			[]string{"0", "180", "-90", "12.5", "0.5", "-0.000000000001", "140", "123456789012345678901234567890.25"},
			[]string{"", "-0", "00", "01", "1.50", "1.", ".5", "+1", "1e3", "0.0", "1.0000000000001", " 1", "--1"}},
		{"rate", rate,
			[]string{"0.827272727273", "1.000000000000", "0.000000000000"},
			[]string{"0.82727272727", "0.8272727272730", "1.000000000001", "2.000000000000", ".827272727273", "0,827272727273"}},
		{"time", defs("receipt", "time"),
			[]string{"2026-12-01T09:27:03.271281466Z", "2026-12-01T09:27:03Z", "2026-01-31T23:59:59.5Z"},
			[]string{"2026-12-01T09:27:03.270Z", "2026-12-01T09:27:03+00:00", "2026-12-01 09:27:03Z", "2026-13-01T09:27:03Z",
				"2026-12-01T24:00:00Z", "2026-12-01T09:27:03.1234567891Z", "2026-12-01T09:27:03.Z", "2026-12-01t09:27:03z"}},
		{"public_key", signer["public_key"].(map[string]any),
			[]string{"MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE="},
			[]string{"MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuF=", "MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE",
				"MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZu-=", "MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=="}},
		{"payload", envelope["payload"].(map[string]any),
			[]string{"eyJhIjoxfQ==", "eyJhIjoxMX0=", "eyJhIjoxMTF9"},
			[]string{"eyJhIjoxfQ", "eyJhIjoxfR==", "eyJhIjoxMX1=", "eyJh Ijox", "eyJhIjoxfQ===", "eyJhIjox_Q=="}},
		{"sig", signature["sig"].(map[string]any),
			[]string{strings.Repeat("A", 85) + "g=="},
			[]string{strings.Repeat("A", 85) + "h==", strings.Repeat("A", 87) + "=", strings.Repeat("A", 84) + "g=="}},
		{"artifact", artifacts["result"].(map[string]any),
			[]string{"runs/demo/demo-001/result.json", "out/r1/result.json", ".hidden/r1/result.json", "a b/r1/result.json",
				"s3://evidence/runs/.attempt-0123456789abcdef01234567/result.json", "s3://evidence/.attempt-0123456789abcdef01234567/result.json",
				"s3://my.bucket-1/team/runs/.attempt-0123456789abcdef01234567/result.json"},
			[]string{"/tmp/w/runs/r1/result.json", "r1/result.json", "../runs/r1/result.json", "runs/../r1/result.json", "./runs/r1/result.json",
				"runs//r1/result.json", `runs\r1\result.json`, "runs/r1/result.jsonx", "runs/-r1/result.json",
				"s3://evidence/runs/r1/result.json", "s3://Evidence/runs/.attempt-0123456789abcdef01234567/result.json",
				"s3://ev/.attempt-0123456789abcdef01234567/result.json", "s3://evidence/runs/.attempt-0123/result.json",
				"s3://evidence//.attempt-0123456789abcdef01234567/result.json", "s3://evidence/runs/.attempt-0123456789ABCDEF01234567/result.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			p, ok := tt.schema["pattern"].(string)
			is.True(ok) // the schema has a pattern
			re := regexp.MustCompile(p)
			for _, s := range tt.accepted {
				if !re.MatchString(s) {
					t.Errorf("%q refused", s)
				}
			}
			for _, s := range tt.refused {
				if re.MatchString(s) {
					t.Errorf("%q accepted", s)
				}
			}
		})
	}
}

// TestRequestDefsAreTheToolArguments: the MCP server takes each tool's
// input schema from request.schema.json's $defs by these names.
func TestRequestDefsAreTheToolArguments(t *testing.T) {
	is := is.New(t)
	set := loadSchemas(t)
	defs := set["request"]["$defs"].(map[string]any)
	for _, name := range []string{"id", "digest"} {
		_, ok := defs[name]
		is.True(ok) // request.schema.json defines the shared grammar
	}
	want := map[string][]string{
		"inspect_inputs_arguments": {},
		"analyze_arguments":        {"expected_source_digest"},
		"verify_result_arguments":  {"run_id"},
	}
	for _, tool := range protocol.Tools() {
		def, ok := defs[tool+"_arguments"].(map[string]any)
		is.True(ok) // a $defs entry per tool
		is.Equal(def["type"], "object")
		is.Equal(def["additionalProperties"], false)
		props := def["properties"].(map[string]any)
		var keys []string
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		is.Equal(len(keys), len(want[tool+"_arguments"]))
		for i, k := range want[tool+"_arguments"] {
			is.Equal(keys[i], k)
		}
		required, _ := def["required"].([]any)
		is.Equal(len(required), len(want[tool+"_arguments"])) // every argument is required
	}
	tools := defs["tool"].(map[string]any)["enum"].([]any)
	var names []string
	for _, n := range tools {
		names = append(names, n.(string))
	}
	is.Equal(names, protocol.Tools()) // the tool enum is the app's three tools
}

// TestResponseRootListsTheNineKeysInWireOrder: the root is a plain
// closed object with the nine properties of protocol §3 at its top level, in
// the wire's order; per-tool correlation sits only in the root allOf.
func TestResponseRootListsTheNineKeysInWireOrder(t *testing.T) {
	is := is.New(t)
	data, _ := contracts.Schema("response")
	var root struct {
		Type                 string          `json:"type"`
		Properties           json.RawMessage `json:"properties"`
		Required             []string        `json:"required"`
		AdditionalProperties *bool           `json:"additionalProperties"`
	}
	is.NoErr(json.Unmarshal(data, &root))
	wire := []string{"protocol_version", "request_id", "ok", "status", "tool", "result", "error", "artifacts", "verification"}
	is.Equal(root.Type, "object")
	is.True(root.AdditionalProperties != nil && !*root.AdditionalProperties)
	is.Equal(root.Required, wire)
	dec := json.NewDecoder(bytes.NewReader(root.Properties))
	_, _ = dec.Token()
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		is.NoErr(err)
		keys = append(keys, k.(string))
		var skip json.RawMessage
		is.NoErr(dec.Decode(&skip))
	}
	is.Equal(keys, wire) // properties in the wire's key order
	set := loadSchemas(t)
	for k := range set["response"] {
		switch k {
		case "$schema", "$id", "title", "description", "type", "properties", "required", "additionalProperties", "allOf", "$defs":
		default:
			t.Errorf("response root has %q, which the derivation does not expect", k)
		}
	}
	for i, c := range set["response"]["allOf"].([]any) {
		for k := range c.(map[string]any) {
			if k != "if" && k != "then" && k != "else" {
				t.Errorf("response allOf/%d has %q: only if/then/else belong there", i, k)
			}
		}
	}
	codes := set["response"]["$defs"].(map[string]any)["code"].(map[string]any)["enum"].([]any)
	var got []protocol.Code
	for _, c := range codes {
		got = append(got, protocol.Code(c.(string)))
	}
	is.Equal(got, protocol.Codes()) // the code enum is the app's closed set, in its order
	is.Equal(len(got), 28)
	checks := set["verify-result"]["properties"].(map[string]any)["checks"].(map[string]any)["enum"].([]any)
	var signed []string
	for _, c := range checks[1].([]any) {
		signed = append(signed, c.(string))
	}
	is.Equal(signed, app.Checks()) // the signed run's checks are the app's, in order
}
