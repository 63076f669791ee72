package mcp

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"
)

// textBytes is the length encoding/json (the SDK's encoder) gives a
// string's content, for every kind of byte it escapes and for plain text.
func TestTextBytesIsTheLengthEncodingJSONWrites(t *testing.T) {
	is := is.New(t)
	for _, s := range []string{
		"", "plain", `{"a": "b"}` + "\n", "\"\\\n\r\t", "\x00\x01\x1f\b\f", "<>&", "\u2028\u2029", "\u00e9\u20ac\U0001F600",
		"\x7f", "a\xe2\x80\xa8", "\xe2\x80\xaa",
	} {
		is.Equal(textBytes([]byte(s)), encodedLength(t, s)) // s
	}
}

// FuzzTextBytesIsTheLengthEncodingJSONWrites: for any valid UTF-8,
// textBytes is what encoding/json writes of it, less its two quotes.
func FuzzTextBytesIsTheLengthEncodingJSONWrites(f *testing.F) {
	for _, s := range []string{"", `{"a": "<b>"}`, "\u2028\x01\"", "\xe2\x80\xa9x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip("only valid UTF-8 is ever answered as text")
		}
		if got, want := textBytes([]byte(s)), encodedLength(t, s); got != want {
			t.Fatalf("textBytes(%q) = %d, encoding/json writes %d", s, got, want)
		}
	})
}

// encodedLength is the length of s as encoding/json writes it, quotes
// left out.
func encodedLength(t *testing.T, s string) int {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return len(b) - 2
}
