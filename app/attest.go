package app

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/metricproof/metricproof/app/jsonvalue"
	"github.com/metricproof/metricproof/domain"
)

// Signed evidence (SPEC §10): a DSSE envelope around an in-toto Statement
// v1 whose subjects are the receipt and result bytes and whose predicate is
// the receipt, signed with the operator's Ed25519 key. Any DSSE verifier
// that knows the public key can check a run without this program.
const (
	// PayloadType is the DSSE payload type of an in-toto statement.
	PayloadType = "application/vnd.in-toto+json"
	// StatementType is the in-toto Statement v1 type.
	StatementType = "https://in-toto.io/Statement/v1"
	// PredicateType names metricproof's receipt as a predicate.
	PredicateType = "https://github.com/metricproof/metricproof/receipt/v1"
)

// Envelope is a DSSE envelope carrying exactly one signature.
type Envelope struct {
	Payload     string      `json:"payload"`
	PayloadType string      `json:"payloadType"`
	Signatures  []Signature `json:"signatures"`
}

// Signature is one DSSE signature.
type Signature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"`
}

// Statement is an in-toto Statement v1 about a run.
type Statement struct {
	Type          string          `json:"_type"`
	Subject       []Subject       `json:"subject"`
	PredicateType string          `json:"predicateType"`
	Predicate     json.RawMessage `json:"predicate"`
}

// Subject is one file a statement is about.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// PAE is DSSE's pre-authentication encoding of a payload type and body:
// "DSSEv1" SP len(type) SP type SP len(body) SP body, lengths in bytes as
// ASCII decimal. It is what the signature signs.
func PAE(payloadType string, body []byte) []byte {
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
func spki(pub ed25519.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		panic("an Ed25519 public key always marshals") // recovered into INTERNAL_ERROR
	}
	return der
}

// signerOf names the signing key in a receipt: the SHA256 of its SPKI DER
// as the key ID, and the DER itself.
func signerOf(key ed25519.PrivateKey) *Signer {
	der := spki(key.Public().(ed25519.PublicKey))
	return &Signer{KeyID: domain.SHA256Hex(der), PublicKey: base64.StdEncoding.EncodeToString(der)}
}

// statementAbout encodes the statement about a run's receipt (its bytes
// are the predicate) and result, given their SHA256, compact.
func statementAbout(receipt []byte, receiptSum, resultSum string) ([]byte, error) {
	st := Statement{
		Type: StatementType,
		Subject: []Subject{
			{Name: ReceiptFile, Digest: map[string]string{"sha256": receiptSum}},
			{Name: ResultFile, Digest: map[string]string{"sha256": resultSum}},
		},
		PredicateType: PredicateType,
		Predicate:     json.RawMessage(receipt),
	}
	data, err := marshal(st, "")
	if err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(data, []byte("\n")), nil
}

// attest signs the run's receipt and result: the bytes of its
// attestation.json.
func attest(key ed25519.PrivateKey, receipt []byte, receiptSum, resultSum string) ([]byte, error) {
	statement, err := statementAbout(receipt, receiptSum, resultSum)
	if err != nil {
		return nil, err
	}
	sig := ed25519.Sign(key, PAE(PayloadType, statement))
	return encodeSaved(Envelope{
		Payload:     base64.StdEncoding.EncodeToString(statement),
		PayloadType: PayloadType,
		Signatures:  []Signature{{KeyID: signerOf(key).KeyID, Sig: base64.StdEncoding.EncodeToString(sig)}},
	})
}

