package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The served schemas committed in adapters/mcp are what the generator
// writes from contracts/schemas today: a schema changed without go
// generate ./adapters/mcp fails here. (adapters/mcp's tests hold what the
// file serves: the tools/list golden, flat input schemas, K in every
// output schema.)
func TestTheCommittedSchemasAreWhatGenerateWrites(t *testing.T) {
	committed, err := os.ReadFile(filepath.Join("..", "..", "..", "adapters", "mcp", "schemas.json"))
	if err != nil {
		t.Fatal(err)
	}
	generated, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(generated, committed) {
		t.Fatal("adapters/mcp/schemas.json is not what the generator writes: run go generate ./adapters/mcp and review the diff")
	}
}
