// Package attest signs and checks a run's evidence (protocol §10): a DSSE
// envelope around an in-toto Statement v1 whose subjects are files named
// with their SHA256 and whose predicate is a JSON document, signed with an
// Ed25519 key. Any DSSE verifier that knows the public key can check it
// without this program.
//
// It is pure: bytes and keys in, bytes or a fault out. It names no file of
// a run; the caller gives the subjects and says what a fault means.
package attest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/metricproof/metricproof/app/jsonvalue"
	"github.com/metricproof/metricproof/domain"
)

const (
	// payloadType is the DSSE payload type of an in-toto statement.
	payloadType = "application/vnd.in-toto+json"
	// statementType is the in-toto Statement v1 type.
	statementType = "https://in-toto.io/Statement/v1"
	// predicateType names metricproof's receipt as a predicate.
	predicateType = "https://github.com/metricproof/metricproof/receipt/v1"
)

// The faults [ParseKey] and [Check] report, in the order they are checked.
var (
	// ErrKeyEncoding: the public key is not standard padded base64.
	ErrKeyEncoding = errors.New("the public key is not standard padded base64")
	// ErrKeyID: the key ID is not the SHA256 of the key's SPKI DER.
	ErrKeyID = errors.New("the key ID is not the SHA256 of the public key")
	// ErrNotEd25519: the key is not an Ed25519 public key in SPKI DER.
	ErrNotEd25519 = errors.New("the public key is not an Ed25519 public key in SPKI DER")
	// ErrNotEnvelope: not a DSSE envelope with one signature over an
	// in-toto statement.
	ErrNotEnvelope = errors.New("not a DSSE envelope with one signature over an in-toto statement")
	// ErrOtherKeyID: the signature names a key other than the signer's.
	ErrOtherKeyID = errors.New("the signature names another key")
	// ErrSignature: the signature is not a valid one by the signer's key.
	ErrSignature = errors.New("the signature is not valid")
	// ErrNotStatement: the payload is not an in-toto Statement v1 with
	// metricproof's predicate type.
	ErrNotStatement = errors.New("the payload is not an in-toto Statement v1 of this predicate type")
	// ErrSubjects: the statement is not about exactly the subjects given.
	ErrSubjects = errors.New("the statement is not about exactly the subjects given")
	// ErrPredicate: the statement's predicate differs from the document
	// given.
	ErrPredicate = errors.New("the predicate differs")
)

// envelope is a DSSE envelope carrying exactly one signature.
type envelope struct {
	Payload     string      `json:"payload"`
	PayloadType string      `json:"payloadType"`
	Signatures  []signature `json:"signatures"`
}

// signature is one DSSE signature.
type signature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"`
}

// statement is an in-toto Statement v1.
type statement struct {
	Type          string          `json:"_type"`
	Subject       []subject       `json:"subject"`
	PredicateType string          `json:"predicateType"`
	Predicate     json.RawMessage `json:"predicate"`
}

// subject is one file of a statement, as the statement writes it.
type subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Subject is one file a statement is about: its name and the SHA256 of its
// bytes, lowercase hex.
type Subject struct {
	Name, SHA256 string
}

// pae is DSSE's pre-authentication encoding of a payload type and body:
// "DSSEv1" SP len(type) SP type SP len(body) SP body, lengths in bytes as
// ASCII decimal. It is what the signature signs.
func pae(payloadType string, body []byte) []byte {
	var b bytes.Buffer
	b.WriteString("DSSEv1 ")
	b.WriteString(strconv.Itoa(len(payloadType)))
	b.WriteByte(' ')
	b.WriteString(payloadType)
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteByte(' ')
	b.Write(body)
	return b.Bytes()
}

// spki returns the SPKI DER of an Ed25519 public key.
func spki(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("the public key does not encode: %w", err)
	}
	return der, nil
}

// Signer names a signing key as a receipt does: the SHA256 of its public
// key's SPKI DER as the key ID, and the DER in standard base64.
func Signer(key ed25519.PrivateKey) (keyID, publicKey string, err error) {
	der, err := spki(key.Public().(ed25519.PublicKey))
	if err != nil {
		return "", "", err
	}
	return domain.SHA256Hex(der), base64.StdEncoding.EncodeToString(der), nil
}

// Key is a signer's Ed25519 public key, as a receipt names it.
type Key struct {
	id  string
	der []byte
	pub ed25519.PublicKey
}

// ParseKey reads a signer's key ID and public key: standard padded base64
// of an Ed25519 SPKI DER whose SHA256 is the key ID. It reports
// ErrKeyEncoding, ErrKeyID or ErrNotEd25519, checked in that order.
func ParseKey(keyID, publicKey string) (Key, error) {
	der, ok := decodeBase64(publicKey)
	if !ok {
		return Key{}, ErrKeyEncoding
	}
	if domain.SHA256Hex(der) != keyID {
		return Key{}, ErrKeyID
	}
	parsed, err := x509.ParsePKIXPublicKey(der)
	pub, ok := parsed.(ed25519.PublicKey)
	if err != nil || !ok {
		return Key{}, ErrNotEd25519
	}
	return Key{id: keyID, der: der, pub: pub}, nil
}

