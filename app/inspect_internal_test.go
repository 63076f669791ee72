package app

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/domain"
)

// parseSources parses the transactions beside the other sources, yet
// answers what domain.ParseSources and then checkDefinitions answer in
// the declared order (the definitions file is last), for every set of
// faulty sources: the same first fault, or the same records.
func TestParsingTheTransactionsBesideTheOthersKeepsTheSourceOrder(t *testing.T) {
	fixture := map[string][]byte{}
	for _, name := range domain.SourceNames() {
		b, err := os.ReadFile(filepath.Join("..", name))
		if err != nil {
			t.Fatal(err)
		}
		fixture[name] = b
	}
	names := domain.SourceNames()
	for set := range 1 << len(names) {
		files := map[string][]byte{}
		for i, name := range names {
			files[name] = fixture[name]
			if set&(1<<i) != 0 {
				files[name] = []byte("not the header\n")
			}
		}
		want, wantErr := domain.ParseSources(files)
		if wantErr == nil {
			wantErr = checkDefinitions(files[domain.DefinitionsFile])
			if wantErr != nil {
				want = domain.Inputs{}
			}
		}
		got, err := parseSources(files)
		is := is.New(t)
		is.Equal(err == nil, wantErr == nil) // faulty exactly when the domain says so
		if err != nil {
			is.Equal(err.Error(), wantErr.Error()) // the first fault in source order
		}
		is.True(reflect.DeepEqual(got, want)) // the same records
	}
}
