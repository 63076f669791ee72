package domain_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/domain"
)

// The digest is checked against text written out by hand, not against the
// code's own JSON encoding.
func TestSourceDigestMatchesHandWrittenCanonicalText(t *testing.T) {
	is := is.New(t)
	files := fixtureFiles()
	h := domain.HashSources(files)
	hex256 := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	is.Equal(h[domain.TransactionsFile], hex256(fixtureTransactions))
	is.Equal(h[domain.DefinitionsFile], hex256(domain.Contract))
	canonical := `{"contracts/metric-definitions.json":"` + hex256(domain.Contract) +
		`","data/customers.csv":"` + hex256(fixtureCustomers) +
		`","data/groups.csv":"` + hex256(fixtureGroups) +
		`","data/transactions.csv":"` + hex256(fixtureTransactions) + "\"}\n"
	is.Equal(h.Digest(), hex256(canonical))
}

func TestDigestChangesWithAnyByte(t *testing.T) {
	is := is.New(t)
	files := fixtureFiles()
	before := domain.HashSources(files).Digest()
	files[domain.GroupsFile] = []byte(fixtureGroups + "\n") // one empty line: same records
	is.True(domain.HashSources(files).Digest() != before)
}
