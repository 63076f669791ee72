package testinputs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/internal/testinputs"
)

// The maximum inputs match their pinned hashes, and a smaller size is the
// first rows of the same files, so sizes compare like with like.
func TestSmallerInputsAreThePrefixOfTheMaximum(t *testing.T) {
	is := is.New(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "max-sources.json"))
	is.NoErr(err)
	m, err := testinputs.ParseMax(data)
	is.NoErr(err)
	full, err := m.Sources()
	is.NoErr(err) // the pinned SHA256 and the 1 MiB limit hold
	for _, rows := range []int{0, 1, 1000, 3000} {
		small := m.Generate(rows)
		for name, b := range small {
			is.True(bytes.HasPrefix(full[name], b))        // a prefix of the maximum
			is.Equal(bytes.Count(b, []byte("\n")), rows+1) // header and rows
		}
	}
	m.SHA256["data/groups.csv"] = "0"
	_, err = m.Sources()
	is.True(err != nil) // a pin that does not match fails
}