// Is reports whether k is the public key pub, byte for byte in SPKI DER.
func (k Key) Is(pub ed25519.PublicKey) bool {
	der, err := spki(pub)
	return err == nil && bytes.Equal(k.der, der)
}

// Sign signs a statement about subjects whose predicate is the JSON
// document predicate, and returns the DSSE envelope as layout encodes it
// (the caller's file layout). The statement itself is compact JSON.
func Sign(key ed25519.PrivateKey, subjects []Subject, predicate []byte, layout func(any) ([]byte, error)) ([]byte, error) {
	st := statement{Type: statementType, PredicateType: predicateType, Predicate: json.RawMessage(predicate)}
	for _, s := range subjects {
		st.Subject = append(st.Subject, subject{Name: s.Name, Digest: map[string]string{"sha256": s.SHA256}})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(st); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	keyID, _, err := Signer(key)
	if err != nil {
		return nil, err
	}
	sig := ed25519.Sign(key, pae(payloadType, body))
	return layout(envelope{
		Payload:     base64.StdEncoding.EncodeToString(body),
		PayloadType: payloadType,
		Signatures:  []signature{{KeyID: keyID, Sig: base64.StdEncoding.EncodeToString(sig)}},
	})
}

// Check checks an attestation: a DSSE envelope with exactly its keys, the
// in-toto payload type and one signature, by k, valid over a statement
// whose subjects are exactly subjects, in order, and whose predicate equals
// predicate as a JSON value. The first fault is the answer: ErrNotEnvelope,
// ErrOtherKeyID, ErrSignature, ErrNotStatement, ErrSubjects, ErrPredicate.
func Check(attestation []byte, k Key, subjects []Subject, predicate []byte) error {
	env, body, err := open(attestation)
	if err != nil {
		return err
	}
	if env.Signatures[0].KeyID != k.id {
		return ErrOtherKeyID
	}
	sig, ok := decodeBase64(env.Signatures[0].Sig)
	if !ok || !ed25519.Verify(k.pub, pae(env.PayloadType, body), sig) {
		return ErrSignature
	}
	return binds(body, subjects, predicate)
}

// decodeBase64 decodes standard padded base64 written the one way an
// encoder writes it: no line breaks, no stray bits in the last character.
// Anything else is not what this engine or a DSSE signer writes.
func decodeBase64(s string) ([]byte, bool) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	return b, err == nil && base64.StdEncoding.EncodeToString(b) == s
}

// open parses an attestation strictly: exactly the DSSE keys, the in-toto
// payload type, one signature, and a payload in standard base64. It
// returns the envelope and the statement bytes.
func open(data []byte) (envelope, []byte, error) {
	v, err := jsonvalue.Parse(data)
	if err != nil || !hasExactly(v, "payload", "payloadType", "signatures") {
		return envelope{}, nil, ErrNotEnvelope
	}
	var env envelope
	if json.Unmarshal(data, &env) != nil || env.PayloadType != payloadType || len(env.Signatures) != 1 {
		return envelope{}, nil, ErrNotEnvelope
	}
	sigs, _ := v.Get("signatures")
	if !hasExactly(sigs.Items[0], "keyid", "sig") {
		return envelope{}, nil, ErrNotEnvelope
	}
	body, ok := decodeBase64(env.Payload)
	if !ok {
		return envelope{}, nil, ErrNotEnvelope
	}
	return env, body, nil
}

// binds checks the signed statement: an in-toto Statement v1 of
// metricproof's predicate type whose subjects are exactly subjects and
// whose predicate equals predicate as a JSON value.
func binds(body []byte, want []Subject, predicate []byte) error {
	v, err := jsonvalue.Parse(body)
	if err != nil || !hasExactly(v, "_type", "subject", "predicateType", "predicate") {
		return ErrNotStatement
	}
	var st statement
	if json.Unmarshal(body, &st) != nil || st.Type != statementType || st.PredicateType != predicateType {
		return ErrNotStatement
	}
	if len(st.Subject) != len(want) {
		return ErrSubjects
	}
	subjects, _ := v.Get("subject")
	for i, sub := range st.Subject {
		item := subjects.Items[i]
		digest, _ := item.Get("digest")
		if !hasExactly(item, "name", "digest") || !hasExactly(digest, "sha256") ||
			sub.Name != want[i].Name || sub.Digest["sha256"] != want[i].SHA256 {
			return ErrSubjects
		}
	}
	got, _ := v.Get("predicate")
	doc, err := jsonvalue.Parse(predicate)
	if err != nil || !jsonvalue.Equal(got, doc) {
		return ErrPredicate
	}
	return nil
}

// hasExactly reports whether v is an object with exactly the keys named.
func hasExactly(v jsonvalue.Value, keys ...string) bool {
	if v.Kind != jsonvalue.Object || len(v.Members) != len(keys) {
		return false
	}
	for _, k := range keys {
		if _, ok := v.Get(k); !ok {
			return false
		}
	}
	return true
}
