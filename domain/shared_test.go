package domain_test

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The top-level testdata/ holds inputs that more than one package runs;
// this file reads the ones the domain tests use. See testdata/README.md.

// piece is one part of a shared input: text, or hex bytes where the input
// is not UTF-8, repeated times times (once when 0).
type piece struct {
	Text  string `json:"text"`
	Hex   string `json:"hex"`
	Times int    `json:"times"`
}

func assemble(t testing.TB, pieces []piece) []byte {
	t.Helper()
	var b []byte
	for _, p := range pieces {
		part := []byte(p.Text)
		if p.Hex != "" {
			var err error
			if part, err = hex.DecodeString(p.Hex); err != nil {
				t.Fatal(err)
			}
		}
		for range max(p.Times, 1) {
			b = append(b, part...)
		}
	}
	return b
}

// readShared decodes ../testdata/name into v.
func readShared(t testing.TB, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("testdata/%s: %v", name, err)
	}
}

// sourceVariant is one case of testdata/sources.json: one source of the
// fixture replaced or removed, and the answer SPEC §4 gives.
type sourceVariant struct {
	Name   string  `json:"name"`
	File   string  `json:"file"`
	Input  []piece `json:"input"`
	Remove bool    `json:"remove"`
	Code   string  `json:"code"`
	Line   int     `json:"line"`
	Column int     `json:"column"`
	Field  string  `json:"field"`
}

func sourceVariants(t testing.TB) []sourceVariant {
	t.Helper()
	var file struct {
		Cases []sourceVariant `json:"cases"`
	}
	readShared(t, "sources.json", &file)
	if len(file.Cases) < 50 {
		t.Fatalf("only %d source variants", len(file.Cases))
	}
	return file.Cases
}
