package app

// The one-pass encoder that app/encode.go held until JSON v2 replaced it,
// kept as the baseline of BenchmarkEncode: BenchmarkEncodeOnePass measures
// it in the same run, and TestTheOnePassBaselineWritesTheSameBytes keeps it
// honest.

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/metricproof/metricproof/internal/testinputs"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/metricproof/metricproof/domain"
)

// onePassOut appended JSON byte for byte as encoding/json writes it without
// HTML escaping: compact, or indented by two spaces with no prefix (the
// saved layout). It writes the documents that are large or on every
// answer (the response object, its results, result.json) in one pass with
// no reflection and little allocation; the small saved files stay with
// encoding/json. Tests hold the two to the same bytes.
type onePassOut struct {
	b      []byte
	indent bool
	depth  int
	// empty reports that the innermost container has no element yet.
	empty bool
	// encodedResult, when not nil, is the compact JSON of the envelope's
	// result, written as it is.
	encodedResult []byte
}

func (w *onePassOut) newline() {
	if !w.indent {
		return
	}
	w.b = append(w.b, '\n')
	for range w.depth {
		w.b = append(w.b, ' ', ' ')
	}
}

// open starts an object ('{') or an array ('[').
func (w *onePassOut) open(c byte) {
	w.b = append(w.b, c)
	w.depth++
	w.empty = true
}

// close ends the innermost container: "{}" or "[]" when it is empty.
func (w *onePassOut) close(c byte) {
	w.depth--
	if !w.empty {
		w.newline()
	}
	w.b = append(w.b, c)
	w.empty = false
}

// elem starts the next element of an array.
func (w *onePassOut) elem() {
	if !w.empty {
		w.b = append(w.b, ',')
	}
	w.newline()
	w.empty = false
}

// key starts the next member of an object.
func (w *onePassOut) key(k string) {
	w.elem()
	w.str(k)
	w.b = append(w.b, ':')
	if w.indent {
		w.b = append(w.b, ' ')
	}
}

func (w *onePassOut) null() { w.b = append(w.b, "null"...) }

func (w *onePassOut) boolean(v bool) { w.b = strconv.AppendBool(w.b, v) }

func (w *onePassOut) integer(v int64) { w.b = strconv.AppendInt(w.b, v, 10) }

func (w *onePassOut) optional(s *string) {
	if s == nil {
		w.null()
		return
	}
	w.str(*s)
}

// strs writes a list of strings; a nil list is null, as encoding/json has
// it.
func (w *onePassOut) strs(list []string) {
	if list == nil {
		w.null()
		return
	}
	w.open('[')
	for _, s := range list {
		w.elem()
		w.str(s)
	}
	w.close(']')
}

const hexDigits = "0123456789abcdef"

// plainString reports whether s holds only printable ASCII other than '"'
// and '\\', which JSON writes as they are; it looks at eight bytes at a
// time.
func plainString(s string) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		quote := x ^ ('"' * ones)
		slash := x ^ ('\\' * ones)
		// A byte is special when it is ≥ 0x80, < 0x20, '"' or '\\'.
		if (x|(x-0x20*ones)|(quote-ones)&^quote|(slash-ones)&^slash)&highs != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// str writes s as a JSON string with the escapes encoding/json uses: \" \\
