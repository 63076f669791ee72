package ledger_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/app/ledger"
	"github.com/metricproof/metricproof/domain"
)

func rules() ledger.Rules {
	return ledger.Rules{Transports: []string{"stdio", "mcp", "http"}, Callers: []string{"http"}}
}

func ptr(s string) *string { return &s }

// record is a well-formed successful inspect_inputs record.
func record() ledger.Record {
	sum := strings.Repeat("a", 64)
	return ledger.Record{
		Time: "2026-12-01T07:30:00.5Z", Transport: "stdio", RequestID: ptr("r1"), Tool: ptr("inspect_inputs"),
		InputSHA256: ptr(sum), Status: "success", ResponseSHA256: sum, EngineSHA256: sum,
	}
}

// Three linked records make a chain the check accepts, whose head is the
// last line's SHA256; each link starts from the line before.
func TestLinkedRecordsMakeAChain(t *testing.T) {
	is := is.New(t)
	r := rules()
	var lines [][]byte
	var last []byte
	for i := 0; i < 3; i++ {
		rec := record()
		is.NoErr(r.Link(&rec, last))
		is.Equal(rec.Seq, int64(i+1))
		line, err := ledger.Encode(rec)
		is.NoErr(err)
		lines, last = append(lines, line), line
	}
	is.Equal(string(lines[0][:len(`{"seq":1,"prev":"0000`)]), `{"seq":1,"prev":"0000`) // the genesis prev
	chain := r.Chain()
	for _, line := range lines {
		_, err := chain.Add(line)
		is.NoErr(err)
	}
	is.Equal(chain.Records, int64(3))
	is.Equal(chain.Head, domain.SHA256Hex(lines[2]))

	// A line left out, or two swapped, breaks the chain at the line named.
	for name, order := range map[string][]int{"a gap": {0, 2}, "a swap": {1, 0}} {
		chain := r.Chain()
		var err error
		for _, i := range order {
			if _, err = chain.Add(lines[i]); err != nil {
				break
			}
		}
		if err == nil {
			t.Errorf("%s was accepted", name)
		}
	}
}

