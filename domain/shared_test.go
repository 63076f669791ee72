package domain_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/internal/testinputs"
)

// The top-level testdata/ holds inputs that more than one package runs;
// this file reads the ones the domain tests use. See testdata/README.md.

// readShared returns the bytes of ../testdata/name.
func readShared(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// assemble returns the bytes a shared input's pieces describe.
func assemble(t testing.TB, pieces []testinputs.Piece) []byte {
	t.Helper()
	b, err := testinputs.Assemble(pieces)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sourceVariants are the cases of testdata/sources.json.
func sourceVariants(t testing.TB) []testinputs.SourceVariant {
	t.Helper()
	cases, err := testinputs.SourceVariants(readShared(t, "sources.json"))
	if err != nil || len(cases) < 50 {
		t.Fatalf("testdata/sources.json: %v, %d cases", err, len(cases))
	}
	return cases
}

// maxSources are the maximum inputs of testdata/max-sources.json with the
// shipped contract.
func maxSources(t testing.TB) map[string][]byte {
	t.Helper()
	return sourcesAt(t, domain.MaxDataRows)
}

// sourcesAt are the first rows rows of the maximum inputs, with the
// shipped contract.
func sourcesAt(t testing.TB, rows int) map[string][]byte {
	t.Helper()
	m, err := testinputs.ParseMax(readShared(t, "max-sources.json"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := m.SourcesAt(rows)
	if err != nil {
		t.Fatal(err)
	}
	files[domain.DefinitionsFile] = []byte(domain.Contract)
	return files
}
