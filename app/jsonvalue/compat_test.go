package jsonvalue_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/app/jsonvalue"
)

// compatFile holds, for 6,929 inputs, the answer domain/strictjson (the
// hand-written parser this package replaced) gave, frozen before it was
// removed: seeds from the committed fuzz corpora, the tests' inputs, the
// hostile requests of testdata/requests.json, the contract and its
// variants, and 24 deterministic mutations of each. The protocol's
// messages carry these answers, so they may not change.
const compatFile = "testdata/compat.txt"

// TestCompatCorpus holds Parse to the answers frozen in compatFile: the
// same verdict, the same message, and for an accepted input the same tree.
func TestCompatCorpus(t *testing.T) {
	is := is.New(t)
	f, err := os.Open(compatFile)
	is.NoErr(err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	n, refused := 0, 0
	for sc.Scan() {
		quoted, want, ok := strings.Cut(sc.Text(), "\t")
		is.True(ok)
		in, err := strconv.Unquote(quoted)
		is.NoErr(err)
		if got := verdict([]byte(in)); got != want {
			t.Errorf("input %s: got %q, frozen %q", quoted, got, want)
		}
		if strings.HasPrefix(want, "error ") {
			refused++
		}
		n++
	}
	is.NoErr(sc.Err())
	is.True(n > 2000)         // a few thousand inputs
	is.True(refused > n/4)    // many refusals, of many kinds
	is.True(n-refused > n/10) // and many accepted documents
}

// verdict is the answer Parse gives: "error " and the message, or "ok " and
// a digest of the tree (kinds, keys in order, literal texts).
func verdict(data []byte) string {
	v, err := jsonvalue.Parse(data)
	if err != nil {
		return "error " + err.Error()
	}
	var b bytes.Buffer
	dump(&b, v)
	sum := sha256.Sum256(b.Bytes())
	return "ok " + hex.EncodeToString(sum[:12])
}

func dump(b *bytes.Buffer, v jsonvalue.Value) {
	b.WriteString(v.Kind.String())
	switch v.Kind {
	case jsonvalue.Bool:
		b.WriteString(strconv.FormatBool(v.Bool))
	case jsonvalue.Number, jsonvalue.String:
		b.WriteString(strconv.Quote(v.Text))
	case jsonvalue.Array:
		b.WriteString("[" + strconv.Itoa(len(v.Items)))
		for _, item := range v.Items {
			dump(b, item)
		}
		b.WriteString("]")
	case jsonvalue.Object:
		b.WriteString("{" + strconv.Itoa(len(v.Members)))
		for _, m := range v.Members {
			b.WriteString(strconv.Quote(m.Key) + ":")
			dump(b, m.Value)
		}
		b.WriteString("}")
	}
}
