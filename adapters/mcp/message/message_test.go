package message

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
)

// tinyValues is a JSON array of n bytes or a little less, of zeros.
func tinyValues(n int) string {
	return "[" + strings.Repeat("0,", (n-2)/2) + "0]"
}

// toolCall is a tools/call line with the given id, arguments and extra
// params members.
func toolCall(id, arguments, extra string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"inspect_inputs","arguments":` + arguments + extra + `}}`
}

// protocol §9's strictness, line by line: what is not JSON is -32700 wherever
// the fault is; what is not an acceptable message is -32600, with the id
// when it is present once and valid; what is wrong inside params.arguments
// goes on to the tool. A valid id is a string or an integer within
// ±(2^53−1).
func TestEachLineGetsTheAnswerTheProtocolGivesIt(t *testing.T) {
	meta := func(v string) string { return `,"_meta":` + v }
	tests := []struct {
		name, line string
		code       int64  // 0: handed to the SDK
		id         string // the refusal's id
	}{
		{"the largest integer id", toolCall("9007199254740991", `{}`, ""), 0, ""},
		{"the smallest integer id", toolCall("-9007199254740991", `{}`, ""), 0, ""},
		{"2^53", toolCall("9007199254740992", `{}`, ""), -32600, "null"},
		{"-2^53", toolCall("-9007199254740992", `{}`, ""), -32600, "null"},
		{"2^53+1", toolCall("9007199254740993", `{}`, ""), -32600, "null"},
		{"2^63-1", toolCall("9223372036854775807", `{}`, ""), -32600, "null"},
		{"a fraction", toolCall("1.0", `{}`, ""), -32600, "null"},
		{"an exponent", toolCall("1e0", `{}`, ""), -32600, "null"},
		{"a boolean", toolCall("true", `{}`, ""), -32600, "null"},
		{"an object", toolCall(`{"a":1}`, `{}`, ""), -32600, "null"},
		{"null", toolCall("null", `{}`, ""), -32600, "null"},
		{"a string id", toolCall(`"a\u0062"`, `{}`, ""), 0, ""},
		{"NaN inside arguments", toolCall("1", `{"x":NaN}`, ""), -32700, "null"},
		{"a syntax error after a duplicate inside arguments", toolCall("1", `{"x":1,"x":2}`, "") + "x", -32700, "null"},
		{"two documents", toolCall("1", `{}`, "") + ` {}`, -32700, "null"},
		{"invalid UTF-8 inside arguments", toolCall("1", "{\"x\":\"\xff\"}", ""), -32700, "null"},
		{"a duplicate inside arguments", toolCall("1", `{"x":1,"x":2}`, ""), 0, ""},
		{"a lone surrogate inside arguments", toolCall("1", `{"x":"\ud800"}`, ""), 0, ""},
		{"a duplicate in _meta", toolCall("1", `{}`, meta(`{"a":1,"a":1}`)), -32600, "1"},
		{"a duplicate name written two ways", toolCall("1", `{}`, meta(`{"a":1,"\u0061":1}`)), -32600, "1"},
		{"a lone surrogate in _meta", toolCall("1", `{}`, meta(`{"a":"\udc00"}`)), -32600, "1"},
		{"arguments twice", toolCall("1", `{}`, `,"arguments":{}`), -32600, "1"},
		{"an escaped arguments key", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"inspect_inputs","argu\u006dents":{"x":1,"x":2}}}`, 0, ""},
		{"1 MiB outside arguments", toolCall("1", `{}`, meta(`{"x":"`+strings.Repeat("x", MaxOutsideBytes-200)+`"}`)), 0, ""},
		{"more than 1 MiB outside arguments", toolCall("1", `{}`, meta(`{"x":"`+strings.Repeat("x", MaxOutsideBytes)+`"}`)), -32600, "1"},
		{"more than 65536 values outside arguments", toolCall("1", `{}`, meta(`{"x":`+tinyValues(2*MaxOutsideValues)+`}`)), -32600, "1"},
		{"65536 values outside arguments", toolCall("1", `{}`, meta(`{"x":`+tinyValues(2*(MaxOutsideValues-40))+`}`)), 0, ""},
		{"16 MiB of tiny values inside arguments", toolCall("1", `{"x":`+tinyValues(MaxLineBytes-200)+`}`, ""), 0, ""},
		{"16 MiB of tiny values outside arguments", toolCall("1", `{}`, meta(`{"x":`+tinyValues(MaxLineBytes-200)+`}`)), -32600, "1"},
		{"1,000 levels deep, inside arguments", toolCall("1", `{"x":`+strings.Repeat("[", 997)+strings.Repeat("]", 997)+`}`, ""), 0, ""},
		{"1,001 levels deep, inside arguments", toolCall("1", `{"x":`+strings.Repeat("[", 998)+strings.Repeat("]", 998)+`}`, ""), -32600, "1"},
		{"1,000 levels deep, outside arguments", toolCall("1", `{}`, meta(`{"x":`+strings.Repeat("[", 997)+strings.Repeat("]", 997)+`}`)), 0, ""},
		{"1,001 levels deep, outside arguments", toolCall("1", `{}`, meta(`{"x":`+strings.Repeat("[", 998)+strings.Repeat("]", 998)+`}`)), -32600, "1"},
		{"brackets inside strings do not nest", toolCall("1", `{"x":"`+strings.Repeat("[", 2000)+`\"{"}`, ""), 0, ""},
		{"10,000 levels deep", toolCall("1", `{"x":`+strings.Repeat("[", 9997)+strings.Repeat("]", 9997)+`}`, ""), -32600, "1"},
		{"10,001 levels deep", toolCall("1", `{"x":`+strings.Repeat("[", 9998)+strings.Repeat("]", 9998)+`}`, ""), -32700, "null"},
		{"a batch", `[` + toolCall("1", `{}`, "") + `]`, -32600, "null"},
		{"not JSON-RPC 2.0", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, -32600, "7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			m, refusal := Check([]byte(tt.line))
			if tt.code == 0 {
				is.Equal(string(refusal), "")
				is.True(m.Call) // handed to the SDK
				return
			}
			var r struct {
				ID    json.RawMessage `json:"id"`
				Error struct{ Code int64 }
			}
			is.NoErr(json.Unmarshal(refusal, &r))
			is.Equal(r.Error.Code, tt.code)
			is.Equal(string(r.ID), tt.id)
		})
	}
}

