// Package ledger is the call ledger's hash chain (protocol §11): the record a
// line holds, its one encoding, how a record links to the line before it
// (seq and prev), and the check of a whole chain.
//
// It is pure: lines in, records or faults out. Reading and appending the
// file is the ports' job; the tools and codes a record may name are the
// protocol's, and the transports the caller's ([Rules]).
package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
)

// genesis is the prev of the first record, and the head of an empty
// ledger: 64 zeros.
const genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// Record is one line of the ledger, its fields in the line's key order.
type Record struct {
	Seq       int64  `json:"seq"`
	Prev      string `json:"prev"`
	Time      string `json:"time"`
	Transport string `json:"transport"`
	// Principal is present only in the records of a transport that knows
	// who calls (protocol §14: http), right after transport.
	Principal      Caller  `json:"principal,omitzero"`
	RequestID      *string `json:"request_id"`
	Tool           *string `json:"tool"`
	InputSHA256    *string `json:"input_sha256"`
	Status         string  `json:"status"`
	Code           *string `json:"code"`
	RunID          *string `json:"run_id"`
	ResultSHA256   *string `json:"result_sha256"`
	ResponseSHA256 string  `json:"response_sha256"`
	EngineSHA256   string  `json:"engine_sha256"`
}

// Transports are the names a record's transport may take: the transports
// calls arrive by (protocol §11.3, §14).
func Transports() []string { return []string{"stdio", "mcp", "http"} }

// Callers are the transports that know who calls (remote MCP over HTTP):
// their records, and only theirs, name a principal (protocol §14).
func Callers() []string { return []string{"http"} }

// Rules are what a record may name beyond the protocol's tools and codes:
// the transports calls arrive by.
type Rules struct {
	// Transports are the transports' names.
	Transports []string
	// Callers are the transports whose records name their principal.
	Callers []string
}

// The bounds of a principal's names. OpenID Connect bounds a subject at
// 255 ASCII characters; an issuer is an operator's URL. Together they keep
// a record far within what one ledger line may hold.
const (
	MaxSubjectBytes = 255
	MaxIssuerBytes  = 2048
)

// Principal is who made a call: the issuer and the subject of the token
// its transport verified.
type Principal struct {
	Issuer  string `json:"issuer"`
	Subject string `json:"subject"`
}

// Caller is a record's principal, as its transport knows it. The zero
// value is a transport that knows no callers (stdio, MCP over stdio): the
// record has no "principal" key, the shape of protocol §11. Named is a
// transport that does: "principal" is the Principal, or null for a call
// made without authorization.
type Caller struct {
	Named     bool
	Principal *Principal
}

// Anonymous is the caller of a transport that knows callers, for a call
// made without authorization.
func Anonymous() Caller { return Caller{Named: true} }

// Named is the caller of a transport that knows callers, for a call by p.
func Named(p Principal) Caller { return Caller{Named: true, Principal: &p} }

// IsZero reports a caller no record names (encoding/json's omitzero).
func (c Caller) IsZero() bool { return !c.Named }

// MarshalJSON encodes the principal, or null; with no HTML escaping, as
// the rest of the record.
func (c Caller) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c.Principal); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON decodes a record's principal: null, or an object of
// exactly its two names.
func (c *Caller) UnmarshalJSON(data []byte) error {
	c.Named, c.Principal = true, nil
	if string(data) == "null" {
		return nil
	}
	var p Principal
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	c.Principal = &p
	return nil
}

// Encode encodes a record as its line: compact JSON and a newline.
func Encode(r Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return buf.Bytes(), nil
}

// Parse accepts exactly a line this engine writes: the compact JSON of a
// Record, byte for byte its own encoding, ending in a newline, with every
// field of its shape and values the rules allow. Its error says what is
// wrong, in words that quote nothing of the line.
func (rules Rules) Parse(line []byte) (Record, error) {
	if !bytes.HasSuffix(line, []byte("\n")) {
		return Record{}, fmt.Errorf("the line does not end in a newline")
	}
	var r Record
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("the line is not a record")
	}
	again, err := Encode(r)
	if err != nil || !bytes.Equal(again, line) {
		return Record{}, fmt.Errorf("the line is not a record as this engine writes one")
	}
	if reason := rules.fault(r); reason != "" {
		return Record{}, fmt.Errorf("%s", reason)
	}
	return r, nil
}