// signatureValid: the receipt names a signer whose key ID is the hash of
// its key (the trusted key, when one is given), and the run's
// attestation is a DSSE envelope with one valid signature by that key over
// a statement whose subjects are exactly the receipt and result bytes and
// whose predicate is the receipt.
func (a *audit) signatureValid() error {
	signer := a.parsedReceipt.Signer
	switch {
	case signer == nil && a.attestation != nil:
		return found("run %s holds %s but its receipt names no signer: the receipt was changed after signing, or the file added; do not rely on this run", a.runID, AttestationFile)
	case signer == nil:
		return found("run %s is not signed, and --trusted-key accepts only runs signed by that key; verify it without --trusted-key, or make a signed run with analyze --signing-key", a.runID)
	case a.attestation == nil:
		return found("the receipt of run %s names a signer but the run holds no %s: its signature was removed, so nothing shows who made it; do not rely on this run", a.runID, AttestationFile)
	}
	der, ok := decodeBase64(signer.PublicKey)
	if !ok {
		return found("the signer's public_key in %s is not standard padded base64; do not rely on this run", ReceiptFile)
	}
	if domain.SHA256Hex(der) != signer.KeyID {
		return found("the signer's key_id in %s is not the SHA256 of its public_key: the receipt names a signer it does not hold; do not rely on this run", ReceiptFile)
	}
	parsed, err := x509.ParsePKIXPublicKey(der)
	pub, ok := parsed.(ed25519.PublicKey)
	if err != nil || !ok {
		return found("the signer's public_key in %s is not an Ed25519 public key in SPKI DER; do not rely on this run", ReceiptFile)
	}
	if a.s.trustedKey != nil && !bytes.Equal(der, spki(a.s.trustedKey)) {
		return found("run %s is signed by a key other than the trusted key, so the trusted key's holder did not make it; verify it with its signer's public key only if you trust that signer", a.runID)
	}
	env, statement, err := openEnvelope(a.attestation)
	if err != nil {
		return err
	}
	if env.Signatures[0].KeyID != signer.KeyID {
		return found("the signature in %s names a key other than the receipt's signer; do not rely on this run", AttestationFile)
	}
	sig, ok := decodeBase64(env.Signatures[0].Sig)
	if !ok || !ed25519.Verify(pub, PAE(env.PayloadType, statement), sig) {
		return found("the signature in %s is not a valid signature by the receipt's signer: the attestation was changed after signing, or signed by another key; do not rely on this run", AttestationFile)
	}
	return a.statementBinds(statement)
}

// decodeBase64 decodes standard padded base64 written the one way an
// encoder writes it: no line breaks, no stray bits in the last character.
// Anything else is not what this engine or a DSSE signer writes.
func decodeBase64(s string) ([]byte, bool) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	return b, err == nil && base64.StdEncoding.EncodeToString(b) == s
}

// openEnvelope parses an attestation strictly: exactly the DSSE keys, the
// in-toto payload type, one signature, and a payload in standard base64.
// It returns the envelope and the statement bytes.
func openEnvelope(data []byte) (Envelope, []byte, error) {
	bad := found("%s is not a DSSE envelope with one signature over an in-toto statement; do not rely on this run", AttestationFile)
	v, err := jsonvalue.Parse(data)
	if err != nil || !hasExactly(v, "payload", "payloadType", "signatures") {
		return Envelope{}, nil, bad
	}
	var env Envelope
	if json.Unmarshal(data, &env) != nil || env.PayloadType != PayloadType || len(env.Signatures) != 1 {
		return Envelope{}, nil, bad
	}
	sigs, _ := v.Get("signatures")
	if !hasExactly(sigs.Items[0], "keyid", "sig") {
		return Envelope{}, nil, bad
	}
	statement, ok := decodeBase64(env.Payload)
	if !ok {
		return Envelope{}, nil, bad
	}
	return env, statement, nil
}

// statementBinds checks the signed statement: an in-toto Statement v1
// whose subjects are exactly the SHA256 of this run's receipt and result
// bytes, and whose predicate equals the receipt as a JSON value.
func (a *audit) statementBinds(statement []byte) error {
	bad := found("the statement in %s is not an in-toto Statement v1 about this run's receipt; do not rely on this run", AttestationFile)
	v, err := jsonvalue.Parse(statement)
	if err != nil || !hasExactly(v, "_type", "subject", "predicateType", "predicate") {
		return bad
	}
	var st Statement
	if json.Unmarshal(statement, &st) != nil || st.Type != StatementType || st.PredicateType != PredicateType {
		return bad
	}
	subjects, _ := v.Get("subject")
	want := []Subject{
		{Name: ReceiptFile, Digest: map[string]string{"sha256": domain.SHA256Hex(a.receipt)}},
		{Name: ResultFile, Digest: map[string]string{"sha256": domain.SHA256Hex(a.result)}},
	}
	if len(st.Subject) != len(want) {
		return found("the statement in %s is not about exactly this run's receipt and result: what was signed is not this run; do not rely on it", AttestationFile)
	}
	for i, sub := range st.Subject {
		item := subjects.Items[i]
		digest, _ := item.Get("digest")
		if !hasExactly(item, "name", "digest") || !hasExactly(digest, "sha256") ||
			sub.Name != want[i].Name || sub.Digest["sha256"] != want[i].Digest["sha256"] {
			return found("the statement in %s is not about exactly this run's receipt and result: what was signed is not this run; do not rely on it", AttestationFile)
		}
	}
	predicate, _ := v.Get("predicate")
	receipt, err := jsonvalue.Parse(a.receipt)
	if err != nil || !jsonvalue.Equal(predicate, receipt) {
		return found("the predicate of the statement in %s differs from %s: what was signed is not this receipt; do not rely on this run", AttestationFile, ReceiptFile)
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
