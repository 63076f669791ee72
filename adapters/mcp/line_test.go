package mcp

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
		{"10,000 levels deep", toolCall("1", `{"x":`+strings.Repeat("[", 9997)+strings.Repeat("]", 9997)+`}`, ""), 0, ""},
		{"10,001 levels deep", toolCall("1", `{"x":`+strings.Repeat("[", 9998)+strings.Repeat("]", 9998)+`}`, ""), -32700, "null"},
		{"a batch", `[` + toolCall("1", `{}`, "") + `]`, -32600, "null"},
		{"not JSON-RPC 2.0", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, -32600, "7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			m, refusal := decodeLine(line{data: []byte(tt.line)})
			if tt.code == 0 {
				is.Equal(string(refusal), "")
				is.True(m != nil)
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

// The SDK gets exactly the id sent, and a tools/call's arguments as they
// arrived; a notification reaches it with only what it reads.
func TestWhatTheSDKGetsOfALine(t *testing.T) {
	is := is.New(t)
	m, refusal := decodeLine(line{data: []byte(toolCall("9007199254740991", `{"x" : [1, 2]}`, `,"_meta":{"k":[1]}`))})
	is.Equal(string(refusal), "")
	req := m.msg.(*jsonrpc.Request)
	is.Equal(req.ID.Raw(), int64(9007199254740991))
	is.Equal(string(m.arguments), `{"x" : [1, 2]}`)
	is.Equal(string(req.Params), `{"name":"inspect_inputs","arguments":{},"_meta":{"k":[1]}}`) // the tool gets the arguments from the connection
	is.True(m.toolCall && m.hasMeta)
	is.Equal(m.tool, "inspect_inputs")

	m, _ = decodeLine(line{data: []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r1","reason":"` + strings.Repeat("x", 1000) + `","_meta":{"a":[1,2,3]}}}`)})
	req = m.msg.(*jsonrpc.Request)
	is.Equal(string(req.Params), `{"requestId":"r1"}`)
	is.Equal(m.cancels.Raw(), "r1")

	m, _ = decodeLine(line{data: []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.5}}`)})
	req = m.msg.(*jsonrpc.Request)
	is.Equal(string(req.Params), `{}`) // 1.5 names no call; the SDK would take it for 1
	is.True(!m.cancels.IsValid())

	m, _ = decodeLine(line{data: []byte(`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"arguments":` + tinyValues(4096) + `}}`)})
	req = m.msg.(*jsonrpc.Request)
	is.Equal(string(req.Params), `{"arguments":{}}`) // only a tool reads arguments
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
			decodeLine(line{data: data})
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes allocated for a line of %d", allocated, len(data))
			is.True(allocated < 2<<20) // under 2 MiB, whatever the line
		})
	}
}
