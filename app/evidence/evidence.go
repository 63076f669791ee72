// Package evidence is the format of a committed run's saved files
// (protocol §6.4): result.json, receipt.json, checksums.json and, in a
// signed run, attestation.json (package ports names them). Each is in the
// one saved layout: two-space indentation, keys in the struct's declared
// order (maps sorted), no HTML escaping, one trailing newline. The same
// value always gives the same bytes, which is what makes result.json
// reproducible. It makes and checks the bytes, the signature included;
// the use cases (package app) decide when.
package evidence

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/metricproof/metricproof/app/jsonout"
	"github.com/metricproof/metricproof/app/jsonvalue"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// RunFile is one file of a committed run.
type RunFile struct {
	RunID, Name string
	// Size is its length in bytes.
	Size int
}

// MaxSavedBytes is the read-back limit of each saved file.
const MaxSavedBytes = 4 << 20

// Encode encodes v in the saved layout.
func Encode(v any) ([]byte, error) {
	b, err := jsonout.Append(make([]byte, 0, 1024), v, true)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// EncodeResult writes result.json, whose size is about sizeHint.
func EncodeResult(r *domain.Result, sizeHint int) []byte {
	b, err := jsonout.Append(make([]byte, 0, sizeHint), r, true)
	if err != nil {
		panic(err) // a result holds strings, integers and lists only
	}
	return append(b, '\n')
}

// ResultSizeHint is a close upper bound of a result's JSON size, in the
// saved layout (indented) or compact, so that its buffer is allocated
// once: the contributions, subjects and keys are nearly all of it.
func ResultSizeHint(r *domain.Result, indented bool) int {
	perRow, perID := 48, 4 // the keys and punctuation around each
	if indented {
		perRow, perID = 90, 12 // and the indentation
	}
	n := 4096
	for i := range r.Revenue.Contributions {
		c := &r.Revenue.Contributions[i]
		n += perRow + len(c.TransactionID)
		if c.NetRevenue != nil {
			n += len(*c.NetRevenue)
		}
	}
	for _, list := range [][]string{r.CustomerJoin.DuplicateKeys, r.CustomerJoin.UnmatchedKeys} {
		for _, id := range list {
			n += perID + len(id)
		}
	}
	for _, b := range r.Release.Blockers {
		for _, id := range b.Subjects {
			n += perID + len(id)
		}
	}
	return n
}

// Receipt binds a run to its sources, engine and result.
type Receipt struct {
	ProtocolVersion string            `json:"protocol_version"`
	RunID           string            `json:"run_id"`
	DefinitionID    string            `json:"definition_id"`
	Sources         map[string]string `json:"sources"`
	SourceDigest    string            `json:"source_digest"`
	EngineSHA256    string            `json:"engine_sha256"`
	ResultSHA256    string            `json:"result_sha256"`
	CreatedAt       string            `json:"created_at"`
	Build           Build             `json:"build"`
	// Signer names the key that signed the run; absent when unsigned.
	Signer *Signer `json:"signer,omitempty"`
}

// Signer is the key of a signed run.
type Signer struct {
	// KeyID is the lowercase hex SHA256 of the public key's SPKI DER.
	KeyID string `json:"key_id"`
	// PublicKey is the SPKI DER of the public key, standard base64.
	PublicKey string `json:"public_key"`
}

// Build holds the engine's build facts; null where the build did not
// record one.
type Build struct {
	GoVersion     *string `json:"go_version"`
	ModuleVersion *string `json:"module_version"`
	VCSRevision   *string `json:"vcs_revision"`
	VCSModified   *bool   `json:"vcs_modified"`
}

// Checksums binds the receipt and result bytes.
type Checksums struct {
	Receipt string `json:"receipt.json"`
	Result  string `json:"result.json"`
}

// createdAtLayout writes the receipt's UTC time.
const createdAtLayout = time.RFC3339Nano

// CreatedAt is a receipt's created_at for a run made at now.
func CreatedAt(now time.Time) string { return now.UTC().Format(createdAtLayout) }

// BuildOf returns the receipt's build block of the engine id: its facts,
// null where the build did not record one. "tool-runner version" prints
// the same facts.
func BuildOf(id ports.EngineIdentity) Build {
	optional := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return Build{
		GoVersion:     optional(id.GoVersion),
		ModuleVersion: optional(id.ModuleVersion),
		VCSRevision:   optional(id.VCSRevision),
		VCSModified:   id.VCSModified,
	}
}

// DecodeShape decodes data into v when data is strict JSON of exactly v's
// shape: every key present, no other key, every value of its Go type.
//
// Fast path: a file analyze wrote is, byte for byte, the saved encoding of
// the value it decodes to; when re-encoding reproduces data exactly, data
// is that encoding, which is strict JSON of v's shape by construction.
// Otherwise the slow path parses data strictly, encodes the decoded value
// back and requires the two to be equal as JSON values, so a missing key, a
// null for a string, a stray or duplicate key all fail.
func DecodeShape(data []byte, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if dec.Decode(v) != nil {
		return false
	}
	if canonical, err := Encode(v); err == nil && bytes.Equal(canonical, data) {
		return true
	}
	got, err := jsonvalue.Parse(data)
	if err != nil {
		return false
	}
	again, err := json.Marshal(v)
	if err != nil {
		return false
	}
	want, err := jsonvalue.Parse(again)
	return err == nil && jsonvalue.Equal(want, got)
}

// ValidReceipt checks the receipt's values beyond their JSON types.
func ValidReceipt(r Receipt) bool {
	if len(r.Sources) != len(domain.SourceNames()) {
		return false
	}
	for _, name := range domain.SourceNames() {
		if !protocol.IsDigest(r.Sources[name]) {
			return false
		}
	}
	if r.Signer != nil && !protocol.IsDigest(r.Signer.KeyID) {
		return false
	}
	created, err := time.Parse(createdAtLayout, r.CreatedAt)
	utc := err == nil && created.UTC().Format(createdAtLayout) == r.CreatedAt
	return utc && protocol.IsDigest(r.SourceDigest) && protocol.IsDigest(r.EngineSHA256) && protocol.IsDigest(r.ResultSHA256)
}
