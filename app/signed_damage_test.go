package app_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/internal/testutil"
)

// DSSE and in-toto names, written out here rather than taken from the
// engine, so that a test cannot agree with a wrong constant.
const (
	testPayloadType   = "application/vnd.in-toto+json"
	testStatementType = "https://in-toto.io/Statement/v1"
	testPredicateType = "https://github.com/metricproof/metricproof/receipt/v1"
)

// testKey is an Ed25519 key pair and its PEM files on the real disk,
// outside any workspace (the key port reads the real disk on both file
// systems).
type testKey struct {
	priv     ed25519.PrivateKey
	der      []byte // the public key's SPKI DER
	id       string // lowercase hex SHA256 of der: protocol §10's key ID
	privPath string // PKCS#8 PEM, mode 0600
	pubPath  string // SPKI PEM, mode 0644
}

// newTestKey makes a key pair with crypto/ed25519 and writes dir/name.pem
// and dir/name.pub.pem.
func newTestKey(t *testing.T, dir, name string) testKey {
	t.Helper()
	priv, err := testutil.WriteKeyPair(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return testKey{priv: priv, der: der, id: testutil.SHA256Hex(der),
		privPath: filepath.Join(dir, name+".pem"), pubPath: filepath.Join(dir, name+".pub.pem")}
}

// testPAE is DSSE's pre-authentication encoding, written here from the
// DSSE protocol text and nowhere taken from the engine:
// "DSSEv1" SP len(type) SP type SP len(body) SP body, lengths in bytes.
func testPAE(payloadType string, body []byte) []byte {
	pae := fmt.Appendf(nil, "DSSEv1 %d %s %d ", len(payloadType), payloadType, len(body))
	return append(pae, body...)
}

// signedKeys are the keys of the signed damage matrix: the operator's
// (which signs and is trusted), another that a forger holds, and a third.
type signedKeys struct{ own, other, third testKey }

// signedDamage is one row of the signed damage matrix. A row is verified
// twice, without --trusted-key and with the operator's public key (or,
// with trustThird, the third key's), each with its expected code.
type signedDamage struct {
	name     string
	unsigned bool // commit the run without --signing-key
	damage   func(*signedDamaged)
	// without and with are the expected codes; "" means the run verifies.
	without, with string
	trustThird    bool
	caught        string // a phrase of the message naming the rule that caught it
	// diskOnly says why memfs cannot express the damage; the row then
	// runs on osfs only.
	diskOnly string
}

// signedDamaged is run r1 committed on one file system, signed with the
// operator's key unless the row says otherwise, for one row to damage.
type signedDamaged struct {
	*damaged
	keys signedKeys
}

// signedCommit commits run r1 on f, signed with the operator's key unless
// unsigned.
func signedCommit(t *testing.T, f bothFS, keys signedKeys, unsigned bool) *signedDamaged {
	t.Helper()
	d := openOn(t, f, testutil.Fixture(t))
	d.wantDigest = d.digest()
	args := []string{"--output-dir", "runs"}
	if !unsigned {
		args = append(args, "--signing-key", keys.own.privPath)
	}
	if r := d.callWith(analyzeReq("r1", d.wantDigest), args...); r.Exit != 0 {
		t.Fatalf("analyze: %s", r.Raw)
	}
	if f.name == "osfs" {
		d.outside = t.TempDir()
	}
	return &signedDamaged{damaged: d, keys: keys}
}

// The checks verify lists for an unsigned and a signed run: signed,
// signature_valid right after result_bound.
var (
	unsignedChecks = []string{"run_present", "saved_files_valid", "receipt_bound", "result_bound", "sources_unchanged", "engine_unchanged", "result_recomputed"}
	signedChecks   = []string{"run_present", "saved_files_valid", "receipt_bound", "result_bound", "signature_valid", "sources_unchanged", "engine_unchanged", "result_recomputed"}
)

// TestVerifyNamesEachDamageOfASignedRun is the damage matrix of protocol
// §10 over both file systems: each row commits a signed run, damages it
// one way, with checksums.json (and the receipt, where the row edits it)
// rewritten to match so that the signature check is what fails, and
// verifies it without and with --trusted-key. Each answer is its row's
// exact code (or a verified run, where the contract cannot see the
// change), with exit 1, not retryable, and verify wrote nothing. A
// symlinked attestation runs on osfs only; a named pipe is
// TestVerifyNamesANamedPipeInARun's.
func TestVerifyNamesEachDamageOfASignedRun(t *testing.T) {
	dir := t.TempDir()
	keys := signedKeys{own: newTestKey(t, dir, "own"), other: newTestKey(t, dir, "other"), third: newTestKey(t, dir, "third")}
	for _, f := range fileSystems() {
		for _, c := range signedDamages() {
			t.Run(f.name+"/"+c.name, func(t *testing.T) {
				if c.diskOnly != "" && f.name == "memfs" {
					t.Skip(c.diskOnly)
				}
				checkSignedDamage(t, f, keys, c)
			})
		}
	}
}

// checkSignedDamage commits, damages and verifies one row of the signed
// matrix on f, without and with --trusted-key.
func checkSignedDamage(t *testing.T, f bothFS, keys signedKeys, c signedDamage) {
	r := signedCommit(t, f, keys, c.unsigned)
	c.damage(r)
	trusted := keys.own.pubPath
	if c.trustThird {
		trusted = keys.third.pubPath
	}
	for _, v := range []struct{ name, trusted, code string }{
		{"without --trusted-key", "", c.without},
		{"with --trusted-key", trusted, c.with},
	} {
		t.Run(v.name, func(t *testing.T) {
			is := is.New(t)
			before := r.photograph()
			args := []string{"--output-dir", "runs"}
			if v.trusted != "" {
				args = append(args, "--trusted-key", v.trusted)
			}
			o := r.callWith(verifyReq("v1", r.runID), args...)
			is.Equal(o.code(), v.code) // the row's code
			if v.code == "" {
				is.Equal(o.Exit, 0) // verified
				var res struct {
					Integrity string   `json:"integrity"`
					Checks    []string `json:"checks"`
				}
				is.NoErr(json.Unmarshal(o.Body.Result, &res))
				is.Equal(res.Integrity, "verified")
				want := signedChecks
				if v.trusted == "" && !r.signedOnDisk() {
					want = unsignedChecks // an unsigned run skips the check
				}
				is.Equal(res.Checks, want)
			} else {
				is.Equal(o.Exit, 1)
				is.Equal(o.Body.OK, false)
				is.True(o.Body.Tool != nil && *o.Body.Tool == "verify_result")
				is.Equal(string(o.Body.Result), "null")
				is.Equal(o.Body.Error.Retryable, false)
				is.True(strings.Contains(o.Body.Error.Message, c.caught)) // the expected check caught it
				is.True(!strings.Contains(o.Raw, r.root))                 // no absolute path
				is.True(!strings.Contains(o.Raw, dirOf(trusted)))         // nor the keys'
			}
			if t.Failed() {
				t.Logf("response: %s", o.Raw)
			}
			is.Equal(r.photograph(), before) // verify wrote nothing
		})
	}
}

// dirOf is the directory of a key file.
func dirOf(p string) string { return filepath.Dir(p) }

// signedDamages is the matrix.
func signedDamages() []signedDamage {
	const maxSaved = 4 * 1024 * 1024
	const att = "runs/r1/attestation.json"
	const sigInvalid = "SIGNATURE_INVALID"
	var cs []signedDamage
	add := func(name, without, with, caught string, damage func(*signedDamaged)) {
		cs = append(cs, signedDamage{name: name, without: without, with: with, caught: caught, damage: damage})
	}
	nothing := func(*signedDamaged) {}

	// Controls.
	add("an undamaged signed run", "", "", "", nothing)
	cs = append(cs, signedDamage{name: "an undamaged signed run verified with another key trusted", damage: nothing, without: "", with: sigInvalid, trustThird: true, caught: "other than the trusted key"})
	cs = append(cs, signedDamage{name: "an unsigned run", unsigned: true, damage: nothing, without: "", with: sigInvalid, caught: "is not signed"})
	add("compacting attestation.json to the same JSON value", "", "", "", func(r *signedDamaged) {
		var b bytes.Buffer
		if err := json.Compact(&b, r.read(att)); err != nil {
			r.t.Fatal(err)
		}
		r.write(att, b.Bytes())
	})
	add("growing attestation.json to exactly 4 MiB with trailing spaces", "", "", "", func(r *signedDamaged) {
		r.write(att, padded(r.read(att), maxSaved, ' '))
	})
	add("re-signing the statement in another layout with the run's own key", "", "", "", func(r *signedDamaged) {
		st := r.statement()
		b, err := json.MarshalIndent(st, "", "\t")
		if err != nil {
			r.t.Fatal(err)
		}
		r.writeSigned(b, r.keys.own, r.keys.own.id)
	})

	// The attestation, damaged.
	add("deleting attestation.json", sigInvalid, sigInvalid, "holds no attestation.json", func(r *signedDamaged) { r.remove(att) })
	add("flipping a base64 character of the payload", sigInvalid, sigInvalid, "is not a valid signature", func(r *signedDamaged) {
		r.editEnvelope(func(env map[string]any) { env["payload"] = flipBase64(env["payload"].(string)) })
	})
	add("flipping one bit of the decoded payload", sigInvalid, sigInvalid, "is not a valid signature", func(r *signedDamaged) {
		r.editEnvelope(func(env map[string]any) { env["payload"] = flipDecoded(r.t, env["payload"].(string), 40) })
	})
	add("flipping a base64 character of the signature", sigInvalid, sigInvalid, "is not a valid signature", func(r *signedDamaged) {
		r.editEnvelope(func(env map[string]any) {
			r.firstSignature(env)["sig"] = flipBase64(r.firstSignature(env)["sig"].(string))
		})
	})
	add("flipping one bit of the decoded signature", sigInvalid, sigInvalid, "is not a valid signature", func(r *signedDamaged) {
		r.editEnvelope(func(env map[string]any) {
			r.firstSignature(env)["sig"] = flipDecoded(r.t, r.firstSignature(env)["sig"].(string), 10)
		})
	})
	add("breaking the payload's base64 into lines", sigInvalid, sigInvalid, "is not a DSSE envelope", func(r *signedDamaged) {
		r.editEnvelope(func(env map[string]any) {
			p := env["payload"].(string)
			env["payload"] = p[:64] + "\n" + p[64:]
		})
	})
	add("another key's valid signature over the same statement", sigInvalid, sigInvalid, "is not a valid signature", func(r *signedDamaged) {
		r.writeSigned(r.payload(), r.keys.other, r.keys.own.id)
	})
	add("another key's valid signature over the same statement under its own key ID", sigInvalid, sigInvalid, "names a key other than the receipt's signer", func(r *signedDamaged) {
		r.writeSigned(r.payload(), r.keys.other, r.keys.other.id)
	})
	add("changing the signature's keyid", sigInvalid, sigInvalid, "names a key other than the receipt's signer", func(r *signedDamaged) {
		r.editEnvelope(func(env map[string]any) { r.firstSignature(env)["keyid"] = flipped(r.keys.own.id) })
	})
	add("re-signing a statement with a wrong result digest with the run's own key", sigInvalid, sigInvalid, "not about exactly this run's receipt and result", func(r *signedDamaged) {
		r.editStatement(func(st map[string]any) { r.subjectDigest(st, 1, flipped) })
	})
	add("re-signing a statement with a wrong receipt digest with the run's own key", sigInvalid, sigInvalid, "not about exactly this run's receipt and result", func(r *signedDamaged) {
		r.editStatement(func(st map[string]any) { r.subjectDigest(st, 0, flipped) })
	})
	add("re-signing a statement with its subjects swapped with the run's own key", sigInvalid, sigInvalid, "not about exactly this run's receipt and result", func(r *signedDamaged) {
		r.editStatement(func(st map[string]any) {
			s := st["subject"].([]any)
			s[0], s[1] = s[1], s[0]
		})
	})
	add("re-signing a statement with a third subject with the run's own key", sigInvalid, sigInvalid, "not about exactly this run's receipt and result", func(r *signedDamaged) {
		r.editStatement(func(st map[string]any) {
			st["subject"] = append(st["subject"].([]any), map[string]any{"name": "checksums.json", "digest": map[string]any{"sha256": testutil.SHA256Hex(r.read("runs/r1/checksums.json"))}})
		})
	})
	add("re-signing a statement whose receipt subject is named otherwise with the run's own key", sigInvalid, sigInvalid, "not about exactly this run's receipt and result", func(r *signedDamaged) {
		r.editStatement(func(st map[string]any) { st["subject"].([]any)[0].(map[string]any)["name"] = "./receipt.json" })
	})
	add("re-signing a statement whose subject carries a second digest with the run's own key", sigInvalid, sigInvalid, "not about exactly this run's receipt and result", func(r *signedDamaged) {
		r.editStatement(func(st map[string]any) {
			st["subject"].([]any)[1].(map[string]any)["digest"].(map[string]any)["sha512"] = strings.Repeat("0", 128)
		})
	})
	add("re-signing a statement whose subject carries another key with the run's own key", sigInvalid, sigInvalid, "not about exactly this run's receipt and result", func(r *signedDamaged) {
		r.editStatement(func(st map[string]any) { st["subject"].([]any)[1].(map[string]any)["uri"] = "file:result.json" })
	})
	add("re-signing a statement whose predicate has another created_at with the run's own key", sigInvalid, sigInvalid, "the predicate of the statement", func(r *signedDamaged) {
		r.editStatement(func(st map[string]any) { st["predicate"].(map[string]any)["created_at"] = "2001-02-03T04:05:06.7Z" })
	})
	add("re-signing a statement whose predicate names another engine with the run's own key", sigInvalid, sigInvalid, "the predicate of the statement", func(r *signedDamaged) {
		r.editStatement(func(st map[string]any) {
			p := st["predicate"].(map[string]any)
			p["engine_sha256"] = flipped(p["engine_sha256"].(string))
		})
	})
	add("re-signing a statement of another predicateType with the run's own key", sigInvalid, sigInvalid, "not an in-toto Statement v1", func(r *signedDamaged) {
		r.editStatement(func(st map[string]any) { st["predicateType"] = "https://slsa.dev/provenance/v1" })
	})
	add("re-signing a statement of another _type with the run's own key", sigInvalid, sigInvalid, "not an in-toto Statement v1", func(r *signedDamaged) {
		r.editStatement(func(st map[string]any) { st["_type"] = "https://in-toto.io/Statement/v0.1" })
	})
	add("re-signing the statement under another payloadType with the run's own key", sigInvalid, sigInvalid, "is not a DSSE envelope", func(r *signedDamaged) {
		const other = "application/json"
		r.editEnvelope(func(env map[string]any) {
			env["payloadType"] = other
			r.firstSignature(env)["sig"] = base64.StdEncoding.EncodeToString(ed25519.Sign(r.keys.own.priv, testPAE(other, r.payload())))
		})
	})
	add("replacing attestation.json with text that is not JSON", sigInvalid, sigInvalid, "is not a DSSE envelope", func(r *signedDamaged) {
		r.write(att, []byte("signed, honestly\n"))
	})
	add("emptying attestation.json", sigInvalid, sigInvalid, "is not a DSSE envelope", func(r *signedDamaged) { r.write(att, nil) })
	add("replacing attestation.json with an empty JSON object", sigInvalid, sigInvalid, "is not a DSSE envelope", func(r *signedDamaged) { r.write(att, []byte("{}\n")) })
	add("repeating a key in attestation.json", sigInvalid, sigInvalid, "is not a DSSE envelope", func(r *signedDamaged) {
		r.replace(att, `"payloadType"`, `"payloadType": "`+testPayloadType+`",
  "payloadType"`)
	})
	add("adding a key to the envelope", sigInvalid, sigInvalid, "is not a DSSE envelope", func(r *signedDamaged) {
		r.editEnvelope(func(env map[string]any) { env["note"] = "trust me" })
	})
	add("adding a key to the signature", sigInvalid, sigInvalid, "is not a DSSE envelope", func(r *signedDamaged) {
		r.editEnvelope(func(env map[string]any) { r.firstSignature(env)["alg"] = "ed25519" })
	})
	add("carrying the run's own signature twice", sigInvalid, sigInvalid, "is not a DSSE envelope", func(r *signedDamaged) {
		r.editEnvelope(func(env map[string]any) { env["signatures"] = append(env["signatures"].([]any), r.firstSignature(env)) })
	})
	add("carrying the run's own signature and another key's", sigInvalid, sigInvalid, "is not a DSSE envelope", func(r *signedDamaged) {
		r.editEnvelope(func(env map[string]any) {
			env["signatures"] = append(env["signatures"].([]any), map[string]any{
				"keyid": r.keys.other.id,
				"sig":   base64.StdEncoding.EncodeToString(ed25519.Sign(r.keys.other.priv, testPAE(testPayloadType, r.payload()))),
			})
		})
	})
	add("carrying no signature", sigInvalid, sigInvalid, "is not a DSSE envelope", func(r *signedDamaged) {
		r.editEnvelope(func(env map[string]any) { env["signatures"] = []any{} })
	})

	// The receipt's signer, edited, with checksums.json rewritten and the
	// statement re-signed to match, so only the signer's own rules fail.
	add("removing signer from receipt.json, attestation.json kept", sigInvalid, sigInvalid, "names no signer", func(r *signedDamaged) {
		r.editReceipt(func(m map[string]any) { delete(m, "signer") })
		r.rewriteChecksums()
	})
	add("removing signer from receipt.json and re-signing the statement with the run's own key", sigInvalid, sigInvalid, "names no signer", func(r *signedDamaged) {
		r.editReceipt(func(m map[string]any) { delete(m, "signer") })
		r.sealSigned(r.keys.own, r.keys.own.id)
	})
	add("a key_id in receipt.json that is not the hash of its public_key, consistently re-signed", sigInvalid, sigInvalid, "is not the SHA256 of its public_key", func(r *signedDamaged) {
		wrong := flipped(r.keys.own.id)
		r.editReceipt(func(m map[string]any) { m["signer"].(map[string]any)["key_id"] = wrong })
		r.sealSigned(r.keys.own, wrong)
	})
	add("a key_id in receipt.json that is not hex of its shape", "INVALID_SAVED_RESULT", "INVALID_SAVED_RESULT", "", func(r *signedDamaged) {
		r.editReceipt(func(m map[string]any) { m["signer"].(map[string]any)["key_id"] = strings.ToUpper(r.keys.own.id) })
		r.sealSigned(r.keys.own, strings.ToUpper(r.keys.own.id))
	})
	add("a public_key in receipt.json that is not base64", sigInvalid, sigInvalid, "is not standard padded base64", func(r *signedDamaged) {
		r.editReceipt(func(m map[string]any) { m["signer"].(map[string]any)["public_key"] = "not base64!" })
		r.sealSigned(r.keys.own, r.keys.own.id)
	})
	add("an RSA public_key in receipt.json with its own key_id", sigInvalid, sigInvalid, "is not an Ed25519 public key", func(r *signedDamaged) {
		rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			r.t.Fatal(err)
		}
		der, err := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
		if err != nil {
			r.t.Fatal(err)
		}
		r.editReceipt(func(m map[string]any) {
			m["signer"] = map[string]any{"key_id": testutil.SHA256Hex(der), "public_key": base64.StdEncoding.EncodeToString(der)}
		})
		r.sealSigned(r.keys.own, testutil.SHA256Hex(der))
	})
	add("a run consistently re-signed by another key whose receipt claims the trusted key's ID", sigInvalid, sigInvalid, "is not the SHA256 of its public_key", func(r *signedDamaged) {
		r.editReceipt(func(m map[string]any) {
			m["signer"] = map[string]any{"key_id": r.keys.own.id, "public_key": base64.StdEncoding.EncodeToString(r.keys.other.der)}
		})
		r.sealSigned(r.keys.other, r.keys.own.id)
	})
	add("a run consistently re-signed by another key with the trusted key's public_key", sigInvalid, sigInvalid, "is not a valid signature", func(r *signedDamaged) {
		r.sealSigned(r.keys.other, r.keys.own.id)
	})
	// protocol §10: without --trusted-key a signature proves nothing against a
	// forger who holds a key of his own, or strips the signature.
	add("a run consistently re-signed by another key under that key's own ID", "", sigInvalid, "other than the trusted key", func(r *signedDamaged) {
		r.editReceipt(func(m map[string]any) {
			m["signer"] = map[string]any{"key_id": r.keys.other.id, "public_key": base64.StdEncoding.EncodeToString(r.keys.other.der)}
		})
		r.sealSigned(r.keys.other, r.keys.other.id)
	})
	add("stripping signer and attestation.json and rewriting checksums.json", "", sigInvalid, "is not signed", func(r *signedDamaged) {
		r.editReceipt(func(m map[string]any) { delete(m, "signer") })
		r.rewriteChecksums()
		r.remove(att)
	})
	add("adding a valid attestation.json to an unsigned run", sigInvalid, sigInvalid, "names no signer", func(r *signedDamaged) {
		r.sealSigned(r.keys.own, r.keys.own.id)
	})
	cs[len(cs)-1].unsigned = true

	// check 2: the run is exactly its files, each a regular file within
	// the limit.
	add("adding a fifth file to the run", "INVALID_SAVED_RESULT", "INVALID_SAVED_RESULT", "a signed run is exactly", func(r *signedDamaged) {
		r.write("runs/r1/attestation.json.bak", r.read(att))
	})
	add("replacing attestation.json with a symlink to a copy of itself inside the workspace", "INVALID_SAVED_RESULT", "INVALID_SAVED_RESULT", "", func(r *signedDamaged) {
		r.copyTo(att, "copies/attestation.json")
		r.symlink("../../copies/attestation.json", att)
	})
	cs[len(cs)-1].diskOnly = noSymlinks
	add("replacing attestation.json with a directory", "INVALID_SAVED_RESULT", "INVALID_SAVED_RESULT", "", func(r *signedDamaged) {
		r.remove(att)
		r.mkdir(att)
	})
	add("growing attestation.json to 4 MiB and one byte with trailing spaces", "INVALID_SAVED_RESULT", "INVALID_SAVED_RESULT", "", func(r *signedDamaged) {
		r.write(att, padded(r.read(att), maxSaved+1, ' '))
	})

	// The earlier checks still answer first.
	add("flipping a byte of result.json", "RESULT_TAMPERED", "RESULT_TAMPERED", caughtByChecksums, func(r *signedDamaged) {
		r.replace("runs/r1/result.json", `"rate": "0.827272727273"`, `"rate": "0.827272727272"`)
	})
	add("flipping a byte of receipt.json", "RECEIPT_TAMPERED", "RECEIPT_TAMPERED", "", func(r *signedDamaged) {
		r.flipHex("runs/r1/receipt.json", r.receipt()["engine_sha256"].(string))
	})
	add("flipping a byte of result.json and deleting attestation.json", "RESULT_TAMPERED", "RESULT_TAMPERED", caughtByChecksums, func(r *signedDamaged) {
		r.replace("runs/r1/result.json", `"rate": "0.827272727273"`, `"rate": "0.827272727272"`)
		r.remove(att)
	})
	// A forger without the key is caught by the signature before the
	// recomputation; the key's holder is still caught by the recomputation.
	add("editing the rate in result.json and recomputing every hash", sigInvalid, sigInvalid, "not about exactly this run's receipt and result", func(r *signedDamaged) {
		r.replace("runs/r1/result.json", `"rate": "0.827272727273"`, `"rate": "0.827272727274"`)
		r.bindResult()
		r.rewriteChecksums()
	})
	add("editing the rate in result.json, recomputing every hash and re-signing with the run's own key", "RESULT_TAMPERED", "RESULT_TAMPERED", caughtByRecompute, func(r *signedDamaged) {
		r.replace("runs/r1/result.json", `"rate": "0.827272727273"`, `"rate": "0.827272727274"`)
		r.bindResult()
		r.sealSigned(r.keys.own, r.keys.own.id)
	})
	add("changing a source after signing", "STALE_SOURCES", "STALE_SOURCES", "", func(r *signedDamaged) {
		r.write("data/groups.csv", append(r.read("data/groups.csv"), '\n'))
	})
	return cs
}