// Every line that is not exactly a record this engine writes is refused,
// with what is wrong.
func TestParseRefusesWhatTheEngineDoesNotWrite(t *testing.T) {
	good, err := ledger.Encode(func() ledger.Record { r := record(); r.Seq, r.Prev = 1, strings.Repeat("0", 64); return r }())
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(*ledger.Record)) []byte {
		r := record()
		r.Seq, r.Prev = 1, strings.Repeat("0", 64)
		f(&r)
		line, _ := ledger.Encode(r)
		return line
	}
	tests := []struct {
		name string
		line []byte
		want string
	}{
		{"no newline", bytes.TrimSuffix(good, []byte("\n")), "does not end in a newline"},
		{"an unknown key", bytes.Replace(good, []byte(`{"seq"`), []byte(`{"x":1,"seq"`), 1), "is not a record"},
		{"indented", bytes.Replace(good, []byte(`,"prev"`), []byte(`, "prev"`), 1), "as this engine writes one"},
		{"seq 0", edit(func(r *ledger.Record) { r.Seq = 0 }), "seq is not a positive integer"},
		{"a short prev", edit(func(r *ledger.Record) { r.Prev = "00" }), "prev is not a SHA256"},
		{"a local time", edit(func(r *ledger.Record) { r.Time = "2026-12-01T08:30:00+01:00" }), "time is not an RFC 3339 UTC time"},
		{"another transport", edit(func(r *ledger.Record) { r.Transport = "sse" }), "transport is not one of"},
		{"http without a principal key", edit(func(r *ledger.Record) { r.Transport = "http" }), "principal is present exactly"},
		{"stdio with a principal", edit(func(r *ledger.Record) { r.Principal = ledger.Anonymous() }), "principal is present exactly"},
		{"mcp with a principal", edit(func(r *ledger.Record) {
			r.Transport, r.Principal = "mcp", ledger.Named(ledger.Principal{Issuer: "https://id.example.com", Subject: "alice"})
		}), "principal is present exactly"},
		{"a principal without a subject", edit(func(r *ledger.Record) {
			r.Transport, r.Principal = "http", ledger.Named(ledger.Principal{Issuer: "https://id.example.com"})
		}), "principal does not name"},
		{"a principal without an issuer", edit(func(r *ledger.Record) {
			r.Transport, r.Principal = "http", ledger.Named(ledger.Principal{Subject: "alice"})
		}), "principal does not name"},
		{"a subject past OpenID's bound", edit(func(r *ledger.Record) {
			r.Transport, r.Principal = "http", ledger.Named(ledger.Principal{Issuer: "https://id.example.com", Subject: strings.Repeat("a", 256)})
		}), "principal does not name"},
		{"a principal with another key", bytes.Replace(edit(func(r *ledger.Record) {
			r.Transport, r.Principal = "http", ledger.Named(ledger.Principal{Issuer: "https://id.example.com", Subject: "alice"})
		}), []byte(`"subject":"alice"`), []byte(`"subject":"alice","email":"a@example.com"`), 1), "is not a record"},
		{"a principal before transport", bytes.Replace(edit(func(r *ledger.Record) {
			r.Transport, r.Principal = "http", ledger.Anonymous()
		}), []byte(`"transport":"http","principal":null`), []byte(`"principal":null,"transport":"http"`), 1), "as this engine writes one"},
		{"a principal escaped otherwise", bytes.Replace(edit(func(r *ledger.Record) {
			r.Transport, r.Principal = "http", ledger.Named(ledger.Principal{Issuer: "https://id.example.com", Subject: "a<b"})
		}), []byte(`a<b`), []byte(`a\u003cb`), 1), "as this engine writes one"},
		{"a bad request_id", edit(func(r *ledger.Record) { r.RequestID = ptr("-x") }), "request_id is not an ID"},
		{"another tool", edit(func(r *ledger.Record) { r.Tool = ptr("rm") }), "tool is not one of"},
		{"an upper-case digest", edit(func(r *ledger.Record) { r.EngineSHA256 = strings.Repeat("A", 64) }), "a digest is not"},
		{"success with a code", edit(func(r *ledger.Record) { r.Code = ptr("INVALID_JSON") }), "status and code disagree"},
		{"an unknown code", edit(func(r *ledger.Record) { r.Status, r.Code = "error", ptr("NOPE") }), "status and code disagree"},
		{"a code of the other status", edit(func(r *ledger.Record) { r.Status, r.Code = "error", ptr("CANCELLED") }), "status and code disagree"},
		{"an error without a code", edit(func(r *ledger.Record) { r.Status = "error" }), "status and code disagree"},
		{"a success without a tool", edit(func(r *ledger.Record) { r.Tool = nil }), "a success names no request_id or tool"},
		{"a run without its sum", edit(func(r *ledger.Record) { r.RunID = ptr("r1") }), "run_id and result_sha256 disagree"},
		{"a run of inspect", edit(func(r *ledger.Record) { r.RunID, r.ResultSHA256 = ptr("r1"), ptr(strings.Repeat("b", 64)) }), "only a successful analyze commits a run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rules().Parse(tt.line)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := rules().Parse(good); err != nil {
		t.Errorf("the good line was refused: %v", err)
	}
}

// A record over HTTP names its principal right after transport: the
// verified token's issuer and subject, or null without authorization; a
// record over stdio or MCP has no principal key at all (the shape of
// protocol §11). Each parses back to itself.
func TestARecordOverHTTPNamesItsPrincipalAfterTransport(t *testing.T) {
	alice := ledger.Principal{Issuer: "https://id.example.com/realms/team", Subject: "alice<&>\"\u2028"}
	tests := []struct {
		name      string
		transport string
		caller    ledger.Caller
		want      string // the line's bytes from transport to request_id
	}{
		{"stdio", "stdio", ledger.Caller{}, `"transport":"stdio","request_id"`},
		{"mcp", "mcp", ledger.Caller{}, `"transport":"mcp","request_id"`},
		{"http without authorization", "http", ledger.Anonymous(), `"transport":"http","principal":null,"request_id"`},
		{"http with a token", "http", ledger.Named(alice),
			`"transport":"http","principal":{"issuer":"https://id.example.com/realms/team","subject":"alice<&>\"\u2028"},"request_id"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r := record()
			r.Transport, r.Principal = tt.transport, tt.caller
			is.NoErr(rules().Link(&r, nil))
			line, err := ledger.Encode(r)
			is.NoErr(err)
			is.True(bytes.Contains(line, []byte(tt.want))) // the key where protocol §14 puts it
			back, err := rules().Parse(line)
			is.NoErr(err)
			is.Equal(back, r) // read back as written
		})
	}
}
