package evidence_test

import (
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/domain"
)

// The saved layout is exact: two-space indentation, keys in declared
// order, one trailing newline.
func TestEncodeWritesTheSavedLayout(t *testing.T) {
	is := is.New(t)
	b, err := evidence.Encode(evidence.Checksums{Receipt: "a<b", Result: "c"})
	is.NoErr(err)
	is.Equal(string(b), "{\n  \"receipt.json\": \"a<b\",\n  \"result.json\": \"c\"\n}\n") // no HTML escaping
}

// A saved file is read only when it is strict JSON of exactly its shape;
// any other layout of the same value is still that value.
func TestDecodeShapeTakesExactlyItsShape(t *testing.T) {
	for _, tt := range []struct {
		name, data string
		ok         bool
	}{
		{"the saved layout", "{\n  \"receipt.json\": \"a\",\n  \"result.json\": \"b\"\n}\n", true},
		{"another layout", `{"result.json":"b","receipt.json":"a"}`, true},
		{"a key missing", `{"receipt.json":"a"}`, false},
		{"a key more", `{"receipt.json":"a","result.json":"b","x":1}`, false},
		{"a key twice", `{"receipt.json":"a","result.json":"b","result.json":"b"}`, false},
		{"null for a string", `{"receipt.json":null,"result.json":"b"}`, false},
		{"a number for a string", `{"receipt.json":1,"result.json":"b"}`, false},
		{"not JSON", `{"receipt.json":"a",`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var c evidence.Checksums
			is.Equal(evidence.DecodeShape([]byte(tt.data), &c), tt.ok)
		})
	}
}

// A receipt's values are held to their rules beyond their JSON types:
// digests are lowercase hex SHA256, every source is named, and the time
// is UTC in the one layout analyze writes.
func TestValidReceiptHoldsItsValuesToTheirRules(t *testing.T) {
	digest := strings.Repeat("a", 64)
	valid := func() evidence.Receipt {
		r := evidence.Receipt{Sources: map[string]string{}, SourceDigest: digest, EngineSHA256: digest, ResultSHA256: digest,
			CreatedAt: evidence.CreatedAt(time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("CET", 3600)))}
		for _, name := range domain.SourceNames() {
			r.Sources[name] = digest
		}
		return r
	}
	for _, tt := range []struct {
		name   string
		change func(*evidence.Receipt)
		ok     bool
	}{
		{"as analyze writes it", func(*evidence.Receipt) {}, true},
		{"a time with an offset", func(r *evidence.Receipt) { r.CreatedAt = "2026-01-02T04:04:05.000000006+01:00" }, false},
		{"a time in another layout", func(r *evidence.Receipt) { r.CreatedAt = "2026-01-02 03:04:05Z" }, false},
		{"a source missing", func(r *evidence.Receipt) { delete(r.Sources, domain.SourceNames()[0]) }, false},
		{"an uppercase digest", func(r *evidence.Receipt) { r.ResultSHA256 = strings.ToUpper(digest) }, false},
		{"a signer's key ID not a digest", func(r *evidence.Receipt) { r.Signer = &evidence.Signer{KeyID: "k"} }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r := valid()
			tt.change(&r)
			is.Equal(evidence.ValidReceipt(r), tt.ok)
		})
	}
}