// signedOnDisk reports whether the run still holds an attestation.
func (r *signedDamaged) signedOnDisk() bool {
	_, _, err := r.view.(afero.Lstater).LstatIfPossible("runs/r1/attestation.json")
	return err == nil
}

// envelope is attestation.json decoded.
func (r *signedDamaged) envelope() map[string]any {
	r.t.Helper()
	var env map[string]any
	if err := json.Unmarshal(r.read("runs/r1/attestation.json"), &env); err != nil {
		r.t.Fatal(err)
	}
	return env
}

// editEnvelope rewrites attestation.json through edit.
func (r *signedDamaged) editEnvelope(edit func(map[string]any)) {
	r.t.Helper()
	env := r.envelope()
	edit(env)
	r.write("runs/r1/attestation.json", indented(r.t, env))
}

// firstSignature is the envelope's first signature object.
func (r *signedDamaged) firstSignature(env map[string]any) map[string]any {
	return env["signatures"].([]any)[0].(map[string]any)
}

// payload is the envelope's decoded payload: the statement bytes.
func (r *signedDamaged) payload() []byte {
	r.t.Helper()
	b, err := base64.StdEncoding.DecodeString(r.envelope()["payload"].(string))
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

// statement is the payload decoded.
func (r *signedDamaged) statement() map[string]any {
	r.t.Helper()
	var st map[string]any
	if err := json.Unmarshal(r.payload(), &st); err != nil {
		r.t.Fatal(err)
	}
	return st
}

// editStatement edits the statement and re-signs it with the run's own
// key, as a holder of the key would.
func (r *signedDamaged) editStatement(edit func(map[string]any)) {
	r.t.Helper()
	st := r.statement()
	edit(st)
	b, err := json.Marshal(st)
	if err != nil {
		r.t.Fatal(err)
	}
	r.writeSigned(b, r.keys.own, r.keys.own.id)
}

// subjectDigest rewrites the sha256 of subject i through change.
func (r *signedDamaged) subjectDigest(st map[string]any, i int, change func(string) string) {
	d := st["subject"].([]any)[i].(map[string]any)["digest"].(map[string]any)
	d["sha256"] = change(d["sha256"].(string))
}

// writeSigned writes attestation.json: an envelope around statement with
// one signature by key under keyID.
func (r *signedDamaged) writeSigned(statement []byte, key testKey, keyID string) {
	r.t.Helper()
	r.write("runs/r1/attestation.json", indented(r.t, map[string]any{
		"payload":     base64.StdEncoding.EncodeToString(statement),
		"payloadType": testPayloadType,
		"signatures": []any{map[string]any{
			"keyid": keyID,
			"sig":   base64.StdEncoding.EncodeToString(ed25519.Sign(key.priv, testPAE(testPayloadType, statement))),
		}},
	}))
}

// sealSigned rewrites checksums.json for the current receipt and result
// bytes, and attestation.json as a statement about them signed by key
// under keyID: a consistent re-signing of the run.
func (r *signedDamaged) sealSigned(key testKey, keyID string) {
	r.t.Helper()
	r.rewriteChecksums()
	receipt, result := r.read("runs/r1/receipt.json"), r.read("runs/r1/result.json")
	st, err := json.Marshal(map[string]any{
		"_type": testStatementType,
		"subject": []any{
			map[string]any{"name": "receipt.json", "digest": map[string]any{"sha256": testutil.SHA256Hex(receipt)}},
			map[string]any{"name": "result.json", "digest": map[string]any{"sha256": testutil.SHA256Hex(result)}},
		},
		"predicateType": testPredicateType,
		"predicate":     json.RawMessage(receipt),
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.writeSigned(st, key, keyID)
}

// flipBase64 changes one base64 character in the middle of s to another
// base64 character.
func flipBase64(s string) string {
	i := len(s) / 2
	c := byte('A')
	if s[i] == 'A' {
		c = 'B'
	}
	return s[:i] + string(c) + s[i+1:]
}

// flipDecoded flips the low bit of byte i of what s decodes to, and
// encodes it again.
func flipDecoded(t *testing.T, s string, i int) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	b[i] ^= 1
	return base64.StdEncoding.EncodeToString(b)
}
