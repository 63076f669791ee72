package app

import (
	"bytes"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/metricproof/metricproof/domain"
)

// jsonOut writes the program's JSON with JSON v2, byte for byte as
// encoding/json writes it without HTML escaping: compact (the response
// line), or indented by two spaces with no prefix (the saved layout).
type jsonOut struct {
	b      []byte
	indent bool
	// encodedResult, when not nil, is the compact JSON of the envelope's
	// result, written as it is.
	encodedResult []byte
}

// options are JSON v2's settings for encoding/json's bytes: map keys
// sorted, nil slices and maps as null, omitempty by Go's zero values,
// U+2028 and U+2029 escaped; and the saved layout's indentation. Invalid
// UTF-8 stays refused (v2's default): v2 would write U+FFFD as it is where
// encoding/json writes \ufffd, so such a document goes to encoding/json.
func (w *jsonOut) options() json.Options {
	opts := []json.Options{
		json.Deterministic(true),
		json.FormatNilSliceAsNull(true),
		json.FormatNilMapAsNull(true),
		jsonv1.OmitEmptyWithLegacySemantics(true),
		jsontext.EscapeForJS(true),
	}
	if w.indent {
		opts = append(opts, jsontext.WithIndent("  "))
	}
	return json.JoinOptions(opts...)
}

// value appends v's JSON, whose size is about hint. The encoder flushes
// its small buffer into w.b every few kilobytes; w.b is grown to the hint
// once. (Handed a bytes.Buffer, jsontext would write into it directly but
// keep a quarter of its length free, a quarter more memory.)
func (w *jsonOut) value(v any, hint int) error {
	w.b = slices.Grow(w.b, hint)
	enc := jsontext.NewEncoder((*appender)(&w.b), w.options())
	start := len(w.b)
	if err := json.MarshalEncode(enc, v); err != nil {
		w.b = w.b[:start]
		return err
	}
	w.b = bytes.TrimSuffix(w.b, []byte("\n")) // the encoder ends a top-level value with one
	return nil
}

// appender is an io.Writer that appends to a byte slice.
type appender []byte

func (a *appender) Write(p []byte) (int, error) {
	*a = append(*a, p...)
	return len(p), nil
}

// result writes a synthetic-v1 result, keys in result.json's order (its
// fields'). v2 refuses only a string that is not UTF-8, which the sources'
// rules never let through; encoding/json writes it then.
func (w *jsonOut) result(r *domain.Result) {
	start := len(w.b)
	if w.value(r, resultSizeHint(r, w.indent)) == nil {
		return
	}
	indent := ""
	if w.indent {
		indent = savedIndent
	}
	data, err := marshal(r, indent)
	if err != nil {
		panic(err) // a result holds strings, integers and lists only
	}
	w.b = append(w.b[:start], bytes.TrimSuffix(data, []byte("\n"))...)
}

// resultMember is how the envelope's result member starts when its value
// is null.
const resultMember = `"result":null`

// envelope writes the response object; it reports false when v2 cannot
// encode it, which encoding/json then tries. A result whose compact JSON
// is encodedResult (analyze encodes it while its commit waits on fsync) is
// copied in, not encoded again: the envelope is encoded with a null
// result, and encodedResult takes the null's place. That member is the
// sixth, after five that hold strings, null or a boolean and no object, so
// the first "result":null of the line is it.
func (w *jsonOut) envelope(env *envelope) bool {
	if _, ok := env.Result.(domain.Result); !ok || w.encodedResult == nil || w.indent {
		return w.value(env, answerSizeHint(env.Result)) == nil
	}
	e := *env
	e.Result = nil
	start := len(w.b)
	if w.value(&e, 2048) != nil {
		return false
	}
	line := w.b[start:]
	i := bytes.Index(line, []byte(resultMember))
	if i < 0 {
		return false
	}
	i += len(`"result":`)
	rest := string(line[i+len("null"):])
	w.b = append(append(w.b[:start+i], w.encodedResult...), rest...)
	return true
}

// encodeResult writes result.json: the saved layout and one newline.
func encodeResult(r *domain.Result, sizeHint int) []byte {
	w := jsonOut{b: make([]byte, 0, sizeHint), indent: true}
	w.result(r)
	return append(w.b, '\n')
}
