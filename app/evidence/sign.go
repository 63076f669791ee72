package evidence

import (
	"crypto/ed25519"
	"errors"

	"github.com/metricproof/metricproof/app/attest"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// Signed evidence: package attest signs and checks the DSSE
// envelope around an in-toto statement about a run's receipt and result,
// whose predicate is the receipt; here are the run's files and what a
// fault means to the operator.

// SignerOf names the signing key in a receipt.
func SignerOf(key ed25519.PrivateKey) (*Signer, error) {
	id, pub, err := attest.Signer(key)
	if err != nil {
		return nil, err
	}
	return &Signer{KeyID: id, PublicKey: pub}, nil
}

// runSubjects are the files a run's statement is about: its receipt and
// result bytes.
func runSubjects(receiptSum, resultSum string) []attest.Subject {
	return []attest.Subject{{Name: ports.ReceiptFile, SHA256: receiptSum}, {Name: ports.ResultFile, SHA256: resultSum}}
}

// Attest signs the run's receipt and result: the bytes of its
// attestation.json.
func Attest(key ed25519.PrivateKey, receipt []byte, receiptSum, resultSum string) ([]byte, error) {
	return attest.Sign(key, runSubjects(receiptSum, resultSum), receipt, Encode)
}

// CheckSignature is the check signature_valid of run runID (protocol
// §10.4): its receipt names a signer whose key ID is the hash of its key
// (trusted, when it is not nil), and its attestation is a DSSE envelope
// with one valid signature by that key over a statement whose subjects are
// exactly the receipt and result bytes and whose predicate is the receipt.
func CheckSignature(runID string, signer *Signer, receipt, result, attestation []byte, trusted ed25519.PublicKey) error {
	found := func(format string, args ...any) error {
		return protocol.Errorf(protocol.SignatureInvalid, format, args...)
	}
	switch {
	case signer == nil && attestation != nil:
		return found("run %s holds %s but its receipt names no signer: the receipt was changed after signing, or the file added; do not rely on this run", runID, ports.AttestationFile)
	case signer == nil:
		return found("run %s is not signed, and --trusted-key accepts only runs signed by that key; verify it without --trusted-key, or make a signed run with analyze --signing-key", runID)
	case attestation == nil:
		return found("the receipt of run %s names a signer but the run holds no %s: its signature was removed, so nothing shows who made it; do not rely on this run", runID, ports.AttestationFile)
	}
	key, err := attest.ParseKey(signer.KeyID, signer.PublicKey)
	switch {
	case errors.Is(err, attest.ErrKeyEncoding):
		return found("the signer's public_key in %s is not standard padded base64; do not rely on this run", ports.ReceiptFile)
	case errors.Is(err, attest.ErrKeyID):
		return found("the signer's key_id in %s is not the SHA256 of its public_key: the receipt names a signer it does not hold; do not rely on this run", ports.ReceiptFile)
	case err != nil:
		return found("the signer's public_key in %s is not an Ed25519 public key in SPKI DER; do not rely on this run", ports.ReceiptFile)
	}
	if trusted != nil && !key.Is(trusted) {
		return found("run %s is signed by a key other than the trusted key, so the trusted key's holder did not make it; verify it with its signer's public key only if you trust that signer", runID)
	}
	err = attest.Check(attestation, key, runSubjects(domain.SHA256Hex(receipt), domain.SHA256Hex(result)), receipt)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, attest.ErrNotEnvelope):
		return found("%s is not a DSSE envelope with one signature over an in-toto statement; do not rely on this run", ports.AttestationFile)
	case errors.Is(err, attest.ErrOtherKeyID):
		return found("the signature in %s names a key other than the receipt's signer; do not rely on this run", ports.AttestationFile)
	case errors.Is(err, attest.ErrSignature):
		return found("the signature in %s is not a valid signature by the receipt's signer: the attestation was changed after signing, or signed by another key; do not rely on this run", ports.AttestationFile)
	case errors.Is(err, attest.ErrNotStatement):
		return found("the statement in %s is not an in-toto Statement v1 about this run's receipt; do not rely on this run", ports.AttestationFile)
	case errors.Is(err, attest.ErrSubjects):
		return found("the statement in %s is not about exactly this run's receipt and result: what was signed is not this run; do not rely on it", ports.AttestationFile)
	}
	return found("the predicate of the statement in %s differs from %s: what was signed is not this receipt; do not rely on this run", ports.AttestationFile, ports.ReceiptFile)
}
