// Package jsonout writes the program's JSON: the response line, the saved
// files, the ledger's and the version's lines. Every byte is what
// encoding/json writes with HTML escaping off, compact or indented by two
// spaces; JSON v2 writes it (a third faster and with fewer allocations),
// with the options that give encoding/json's bytes, and encoding/json
// itself writes the rare value v2 refuses (a string that is not UTF-8,
// which v2 would write unescaped).
//
// It is pure: values in, bytes out.
package jsonout

import (
	"bytes"
	"encoding/json"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// options are JSON v2's settings for encoding/json's bytes: map keys
// sorted, nil slices and maps as null, omitempty by Go's zero values,
// U+2028 and U+2029 escaped. Invalid UTF-8 stays refused (v2's default).
func options(indented bool) jsonv2.Options {
	opts := []jsonv2.Options{
		jsonv2.Deterministic(true),
		jsonv2.FormatNilSliceAsNull(true),
		jsonv2.FormatNilMapAsNull(true),
		jsonv1.OmitEmptyWithLegacySemantics(true),
		jsontext.EscapeForJS(true),
	}
	if indented {
		opts = append(opts, jsontext.WithIndent("  "))
	}
	return jsonv2.JoinOptions(opts...)
}

// Append appends v's JSON to dst, compact or indented, without a trailing
// newline. A caller that knows the size grows dst first: the encoder
// flushes its small buffer into dst every few kilobytes. (Handed a
// bytes.Buffer, jsontext would write into it directly but keep a quarter
// of its length free: a quarter more memory.)
func Append(dst []byte, v any, indented bool) ([]byte, error) {
	start := len(dst)
	w := (*appender)(&dst)
	if err := jsonv2.MarshalEncode(jsontext.NewEncoder(w, options(indented)), v); err == nil {
		return bytes.TrimSuffix(dst, []byte("\n")), nil // the encoder ends a top-level value with one
	}
	dst = dst[:start]
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indented {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return dst, err
	}
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// Line is v's compact JSON and a newline: the program's one-line answers.
func Line(v any) ([]byte, error) {
	b, err := Append(nil, v, false)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// appender is an io.Writer that appends to a byte slice.
type appender []byte

func (a *appender) Write(p []byte) (int, error) {
	*a = append(*a, p...)
	return len(p), nil
}
