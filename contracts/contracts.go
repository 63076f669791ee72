// Package contracts (draft; replaced by the schemas branch).
package contracts

import (
	"embed"
	"io/fs"
	"path"
	"slices"
	"strings"
)

//go:embed schemas/*.schema.json
var schemas embed.FS

// SchemaIDBase is the prefix of every schema's $id.
const SchemaIDBase = "https://github.com/metricproof/metricproof/contracts/schemas/"

// Schema returns a schema's bytes.
func Schema(name string) ([]byte, bool) {
	data, err := schemas.ReadFile(path.Join("schemas", name+".schema.json"))
	return data, err == nil
}

// SchemaNames returns the names of every schema, sorted.
func SchemaNames() []string {
	entries, _ := fs.ReadDir(schemas, "schemas")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".schema.json"))
	}
	slices.Sort(names)
	return names
}
