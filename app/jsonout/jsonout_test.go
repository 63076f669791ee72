package jsonout_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/app/jsonout"
)

// The program's JSON is encoding/json's, HTML escaping off, in both
// layouts; a string that is not UTF-8, which JSON v2 refuses, is written
// by encoding/json itself, \ufffd for each bad byte. (app/call's tests hold
// every document the program writes to encoding/json's bytes.)
func TestAppendWritesWhatEncodingJSONWrites(t *testing.T) {
	type doc struct {
		Name  string            `json:"name"`
		Tags  []string          `json:"tags"`
		Map   map[string]string `json:"map,omitempty"`
		Count *int              `json:"count"`
	}
	for _, v := range []doc{
		{Name: "<a & b>\u2028", Tags: []string{"x", ""}, Map: map[string]string{"b": "1", "a": "2"}},
		{Name: "a\xffb"},
		{},
	} {
		for _, indented := range []bool{false, true} {
			is := is.New(t)
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if indented {
				enc.SetIndent("", "  ")
			}
			is.NoErr(enc.Encode(v))
			got, err := jsonout.Append([]byte("prefix:"), v, indented)
			is.NoErr(err)
			is.Equal(string(got), "prefix:"+string(bytes.TrimSuffix(want.Bytes(), []byte("\n")))) // appended, no newline
			line, err := jsonout.Line(v)
			is.NoErr(err)
			if !indented {
				is.Equal(string(line), want.String()) // a line ends in one newline
			}
		}
	}
}

// A value neither encoder can write is an error, and dst is left as it
// was.
func TestAValueThatCannotBeEncodedIsAnError(t *testing.T) {
	is := is.New(t)
	got, err := jsonout.Append([]byte("kept"), map[string]any{"f": func() {}}, false)
	is.True(err != nil)
	is.Equal(string(got), "kept")
}