// Link makes r the record after last, the ledger's last line (nil when it
// is empty): seq one more than last's, and prev the SHA256 of last. A last
// line that does not parse is an error, and r is left as it was.
func (rules Rules) Link(r *Record, last []byte) error {
	if last == nil {
		r.Seq, r.Prev = 1, genesis
		return nil
	}
	prev, err := rules.Parse(last)
	if err != nil {
		return err
	}
	r.Seq, r.Prev = prev.Seq+1, domain.SHA256Hex(last)
	return nil
}

// Chain checks a ledger's lines in order, one Add a line.
type Chain struct {
	rules Rules
	// Records is the count of lines checked, and Head the SHA256 of the
	// last (genesis before the first).
	Records int64
	Head    string
}

// Chain starts the check of a ledger.
func (rules Rules) Chain() *Chain { return &Chain{rules: rules, Head: genesis} }

// Add checks the next line: its shape, seq from 1 without a gap, and prev
// the SHA256 of the line before, and returns the line's record. Its error
// names the line's number.
func (c *Chain) Add(line []byte) (Record, error) {
	n := c.Records + 1
	r, err := c.rules.Parse(line)
	switch {
	case err != nil:
		return Record{}, fmt.Errorf("line %d is not a complete, well-formed record: %v", n, err)
	case r.Seq != n:
		return Record{}, fmt.Errorf("line %d carries seq %d; records are numbered from 1 without a gap", n, r.Seq)
	case r.Prev != c.Head:
		return Record{}, fmt.Errorf("line %d's prev is not the SHA256 of the line before it", n)
	}
	c.Records, c.Head = n, domain.SHA256Hex(line)
	return r, nil
}

// wellNamed reports a principal whose issuer and subject are given and
// within their bounds.
func wellNamed(p Principal) bool {
	return p.Issuer != "" && p.Subject != "" && len(p.Issuer) <= MaxIssuerBytes && len(p.Subject) <= MaxSubjectBytes
}

// fault names what is wrong with a record's values, or "".
func (rules Rules) fault(r Record) string {
	isDigest := protocol.IsDigest
	optionalDigest := func(p *string) bool { return p == nil || isDigest(*p) }
	t, err := time.Parse(time.RFC3339Nano, r.Time)
	switch {
	case r.Seq < 1:
		return "seq is not a positive integer"
	case !isDigest(r.Prev):
		return "prev is not a SHA256"
	case err != nil || t.UTC().Format(time.RFC3339Nano) != r.Time:
		return "time is not an RFC 3339 UTC time"
	case !slices.Contains(rules.Transports, r.Transport):
		return "transport is not one of stdio, mcp and http"
	case r.Principal.Named != slices.Contains(rules.Callers, r.Transport):
		return "principal is present exactly in a record over http"
	case r.Principal.Principal != nil && !wellNamed(*r.Principal.Principal):
		return "principal does not name an issuer and a subject within their bounds"
	case r.RequestID != nil && !domain.ValidID(*r.RequestID):
		return "request_id is not an ID"
	case r.Tool != nil && !slices.Contains(protocol.Tools(), *r.Tool):
		return "tool is not one of the three tools"
	case !optionalDigest(r.InputSHA256) || !optionalDigest(r.ResultSHA256) || !isDigest(r.ResponseSHA256) || !isDigest(r.EngineSHA256):
		return "a digest is not a SHA256"
	case r.Status == "success" && r.Code != nil,
		r.Status != "success" && (r.Code == nil || !slices.Contains(protocol.Codes(), protocol.Code(*r.Code)) || protocol.Code(*r.Code).Status() != r.Status):
		return "status and code disagree"
	case r.Status == "success" && (r.RequestID == nil || r.Tool == nil):
		return "a success names no request_id or tool"
	case (r.RunID == nil) != (r.ResultSHA256 == nil):
		return "run_id and result_sha256 disagree"
	case r.RunID != nil && (r.Status != "success" || *r.Tool != protocol.ToolAnalyze || *r.RunID != *r.RequestID):
		return "run_id is set, but only a successful analyze commits a run, named by its request_id"
	}
	return ""
}
