package strictjson_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/domain/strictjson"
)

var update = flag.Bool("update", false, "rewrite testdata/compat.txt from this implementation")

// compatFile holds, for a few thousand inputs, the answer this parser gives:
// the frozen reference any replacement must give too, input for input.
const compatFile = "testdata/compat.txt"

// TestCompatCorpus holds Parse to the answers frozen in compatFile: the
// same verdict, the same message, and for an accepted input the same tree.
// With -update it writes the file from today's parser instead.
func TestCompatCorpus(t *testing.T) {
	is := is.New(t)
	if *update {
		inputs := compatInputs(t)
		var b strings.Builder
		for _, in := range inputs {
			b.WriteString(strconv.Quote(in) + "\t" + verdict([]byte(in)) + "\n")
		}
		is.NoErr(os.WriteFile(compatFile, []byte(b.String()), 0o644))
		t.Logf("%d inputs written", len(inputs))
	}
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
	v, err := strictjson.Parse(data)
	if err != nil {
		return "error " + err.Error()
	}
	var b bytes.Buffer
	dump(&b, v)
	sum := sha256.Sum256(b.Bytes())
	return "ok " + hex.EncodeToString(sum[:12])
}

func dump(b *bytes.Buffer, v strictjson.Value) {
	b.WriteString(v.Kind.String())
	switch v.Kind {
	case strictjson.Bool:
		b.WriteString(strconv.FormatBool(v.Bool))
	case strictjson.Number, strictjson.String:
		b.WriteString(strconv.Quote(v.Text))
	case strictjson.Array:
		b.WriteString("[" + strconv.Itoa(len(v.Items)))
		for _, item := range v.Items {
			dump(b, item)
		}
		b.WriteString("]")
	case strictjson.Object:
		b.WriteString("{" + strconv.Itoa(len(v.Members)))
		for _, m := range v.Members {
			b.WriteString(strconv.Quote(m.Key) + ":")
			dump(b, m.Value)
		}
		b.WriteString("}")
	}
}