// What a transport learns of a line that passes: a call's id, as the SDK
// will key it ("\u0061" is "a", -0 is 0), whether it takes a compute slot,
// and what it holds; which call a cancellation names, and the ones that
// name none, which are dropped.
func TestWhatTheStreamLearnsOfALine(t *testing.T) {
	is := is.New(t)
	m, refusal := Check([]byte(toolCall("9007199254740991", `{"x" : [1, 2]}`, `,"_meta":{"k":[1]}`)))
	is.Equal(string(refusal), "")
	is.True(m.Call && m.Slotted)
	is.Equal(m.ID, int64(9007199254740991))
	is.Equal(string(m.IDText), "9007199254740991")
	is.True(m.HeldBytes > callBytes+len(`{"x" : [1, 2]}`))

	m, _ = Check([]byte(`{"jsonrpc":"2.0","id":"\u0061","method":"resources/read","params":{"uri":"x"}}`))
	is.True(m.Call && m.Slotted)
	is.Equal(m.ID, "a")
	is.Equal(string(m.IDText), `"\u0061"`) // a refusal echoes the id as sent
	m, _ = Check([]byte(`{"jsonrpc":"2.0","id":-0,"method":"ping"}`))
	is.True(m.Call && !m.Slotted)
	is.Equal(m.ID, int64(0))

	m, _ = Check([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r1","reason":"` + strings.Repeat("x", 1000) + `","_meta":{"a":[1,2,3]}}}`))
	is.True(!m.Call && !m.Drop)
	is.Equal(m.Cancels, "r1")
	for _, id := range []string{"1.5", "7.0", "1e0", "null", "9007199254740992", `{"a":1}`} {
		m, refusal = Check([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `}}`))
		is.Equal(string(refusal), "")
		is.True(m.Drop) // names no call: the SDK would take 1.5 for 1
	}
	over := `{"x":"` + strings.Repeat("x", protocol.RequestLimitChars) + `"}`
	m, _ = Check([]byte(toolCall("4", over, "")))
	is.True(m.Call && m.ArgsSHA256 != "") // over the limit: the SDK gets {} in their place
	is.Equal(string(m.Body), toolCall("4", `{}`, ""))
	is.Equal(m.ArgsSHA256, domain.SHA256Hex([]byte(over)))
	is.True(m.HeldBytes < callBytes+4096)                                         // what the SDK holds of it
	within := `{"x":"` + strings.Repeat("é", protocol.RequestLimitChars-8) + `"}` // 65,536 characters, 131 KB
	m, _ = Check([]byte(toolCall("5", within, "")))
	is.Equal(m.ArgsSHA256, "")
	is.Equal(string(m.Body), toolCall("5", within, ""))

	m, _ = Check([]byte(`{"jsonrpc":"2.0","id":3,"result":{}}`))
	is.True(!m.Call && !m.Drop) // a client's response: handed over, not counted
	m, _ = Check([]byte(" \t "))
	is.True(m.Blank)
}

// A line of tiny JSON values, inside params.arguments or outside, is
// checked without building anything of it: the strict check allocates a
// small part of the line's size (the old check built a tree of ≈ 72 bytes
// a value, 2.1–2.4 GB for 16 MiB).
func TestALineOfTinyValuesIsCheckedWithoutATree(t *testing.T) {
	for _, tt := range []struct{ name, line string }{
		{"inside arguments", toolCall("1", `{"x":`+tinyValues(MaxLineBytes-200)+`}`, "")},
		{"outside arguments", toolCall("1", `{}`, `,"_meta":{"x":`+tinyValues(MaxLineBytes-200)+`}`)},
		{"within the bounds outside arguments", toolCall("1", `{}`, `,"_meta":{"x":`+tinyValues(2*(MaxOutsideValues-40))+`}`)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			data := []byte(tt.line)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			Check(data)
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes allocated for a line of %d", allocated, len(data))
			is.True(allocated < 2<<20) // under 2 MiB, whatever the line
		})
	}
}
