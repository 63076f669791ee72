package call

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/app/jsonout"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/internal/testinputs"
)

// marshal is encoding/json's bytes of v, without HTML escaping, indented
// by indent or compact, ending in one newline: what the encoder must write.
func marshal(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// savedLayout is the indentation of the saved files.
const savedLayout = "  "

// saved is v in the saved layout, as app writes its files.
func saved(t testing.TB, v any) []byte {
	t.Helper()
	b, err := jsonout.Append(nil, v, true)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// hostile holds strings with every escape encoding/json writes, and what
// it leaves alone (no HTML escaping).
func hostile() []string {
	var controls strings.Builder
	for c := range 0x20 {
		controls.WriteByte(byte(c))
	}
	return []string{
		"", "T1", `"quoted" \back\slash`, controls.String(), "\x7f", "a\xffb\xc3", "\xe2\x80\xa8 \xe2\x80\xa9",
		"<script>&amp;</script>", "héllo wörld ✓ 😀", "\u00a0\ufeff", strings.Repeat("x", 300), `"result":null`,
	}
}

func str(s string) *string { return &s }

// sampleResult is a result whose every string is s, with lists of n.
func sampleResult(s string, n int, nilLists bool) domain.Result {
	r := domain.Result{DefinitionID: s, SourceDigest: s, Synthetic: n%2 == 0,
		Conversion:   domain.Conversion{Successes: int64(n), Eligible: -int64(n) - 1, Method: s},
		Revenue:      domain.Revenue{Units: s, KnownSubtotal: s, KnownRows: n, TotalRows: 2 * n},
		CustomerJoin: domain.CustomerJoin{Status: s, JoinedOutput: s},
		Release:      domain.Release{Eligible: n%3 == 0, HumanApproval: s},
	}
	if n%2 == 1 {
		r.Conversion.Rate, r.Revenue.CompleteTotal = str(s), str(s+"t")
	}
	if nilLists {
		return r
	}
	r.Revenue.Contributions = []domain.Contribution{}
	r.CustomerJoin.DuplicateKeys, r.CustomerJoin.UnmatchedKeys = []string{}, []string{}
	r.Release.Blockers = []domain.Blocker{}
	for i := range n {
		c := domain.Contribution{TransactionID: s}
		if i%2 == 0 {
			c.NetRevenue = str(s)
		}
		r.Revenue.Contributions = append(r.Revenue.Contributions, c)
		r.CustomerJoin.DuplicateKeys = append(r.CustomerJoin.DuplicateKeys, s)
		b := domain.Blocker{Code: s, Message: s, Subjects: []string{}}
		if i%3 == 0 {
			b.Subjects = nil
		}
		for range i {
			b.Subjects = append(b.Subjects, s)
		}
		r.Release.Blockers = append(r.Release.Blockers, b)
	}
	return r
}

// sampleEnvelopes are responses of every shape around result.
func sampleEnvelopes(s string, result any) []envelope {
	id := str(s)
	return []envelope{
		{ProtocolVersion: protocol.Version, RequestID: id, OK: true, Status: "success", Tool: id, Result: result,
			Artifacts: app.Artifacts{Result: s, Receipt: s, Checksums: s, Attestation: s}, Verification: protocol.NotClaimed()},
		{ProtocolVersion: protocol.Version, Status: "error", Error: &wireError{Code: protocol.Code(s), Message: s, Retryable: true},
			Verification: protocol.NotClaimed()},
		{ProtocolVersion: s, RequestID: id, Status: s, Result: result, Artifacts: app.Artifacts{Receipt: s}, Verification: protocol.Verification{HumanReview: s}},
		// A tool call's: the tenth key, empty and not.
		{ProtocolVersion: protocol.Version, RequestID: id, OK: true, Status: "success", Tool: id, Result: result,
			Verification: protocol.NotClaimed(), Truncated: &truncation{}},
		{ProtocolVersion: protocol.Version, RequestID: id, Status: "error", Error: &wireError{Code: protocol.Code(s), Message: s},
			Verification: protocol.NotClaimed(), Truncated: &truncation{{pointerContributions, 10_000}, {pointerAnalyzeBlocker + "3" + pointerSubjects, 11}}},
	}
}

// checkSame holds the encoder to encoding/json's bytes, for result.json
// (saved layout) and for the compact response around every kind of result.
func checkSame(t *testing.T, s string, n int, nilLists bool) {
	t.Helper()
	r := sampleResult(s, n, nilLists)
	want, err := marshal(r, savedLayout)
	if err != nil {
		t.Fatal(err)
	}
	if got := saved(t, &r); !bytes.Equal(got, want) {
		t.Fatalf("result.json of %q, %d, %v:\n got %q\nwant %q", s, n, nilLists, got, want)
	}
	results := []any{nil, r,
		app.InspectResult{SourceDigest: s, Sources: map[string]string{s: s, "b": s, "a": s + "x"}, DefinitionID: s,
			RowCounts: app.RowCounts{Customers: n, Groups: n + 1, Transactions: -n}, ReleaseBlockers: r.Release.Blockers},
		app.InspectResult{},
		app.VerifyResult{RunID: s, Integrity: s, SourceDigest: s, ReleaseEligible: nilLists, HumanApproval: s, Checks: r.CustomerJoin.DuplicateKeys},
	}
	for _, result := range results {
		for _, env := range sampleEnvelopes(s, result) {
			want, err := marshal(env, "")
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeEnvelope(&env, nil)
			if err != nil || !bytes.Equal(append(got, '\n'), want) {
				t.Fatalf("response of %T %q (%v):\n got %q\nwant %q", result, s, err, got, want)
			}
			if r, ok := result.(domain.Result); ok { // analyze's result, encoded beforehand
				got, err := encodeEnvelope(&env, encodeResult(&r))
				if err != nil || !bytes.Equal(append(got, '\n'), want) {
					t.Fatalf("response around an encoded result %q:\n got %q\nwant %q", s, got, want)
				}
			}
		}
	}
}

// The encoder writes, byte for byte, what encoding/json writes: every
// escape, nil and empty lists, empty objects, both layouts. The golden
// result and every e2e test hold it on real results too.
func TestTheEncoderWritesWhatEncodingJSONWrites(t *testing.T) {
	for _, s := range hostile() {
		for _, n := range []int{0, 1, 2, 5} {
			for _, nilLists := range []bool{false, true} {
				checkSame(t, s, n, nilLists)
			}
		}
	}
}

// receipt.json, checksums.json and attestation.json are encoding/json's
// bytes in the saved layout (jsonout's, which app writes them with):
// every escape, absent and present signers, null build facts, nil and
// empty maps and lists.
func TestTheSavedFilesAreWhatEncodingJSONWrites(t *testing.T) {
	// The shape of app/attest's DSSE envelope, which app encodes in the
	// saved layout (its type is attest's own).
	type Signature struct {
		KeyID string `json:"keyid"`
		Sig   string `json:"sig"`
	}
	type Envelope struct {
		Payload     string      `json:"payload"`
		PayloadType string      `json:"payloadType"`
		Signatures  []Signature `json:"signatures"`
	}
	for _, s := range hostile() {
		yes := true
		docs := []any{
			evidence.Receipt{ProtocolVersion: s, RunID: s, DefinitionID: s, Sources: map[string]string{s: s, "a": s}, SourceDigest: s,
				EngineSHA256: s, ResultSHA256: s, CreatedAt: s, Build: evidence.Build{GoVersion: str(s), VCSModified: &yes}, Signer: &evidence.Signer{KeyID: s, PublicKey: s}},
			evidence.Receipt{Sources: map[string]string{}},
			evidence.Receipt{},
			evidence.Checksums{Receipt: s, Result: s},
			Envelope{Payload: s, PayloadType: s, Signatures: []Signature{{KeyID: s, Sig: s}}},
			Envelope{Signatures: []Signature{}},
			Envelope{},
		}
		for _, v := range docs {
			want, err := marshal(v, savedLayout)
			if err != nil {
				t.Fatal(err)
			}
			if got := saved(t, v); !bytes.Equal(got, want) {
				t.Fatalf("%T of %q:\n got %q\nwant %q", v, s, got, want)
			}
		}
	}
}

// Cutting the lists of a result leaves the result it was cut from whole:
// the answer's copy is resliced, never the saved result's lists.
func TestCuttingLeavesTheCompleteResultWhole(t *testing.T) {
	r := sampleResult("id", 5, false)
	before, err := marshal(r, "")
	if err != nil {
		t.Fatal(err)
	}
	cut, tr := cutLists(r, 2)
	after, _ := marshal(r, "")
	if !bytes.Equal(before, after) {
		t.Fatal("cutting changed the complete result")
	}
	got := cut.(domain.Result)
	if len(got.Revenue.Contributions) != 2 || len(got.Release.Blockers) != 5 || len(got.Release.Blockers[4].Subjects) != 2 {
		t.Fatalf("not cut to 2: %+v", got)
	}
	got.Revenue.Contributions = append(got.Revenue.Contributions, domain.Contribution{TransactionID: "new"})
	if r.Revenue.Contributions[2].TransactionID != "id" {
		t.Fatal("an append to the cut list wrote into the complete one")
	}
	want := `{"/result/revenue/contributions":5,"/result/customer_join/duplicate_keys":5,"/result/release/blockers/3/subjects":3,"/result/release/blockers/4/subjects":4}`
	if data, _ := tr.MarshalJSON(); string(data) != want {
		t.Fatalf("truncated %s, want %s", data, want)
	}
}

// A response JSON v2 refuses, one holding a string that is not UTF-8,
// goes to encoding/json, which writes \ufffd for each bad byte as the
// protocol always has; any other result type v2 writes.
func TestAResponseThatIsNotUTF8GoesToEncodingJSON(t *testing.T) {
	a := outcome{call: protocol.Call{ID: "x", IDHeard: true}, cut: whole, err: protocol.Errorf(protocol.InvalidRequest, "a\xffb")}.answer()
	if !bytes.Contains(a.JSON, []byte(`"message":"a\ufffdb"`)) {
		t.Fatalf("no fallback: %s", a.JSON)
	}
	r := sampleResult("a\xffb", 1, false)
	want, err := marshal(r, savedLayout)
	if err != nil {
		t.Fatal(err)
	}
	if got := saved(t, &r); !bytes.Equal(got, want) {
		t.Fatalf("result.json not encoding/json's:\n got %q\nwant %q", got, want)
	}
	env := sampleEnvelopes("x", struct{ A int }{1})[0]
	if got, err := encodeEnvelope(&env, nil); err != nil || !bytes.Contains(got, []byte(`"result":{"A":1}`)) {
		t.Fatalf("an unknown result type: %s", got)
	}
}

// FuzzEncoderMatchesEncodingJSON: any string, in every place a result or
// response holds one, is written as encoding/json writes it.
func FuzzEncoderMatchesEncodingJSON(f *testing.F) {
	for _, s := range hostile() {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, s string, n uint8) {
		checkSame(t, s, int(n%6), n%7 == 0)
	})
}

// BenchmarkEncode is the encode stage: result.json of the computed result
// in the saved layout, and the analyze response around it, at each
// benchmark size; MB/s over the bytes written.
func BenchmarkEncode(b *testing.B) {
	for _, rows := range testinputs.BenchmarkRows() {
		r := benchResult(b, rows)
		b.Run(fmt.Sprintf("result.json/rows=%d", rows), func(b *testing.B) {
			b.SetBytes(int64(len(saved(b, &r))))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = jsonout.Append(make([]byte, 0, evidence.ResultSizeHint(&r, true)), &r, true)
			}
		})
		b.Run(fmt.Sprintf("response/rows=%d", rows), func(b *testing.B) {
			o := outcome{call: protocol.Call{ID: "r1", IDHeard: true, Tool: protocol.ToolAnalyze, ToolHeard: true}, cut: whole, result: r}
			b.SetBytes(int64(len(o.answer().JSON)))
			b.ReportAllocs()
			for b.Loop() {
				o.answer()
			}
		})
	}
}

// benchResult is the computed result of the maximum inputs' first rows.
func benchResult(b testing.TB, rows int) domain.Result {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "max-sources.json"))
	if err != nil {
		b.Fatal(err)
	}
	m, err := testinputs.ParseMax(data)
	if err != nil {
		b.Fatal(err)
	}
	files, err := m.SourcesAt(rows)
	if err != nil {
		b.Fatal(err)
	}
	in, err := domain.ParseSources(files)
	if err != nil {
		b.Fatal(err)
	}
	r, err := domain.Compute(in, strings.Repeat("0", 64))
	if err != nil {
		b.Fatal(err)
	}
	return r
}
