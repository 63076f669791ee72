// Package contracts holds the JSON Schemas of protocol §12: one draft 2020-12
// schema for every document metricproof reads or writes (the request, the
// response and each tool's result, the run files, the signed statement and
// its envelope, the ledger's records, the ledger check's report and
// tool-runner version's line), in schemas/<name>.schema.json.
//
// The files are the contract; this package only embeds them, so that code
// can serve them without a copy written twice: the MCP server derives its
// tools' inputSchema and outputSchema from them (protocol §9). go:embed cannot
// reach a parent folder, which is why the package sits beside the files.
// The schemas' own tests validate every document the program produces
// against them with an independent validator.
//
// The folder also holds metric-definitions.json, a source the program reads
// from the operator's workspace at run time; it is deliberately not
// embedded.
//
// Cross-file references are relative names ("receipt.schema.json#/$defs/time")
// resolved against [SchemaIDBase], and a $ref is always the only key of its
// object, so that any reference can be replaced by the schema it names.
package contracts

import (
	"embed"
	"io/fs"
	"slices"
	"strings"
)

//go:embed schemas/*.schema.json
var schemas embed.FS

// SchemaIDBase is the base of every schema's $id: a schema's $id is
// SchemaIDBase + name + ".schema.json".
const SchemaIDBase = "https://github.com/metricproof/metricproof/contracts/schemas/"

// suffix ends every schema's file name.
const suffix = ".schema.json"

// Schema returns the bytes of the schema name ("response" for
// schemas/response.schema.json), and whether there is one. The bytes are a
// fresh copy the caller may keep or change.
func Schema(name string) ([]byte, bool) {
	if name == "" || strings.ContainsAny(name, "/\\.") {
		return nil, false
	}
	data, err := schemas.ReadFile("schemas/" + name + suffix)
	if err != nil {
		return nil, false
	}
	return data, true
}

// SchemaNames returns the names of every schema, sorted.
func SchemaNames() []string {
	entries, err := fs.ReadDir(schemas, "schemas")
	if err != nil {
		return nil // the folder is embedded; it cannot be missing
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), suffix); ok && !e.IsDir() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