// \b \f \n \r \t, \u00XX for other control bytes, \ufffd for invalid
// UTF-8, and \u2028 and \u2029; nothing else, and no HTML escape.
func (w *onePassOut) str(s string) {
	w.b = append(w.b, '"')
	if plainString(s) { // IDs, digests, money: nothing to escape
		w.b = append(w.b, s...)
		w.b = append(w.b, '"')
		return
	}
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			w.b = append(w.b, s[start:i]...)
			switch c {
			case '\\', '"':
				w.b = append(w.b, '\\', c)
			case '\b':
				w.b = append(w.b, '\\', 'b')
			case '\f':
				w.b = append(w.b, '\\', 'f')
			case '\n':
				w.b = append(w.b, '\\', 'n')
			case '\r':
				w.b = append(w.b, '\\', 'r')
			case '\t':
				w.b = append(w.b, '\\', 't')
			default:
				w.b = append(w.b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			w.b = append(w.b, s[start:i]...)
			w.b = append(w.b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			w.b = append(w.b, s[start:i]...)
			w.b = append(w.b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	w.b = append(w.b, s[start:]...)
	w.b = append(w.b, '"')
}

// result writes a synthetic-v1 result, keys in result.json's order.
func (w *onePassOut) result(r *domain.Result) {
	w.open('{')
	w.key("definition_id")
	w.str(r.DefinitionID)
	w.key("source_digest")
	w.str(r.SourceDigest)
	w.key("synthetic")
	w.boolean(r.Synthetic)

	c := &r.Conversion
	w.key("conversion")
	w.open('{')
	w.key("successes")
	w.integer(c.Successes)
	w.key("eligible")
	w.integer(c.Eligible)
	w.key("rate")
	w.optional(c.Rate)
	w.key("method")
	w.str(c.Method)
	w.close('}')

	rev := &r.Revenue
	w.key("revenue")
	w.open('{')
	w.key("units")
	w.str(rev.Units)
	w.key("known_subtotal")
	w.str(rev.KnownSubtotal)
	w.key("known_rows")
	w.integer(int64(rev.KnownRows))
	w.key("total_rows")
	w.integer(int64(rev.TotalRows))
	w.key("complete_total")
	w.optional(rev.CompleteTotal)
	w.key("contributions")
	if rev.Contributions == nil {
		w.null()
	} else {
		w.open('[')
		for i := range rev.Contributions {
			k := &rev.Contributions[i]
			w.elem()
			w.open('{')
			w.key("transaction_id")
			w.str(k.TransactionID)
			w.key("net_revenue")
			w.optional(k.NetRevenue)
			w.close('}')
		}
		w.close(']')
	}
	w.close('}')

	j := &r.CustomerJoin
	w.key("customer_join")
	w.open('{')
	w.key("status")
	w.str(j.Status)
	w.key("duplicate_keys")
	w.strs(j.DuplicateKeys)
	w.key("unmatched_keys")
	w.strs(j.UnmatchedKeys)
	w.key("joined_output")
	w.str(j.JoinedOutput)
	w.close('}')

	w.key("release")
	w.open('{')
	w.key("eligible")
	w.boolean(r.Release.Eligible)
	w.key("blockers")
	w.blockers(r.Release.Blockers)
	w.key("human_approval")
	w.str(r.Release.HumanApproval)
	w.close('}')
	w.close('}')
}

func (w *onePassOut) blockers(list []domain.Blocker) {
	if list == nil {
		w.null()
		return
	}
	w.open('[')
	for i := range list {
		b := &list[i]
		w.elem()
		w.open('{')
		w.key("code")
		w.str(b.Code)
		w.key("message")
		w.str(b.Message)
		w.key("subjects")
		w.strs(b.Subjects)
		w.close('}')
	}
	w.close(']')
}

func (w *onePassOut) inspectResult(r *InspectResult) {
	w.open('{')
	w.key("source_digest")
	w.str(r.SourceDigest)
	w.key("sources")
	if r.Sources == nil {
		w.null()
	} else {
		w.open('{')
		names := make([]string, 0, len(r.Sources))
		for name := range r.Sources {
			names = append(names, name)
		}
		slices.Sort(names) // encoding/json sorts map keys
		for _, name := range names {
			w.key(name)
			w.str(r.Sources[name])
		}
		w.close('}')
	}
	w.key("definition_id")
	w.str(r.DefinitionID)
	w.key("row_counts")
	w.open('{')
	w.key("customers")
	w.integer(int64(r.RowCounts.Customers))
	w.key("groups")
	w.integer(int64(r.RowCounts.Groups))
	w.key("transactions")
	w.integer(int64(r.RowCounts.Transactions))
	w.close('}')
	w.key("release_blockers")
	w.blockers(r.ReleaseBlockers)
	w.close('}')
}

func (w *onePassOut) verifyResult(r *VerifyResult) {
	w.open('{')
	w.key("run_id")
	w.str(r.RunID)
	w.key("integrity")
	w.str(r.Integrity)
	w.key("source_digest")
	w.str(r.SourceDigest)
	w.key("release_eligible")
	w.boolean(r.ReleaseEligible)
	w.key("human_approval")
	w.str(r.HumanApproval)
	w.key("checks")
	w.strs(r.Checks)
	w.close('}')
}

// envelope writes the response object; it reports false for a result of
// a type it does not know, which encoding/json then writes instead.
func (w *onePassOut) envelope(env *envelope) bool {
	w.open('{')
	w.key("protocol_version")
	w.str(env.ProtocolVersion)
	w.key("request_id")
	w.optional(env.RequestID)
	w.key("ok")
	w.boolean(env.OK)
	w.key("status")
	w.str(env.Status)
	w.key("tool")
	w.optional(env.Tool)
	w.key("result")
	switch r := env.Result.(type) {
	case nil:
		w.null()
	case domain.Result:
		if w.encodedResult != nil && !w.indent {
			w.b = append(w.b, w.encodedResult...)
			break
		}
		w.result(&r)
	case InspectResult:
		w.inspectResult(&r)
	case VerifyResult:
		w.verifyResult(&r)
	default:
		return false
	}
	w.key("error")
	if env.Error == nil {
		w.null()
	} else {
		w.open('{')
		w.key("code")
		w.str(string(env.Error.Code))
		w.key("message")
		w.str(env.Error.Message)
		w.key("retryable")
		w.boolean(env.Error.Retryable)
		w.close('}')
	}
	w.key("artifacts")
	w.open('{')
	for _, a := range [...]struct{ name, path string }{
		{"result", env.Artifacts.Result}, {"receipt", env.Artifacts.Receipt},
		{"checksums", env.Artifacts.Checksums}, {"attestation", env.Artifacts.Attestation},
	} {
		if a.path != "" { // omitempty
			w.key(a.name)
			w.str(a.path)
		}
	}
	w.close('}')
	v := &env.Verification
	w.key("verification")
	w.open('{')
	w.key("native_bi")
	w.str(v.NativeBI)
	w.key("host_cancellation")
	w.str(v.HostCancellation)
	w.key("os_sandbox")
	w.str(v.OSSandbox)
	w.key("real_model_quality")
	w.str(v.RealModelQuality)
	w.key("human_review")
	w.str(v.HumanReview)
	w.close('}')
	if env.Truncated != nil {
		w.key("truncated")
		w.truncation(*env.Truncated)
	}
	w.close('}')
	return true
}

// encodeResult writes result.json: the saved layout and one newline.
func onePassEncodeResult(r *domain.Result, sizeHint int) []byte {
	w := onePassOut{b: make([]byte, 0, sizeHint), indent: true}
	w.result(r)
	return append(w.b, '\n')
}

// truncation writes the "truncated" object.
func (w *onePassOut) truncation(t truncation) {
	w.open('{')
	for _, c := range t {
		w.key(c.pointer) // pointers hold no character JSON escapes
		w.integer(int64(c.length))
	}
	w.close('}')
}

// The baseline writes what the encoder writes: samples, and result.json
// and the analyze response at the maximum inputs of SPEC §8.
func TestTheOnePassBaselineWritesTheSameBytes(t *testing.T) {
	max := testinputs.BenchmarkRows()
	results := []domain.Result{sampleResult("id", 0, false), sampleResult("id", 3, false), benchResult(t, max[len(max)-1])}
	for _, r := range results {
		if got, want := onePassEncodeResult(&r, 0), encodeResult(&r, 0); !bytes.Equal(got, want) {
			t.Fatalf("result.json of %d rows differs", len(r.Revenue.Contributions))
		}
		for _, env := range sampleEnvelopes("id", r) {
			old, w := onePassOut{}, jsonOut{}
			if !old.envelope(&env) || !w.envelope(&env) || !bytes.Equal(old.b, w.b) {
				t.Fatalf("response of %d bytes differs", len(w.b))
			}
		}
	}
}

// BenchmarkEncodeOnePass is BenchmarkEncode with the one-pass baseline.
func BenchmarkEncodeOnePass(b *testing.B) {
	for _, rows := range testinputs.BenchmarkRows() {
		r := benchResult(b, rows)
		b.Run(fmt.Sprintf("result.json/rows=%d", rows), func(b *testing.B) {
			b.SetBytes(int64(len(onePassEncodeResult(&r, 0))))
			b.ReportAllocs()
			for b.Loop() {
				onePassEncodeResult(&r, resultSizeHint(&r, true))
			}
		})
		b.Run(fmt.Sprintf("response/rows=%d", rows), func(b *testing.B) {
			env := envelope{ProtocolVersion: ProtocolVersion, RequestID: str("r1"), OK: true, Status: "success",
				Tool: str(ToolAnalyze), Result: r, Verification: notClaimed()}
			b.ReportAllocs()
			for b.Loop() {
				w := onePassOut{b: make([]byte, 0, answerSizeHint(r))}
				w.envelope(&env)
			}
		})
	}
}