// compatInputs gathers the seeds (the repository's fuzz corpora, the tests'
// inputs, the shared hostile requests, the contract) and deterministic
// mutations of each, deduplicated and sorted.
func compatInputs(t *testing.T) []string {
	t.Helper()
	seeds := []string{
		"", " \n\t\r", `{"a":NaN}`, `[Infinity]`, `[-Infinity]`, `{} {}`, `{}x`, `{"a":1,"a":2}`,
		`{"a":[{"b":{"c":1,"c":1}}]}`, `{"a":1,"\u0061":2}`,
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k3":3}`,
		"[\"\xff\"]", "[1]\xff", "[\"\xc0\xaf\"]", `["\ud800"]`, `["\udc00"]`, `["\ud800\u0041"]`,
		"[\"a\tb\"]", `{'a':1}`, `[1,]`, `[01]`, `[+1]`, `[1.]`, `["\x"]`, `{"a":"b`,
		strings.Repeat("[", 513) + strings.Repeat("]", 513), strings.Repeat("[", 512) + strings.Repeat("]", 512),
		strings.Repeat(`{"a":`, 513) + "1" + strings.Repeat("}", 513), strings.Repeat(`{"a":`, 512) + "1" + strings.Repeat("}", 512),
		strings.Repeat("[", 600) + "x", strings.Repeat("[", 513) + "\xff",
		`[tru]`, "\xEF\xBB\xBF{}", ` {"z":1.50,"a":[true,false,null,"\u00e9\ud83d\ude00"],"m":{}} `,
		`{"a":1,"b":2}`, `80`, `80.0`, `8e1`, `-0`, `1e999999999999`, `800e-1`, `0.08E+3`, `0.000e-7`,
		`0e999999999999999999999999`, `-1`, `0.1`, `1e-1`, `12.0000001`, `true`, `false`, `null`, `"1"`, `1`,
		`[1,2]`, `[2,1]`, `[1,2,3]`, `{"a":1,"b":1}`, `"é"`, `"\u00e9"`,
		`{"request_id":"i1","tool":"inspect_inputs","arguments":{}}`,
		`{"a":[1,-0.5e+3,"x\u00e9\"",true,false,null],"b":{"c":{}}}`,
		`["\ud83d\ude00"]`, `[NaN]`, `[1e400]`, `["a\udc00"]`, `{"\ud83d\ude00":1,"\ud83d\ude01":2}`,
		`"\u12"`, `"\u12`, `"\`, `"\u`, `"\ud800\`, `"\ud800\u`, `"\ud800\udc0`, `"\ud800\udc00"`, `"\ud800x"`,
		`"\uDBFF\uDFFF"`, `"\uDC00\uD800"`, `"\u0000"`, `"\/\b\f\n\r\t\\\""`, "\"\x00\"", "\"\x7f\"", "\"\xed\xa0\x80\"",
		"\"\xf4\x90\x80\x80\"", "\"\xe2\x82\"", "\"\xe2\x82\xac\"", `-`, `-01`, `1e`, `1e+`, `1E-0`, `1.5e`, `.5`, `-.5`, `0x10`,
		`1 2`, `[1 2]`, `{"a" 1}`, `{"a":1 "b":2}`, `{"a":}`, `{,}`, `{"a":1,}`, `[,1]`, `[`, `{`, `{"a"`, `{"a":`,
		`{"a":1`, `[1`, `[1,`, `nul`, `nulll`, `truex`, `[truex]`, `{"a":truex}`, `fals`, "\t\n\r 1 \t\n\r", "\f1", "1\f",
		"\u00a01", `{"a":{"b":{"c":[1,2,{"d":null}]}}}`, `["\u0061","a"]`, `{"\u0061":1,"b":2,"a":3}`,
		`{"a\u0000":1,"a":2}`, `{"":1,"":2}`, `{"":1}`, `[[],[[]],{}]`, `{"a":[],"b":{}}`,
		`123456789012345678901234567890`, `-0.0e-0`, `1E400`, `-1e-400`, `0.1000`, `100e-2`,
	}
	seeds = append(append(seeds, domain.Contract), contractVariants()...)
	seeds = append(seeds, corpusFiles(t)...)
	seeds = append(seeds, requestTexts(t)...)
	set := map[string]bool{}
	for _, s := range seeds {
		set[s] = true
	}
	r := rand.New(rand.NewPCG(16, 2026))
	for _, s := range seeds {
		if len(s) > 4096 {
			continue
		}
		for range 24 {
			set[mutate(r, s)] = true
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		if len(s) <= 8192 {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func contractVariants() []string {
	c := domain.Contract
	return []string{
		strings.Replace(c, `"synthetic": true`, `"synthetic": 1`, 1),
		strings.Replace(c, `"precision": 80`, `"precision": "80"`, 1),
		strings.Replace(c, `"precision": 80`, `"precision": 80.0`, 1),
		strings.Replace(c, `"precision": 80`, `"precision": 800E-1`, 1),
		strings.Replace(c, `"synthetic": true,`, `"synthetic": true, "synthetic": true,`, 1),
		strings.Replace(c, `"synthetic": true,`, `"synthetic": true, "synth\u0065tic": true,`, 1),
		strings.Replace(c, `80`, `NaN`, 1),
		c + "{}", "\xEF\xBB\xBF" + c,
	}
}

// corpusFiles reads every []byte or string argument of the repository's
// committed fuzz corpora.
func corpusFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{"testdata/fuzz/FuzzParse", "../../app/testdata/fuzz/FuzzRunner", "../../adapters/mcp/testdata/fuzz/FuzzSession", "../testdata/fuzz/FuzzParseSources"} {
		files, err := filepath.Glob(filepath.Join(dir, "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(data), "\n") {
				for _, prefix := range []string{"[]byte(", "string("} {
					if lit, ok := strings.CutPrefix(line, prefix); ok {
						if s, err := strconv.Unquote(strings.TrimSuffix(lit, ")")); err == nil {
							out = append(out, s)
						}
					}
				}
			}
		}
	}
	if len(out) < 50 {
		t.Fatalf("only %d corpus inputs found", len(out))
	}
	return out
}

// requestTexts assembles the hostile requests of testdata/requests.json.
func requestTexts(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../testdata/requests.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Input []struct{ Text, Hex string } `json:"input"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range file.Cases {
		var b []byte
		for _, p := range c.Input {
			h, err := hex.DecodeString(p.Hex)
			if err != nil {
				t.Fatal(err)
			}
			b = append(append(b, p.Text...), h...)
		}
		out = append(out, strings.TrimSuffix(string(b), "\n"))
	}
	return out
}

// mutate changes s at one to three places: a byte replaced by one of
// JSON's special bytes, inserted, deleted, a cut, or a slice repeated.
func mutate(r *rand.Rand, s string) string {
	specials := []string{"{", "}", "[", "]", `"`, ",", ":", `\`, "u", "0", "1", "9", "e", "E", ".", "-", "+", " ", "\n", "\t", "\r",
		"\xff", "\xc0", "\xed", "\x00", "\x1f", `\ud800`, `\udc00`, `\u0061`, "t", "n", "f", "a", "é", "😀", "NaN", `""`, "{}", "[]"}
	b := []byte(s)
	for range 1 + r.IntN(3) {
		pos := 0
		if len(b) > 0 {
			pos = r.IntN(len(b) + 1)
		}
		sp := specials[r.IntN(len(specials))]
		switch op := r.IntN(6); {
		case op == 0 && pos < len(b):
			b = append(b[:pos:pos], append([]byte(sp), b[pos+1:]...)...)
		case op == 1:
			b = append(b[:pos:pos], append([]byte(sp), b[pos:]...)...)
		case op == 2 && pos < len(b):
			b = append(b[:pos:pos], b[pos+1:]...)
		case op == 3:
			b = b[:pos]
		case op == 4 && pos < len(b):
			end := min(len(b), pos+1+r.IntN(12))
			b = append(b[:end:end], b[pos:]...)
		default:
			b = append(b[:pos:pos], append([]byte(" "), b[pos:]...)...)
		}
	}
	return string(b)
}
