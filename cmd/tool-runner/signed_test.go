//go:build unix

package main

// Real-process tests of signed evidence (protocol §10): the key options and
// their faults, signed analyze, the signature check of verify_result and
// its damage matrix on the real disk, and our attestation checked by an
// independent verifier (openssl) over a PAE built by these tests' own few
// lines, so that a mistake in the engine's PAE cannot pass by agreeing
// with itself.

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/internal/testutil"
)

// DSSE and in-toto names, written out here rather than taken from the
// engine, so that a test cannot agree with a wrong constant.
const (
	testPayloadType   = "application/vnd.in-toto+json"
	testStatementType = "https://in-toto.io/Statement/v1"
	testPredicateType = "https://github.com/metricproof/metricproof/receipt/v1"
)

// unsignedChecks are the checks verify lists for an unsigned run.
func unsignedChecks() []any {
	return []any{"run_present", "saved_files_valid", "receipt_bound", "result_bound", "sources_unchanged", "engine_unchanged", "result_recomputed"}
}

// signedChecks are the checks verify lists for a signed run:
// signature_valid right after result_bound.
func signedChecks() []any {
	return []any{"run_present", "saved_files_valid", "receipt_bound", "result_bound", "signature_valid", "sources_unchanged", "engine_unchanged", "result_recomputed"}
}

// testKey is an Ed25519 key pair and its PEM files.
type testKey struct {
	priv     ed25519.PrivateKey
	pub      ed25519.PublicKey
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
	k := keyOf(t, priv)
	k.privPath = filepath.Join(dir, name+".pem")
	k.pubPath = filepath.Join(dir, name+".pub.pem")
	return k
}

// keyOf fills a testKey's fields from its private key, no files.
func keyOf(t *testing.T, priv ed25519.PrivateKey) testKey {
	t.Helper()
	pub := priv.Public().(ed25519.PublicKey)
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{priv: priv, pub: pub, der: der, id: testutil.SHA256Hex(der)}
}

// haveOpenSSL skips the test when openssl is not installed.
func haveOpenSSL(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed, so this independent check cannot run; the other signed tests still cover the engine")
	}
}

// openssl runs openssl in dir and returns its standard output; it fails
// the test when openssl fails.
func openssl(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("openssl", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("openssl %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// openSSLKey makes a key pair the way README tells the operator to, with
// openssl, in dir as key.pem and key.pub.pem.
func openSSLKey(t *testing.T, dir string) testKey {
	t.Helper()
	openssl(t, dir, "genpkey", "-algorithm", "ed25519", "-out", "key.pem")
	if err := os.Chmod(filepath.Join(dir, "key.pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	openssl(t, dir, "pkey", "-in", "key.pem", "-pubout", "-out", "key.pub.pem")
	data, err := os.ReadFile(filepath.Join(dir, "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatal("openssl wrote no PEM")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	k := keyOf(t, key.(ed25519.PrivateKey))
	k.privPath, k.pubPath = filepath.Join(dir, "key.pem"), filepath.Join(dir, "key.pub.pem")
	return k
}

// signedAnalyze commits run id in ws/out signed with key, and fails the
// test unless it succeeds.
func signedAnalyze(t *testing.T, ws, out, id string, key testKey) outcome {
	t.Helper()
	o := call(t, ws, analyzeRequest(id, digestOf(t, ws)), "--workspace", ws, "--output-dir", out, "--signing-key", key.privPath)
	if o.exit != 0 {
		t.Fatalf("signed analyze failed: %s", o.raw)
	}
	return o
}

// verifyTrusting runs verify_result on ws/out/id, with --trusted-key
// trusted unless it is empty.
func verifyTrusting(t *testing.T, ws, out, id, trusted string) outcome {
	t.Helper()
	args := []string{"--workspace", ws, "--output-dir", out}
	if trusted != "" {
		args = append(args, "--trusted-key", trusted)
	}
	return call(t, ws, verifyRequest("v1", id), args...)
}

// testPAE is DSSE's pre-authentication encoding, written here from the
// DSSE protocol text and nowhere taken from the engine:
// "DSSEv1" SP len(type) SP type SP len(body) SP body, lengths in bytes.
func testPAE(payloadType string, body []byte) []byte {
	pae := fmt.Appendf(nil, "DSSEv1 %d %s %d ", len(payloadType), payloadType, len(body))
	return append(pae, body...)
}

// envelopeOf decodes a DSSE envelope as an outside verifier would: the
// decoded payload (the statement bytes), the payload type, and the
// signatures' key IDs and decoded signatures.
func envelopeOf(data []byte) (payload []byte, payloadType string, keyIDs []string, sigs [][]byte, err error) {
	var env struct {
		Payload     string `json:"payload"`
		PayloadType string `json:"payloadType"`
		Signatures  []struct {
			KeyID string `json:"keyid"`
			Sig   string `json:"sig"`
		} `json:"signatures"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, "", nil, nil, err
	}
	if payload, err = base64.StdEncoding.DecodeString(env.Payload); err != nil {
		return nil, "", nil, nil, err
	}
	for _, s := range env.Signatures {
		sig, err := base64.StdEncoding.DecodeString(s.Sig)
		if err != nil {
			return nil, "", nil, nil, err
		}
		keyIDs, sigs = append(keyIDs, s.KeyID), append(sigs, sig)
	}
	return payload, env.PayloadType, keyIDs, sigs, nil
}

// attestationProblem checks a run's attestation.json the way protocol §10 asks
// any DSSE verifier to, with these tests' own code: one signature, by pub,
// under its key ID, valid over testPAE of the decoded payload; the payload
// an in-toto Statement v1 whose subjects are exactly the SHA256 of the
// receipt and result bytes and whose predicate equals the receipt as a
// JSON value. It returns what is wrong, or "".
func attestationProblem(files map[string][]byte, pub ed25519.PublicKey) string {
	payload, payloadType, keyIDs, sigs, err := envelopeOf(files["attestation.json"])
	switch {
	case err != nil:
		return "the attestation does not decode: " + err.Error()
	case payloadType != testPayloadType:
		return "payloadType is " + payloadType
	case len(sigs) != 1:
		return fmt.Sprintf("%d signatures", len(sigs))
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	switch {
	case err != nil:
		return err.Error()
	case keyIDs[0] != testutil.SHA256Hex(der):
		return "keyid is not the SHA256 of the signer's SPKI DER"
	case !ed25519.Verify(pub, testPAE(payloadType, payload), sigs[0]):
		return "the signature does not verify over the PAE of the payload"
	}
	var st struct {
		Type    string `json:"_type"`
		Subject []struct {
			Name   string            `json:"name"`
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
		PredicateType string `json:"predicateType"`
		Predicate     any    `json:"predicate"`
	}
	if err := json.Unmarshal(payload, &st); err != nil {
		return "the payload is not a statement: " + err.Error()
	}
	var receipt any
	if err := json.Unmarshal(files["receipt.json"], &receipt); err != nil {
		return "the receipt is not JSON: " + err.Error()
	}
	switch {
	case st.Type != testStatementType || st.PredicateType != testPredicateType:
		return "not an in-toto Statement v1 with metricproof's predicate type"
	case len(st.Subject) != 2 ||
		st.Subject[0].Name != "receipt.json" || !reflect.DeepEqual(st.Subject[0].Digest, map[string]string{"sha256": testutil.SHA256Hex(files["receipt.json"])}) ||
		st.Subject[1].Name != "result.json" || !reflect.DeepEqual(st.Subject[1].Digest, map[string]string{"sha256": testutil.SHA256Hex(files["result.json"])}):
		return "the subjects are not exactly the receipt and result bytes"
	case !reflect.DeepEqual(st.Predicate, receipt):
		return "the predicate is not the receipt"
	}
	return ""
}

// runFiles reads every regular file of ws/out/id.
func runFiles(t *testing.T, ws, out, id string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, name := range entriesIn(t, filepath.Join(ws, out, id)) {
		data, err := os.ReadFile(filepath.Join(ws, out, id, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	return files
}

// topLevelKeys lists a JSON object's keys in the order they are written.
func topLevelKeys(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %v", err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestASignedAnalyzeAddsTheSignerAndAnAttestation: analyze with
// --signing-key (a key made with crypto/ed25519, and one made with openssl
// as README says) commits exactly four files; the receipt gains signer,
// after build and last, whose key_id is the SHA256 of the SPKI DER (what
// openssl pkey -pubin -outform DER | sha256sum prints) and whose
// public_key is that DER; the response names the attestation; verify with
// the trusted key, and without one, lists signature_valid right after
// result_bound.
func TestASignedAnalyzeAddsTheSignerAndAnAttestation(t *testing.T) {
	makers := []struct {
		name string
		key  func(t *testing.T, dir string) testKey
	}{
		{"crypto/ed25519", func(t *testing.T, dir string) testKey { return newTestKey(t, dir, "key") }},
		{"openssl genpkey", func(t *testing.T, dir string) testKey { haveOpenSSL(t); return openSSLKey(t, dir) }},
	}
	for _, m := range makers {
		t.Run(m.name, func(t *testing.T) {
			is := is.New(t)
			ws := fixture(t)
			key := m.key(t, t.TempDir())
			o := signedAnalyze(t, ws, "runs", "s1", key)
			is.Equal(o.resp["artifacts"], map[string]any{
				"result":      "runs/s1/result.json",
				"receipt":     "runs/s1/receipt.json",
				"checksums":   "runs/s1/checksums.json",
				"attestation": "runs/s1/attestation.json",
			})
			is.Equal(entriesIn(t, filepath.Join(ws, "runs", "s1")), []string{"attestation.json", "checksums.json", "receipt.json", "result.json"}) // exactly four files

			files := runFiles(t, ws, "runs", "s1")
			is.Equal(topLevelKeys(t, files["receipt.json"]), []string{"protocol_version", "run_id", "definition_id", "sources", "source_digest", "engine_sha256", "result_sha256", "created_at", "build", "signer"})
			var receipt struct {
				Signer map[string]string `json:"signer"`
			}
			is.NoErr(json.Unmarshal(files["receipt.json"], &receipt))
			is.Equal(receipt.Signer, map[string]string{"key_id": key.id, "public_key": base64.StdEncoding.EncodeToString(key.der)})
			if _, err := exec.LookPath("openssl"); err == nil {
				is.Equal(receipt.Signer["key_id"], opensslKeyID(t, key.pubPath)) // the key ID openssl prints
			}
			is.Equal(attestationProblem(files, key.pub), "") // an outside verifier accepts it

			var saved map[string]any
			is.NoErr(json.Unmarshal(files["result.json"], &saved))
			is.Equal(saved, o.result()) // the response's result is result.json

			for _, trusted := range []string{key.pubPath, ""} {
				v := verifyTrusting(t, ws, "runs", "s1", trusted)
				is.Equal(v.exit, 0)
				is.Equal(v.result()["integrity"], "verified")
				is.Equal(v.result()["checks"], signedChecks()) // signature_valid right after result_bound
			}
		})
	}
}

// opensslKeyID is what protocol §10 says the key ID is, computed by the
// operator's tools: openssl pkey -pubin -outform DER | sha256sum (the
// SHA256 in Go where sha256sum is missing).
func opensslKeyID(t *testing.T, pubPath string) string {
	t.Helper()
	if _, err := exec.LookPath("sha256sum"); err == nil {
		out, err := exec.Command("sh", "-c", `openssl pkey -pubin -in "$1" -outform DER | sha256sum`, "sh", pubPath).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Fields(string(out))[0]
	}
	return testutil.SHA256Hex(openssl(t, "", "pkey", "-pubin", "-in", pubPath, "-outform", "DER"))
}

// TestAnUnsignedRunIsWhatItWasBeforeSigning: without --signing-key a run
// is exactly its three files, the receipt has no signer, the artifacts
// name three files, verify without --trusted-key lists the seven checks
// of protocol §6 and no signature_valid, and a fifth entry is refused in the
// words used before signing existed.
func TestAnUnsignedRunIsWhatItWasBeforeSigning(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	o := analyze(t, ws, "runs", "u1")
	is.Equal(o.resp["artifacts"], map[string]any{
		"result":    "runs/u1/result.json",
		"receipt":   "runs/u1/receipt.json",
		"checksums": "runs/u1/checksums.json",
	})
	is.Equal(entriesIn(t, filepath.Join(ws, "runs", "u1")), []string{"checksums.json", "receipt.json", "result.json"})
	is.Equal(topLevelKeys(t, runFiles(t, ws, "runs", "u1")["receipt.json"]), []string{"protocol_version", "run_id", "definition_id", "sources", "source_digest", "engine_sha256", "result_sha256", "created_at", "build"})
	v := verifyTrusting(t, ws, "runs", "u1", "")
	is.Equal(v.exit, 0)
	is.Equal(v.result()["checks"], unsignedChecks())

	// A fifth entry is worded as it was before signing existed.
	writeFile(t, filepath.Join(ws, "runs", "u1", "notes.txt"), nil)
	v = verifyTrusting(t, ws, "runs", "u1", "")
	is.Equal(v.code(), "INVALID_SAVED_RESULT")
	is.Equal(v.message(), "run u1 holds an entry analyze never writes; a run is exactly result.json, receipt.json and checksums.json")
}

// TestOpenSSLVerifiesOurAttestation checks a signed run with an
// independent verifier: the key made by openssl as README says, the run
// signed by the real binary, the envelope decoded and the PAE built by
// this test's own few lines over the decoded payload, and the signature
// checked by openssl pkeyutl -verify -rawin with the public key alone.
// openssl must also refuse the PAE with one bit flipped, with its length
// field changed, built over the base64 text instead of the decoded
// payload, and a signature with one bit flipped, so the check can fail.
func TestOpenSSLVerifiesOurAttestation(t *testing.T) {
	haveOpenSSL(t)
	is := is.New(t)
	ws := fixture(t)
	keyDir := t.TempDir()
	key := openSSLKey(t, keyDir)
	signedAnalyze(t, ws, "runs", "s1", key)
	data, err := os.ReadFile(filepath.Join(ws, "runs", "s1", "attestation.json"))
	is.NoErr(err)
	var env struct {
		Payload     string `json:"payload"`
		PayloadType string `json:"payloadType"`
		Signatures  []struct {
			Sig string `json:"sig"`
		} `json:"signatures"`
	}
	is.NoErr(json.Unmarshal(data, &env))
	is.Equal(len(env.Signatures), 1)
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	is.NoErr(err)
	sig, err := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	is.NoErr(err)
	pae := testPAE(env.PayloadType, payload)

	scratch := t.TempDir()
	verify := func(pae, sig []byte) (bool, string) {
		t.Helper()
		is.NoErr(os.WriteFile(filepath.Join(scratch, "pae.bin"), pae, 0o644))
		is.NoErr(os.WriteFile(filepath.Join(scratch, "sig.bin"), sig, 0o644))
		cmd := exec.Command("openssl", "pkeyutl", "-verify", "-rawin", "-pubin", "-inkey", key.pubPath, "-sigfile", "sig.bin", "-in", "pae.bin")
		cmd.Dir = scratch
		out, err := cmd.CombinedOutput()
		return err == nil, string(out)
	}
	ok, out := verify(pae, sig)
	is.True(ok) // openssl verifies our attestation
	is.True(strings.Contains(out, "Signature Verified Successfully"))
	t.Logf("openssl: %s", strings.TrimSpace(out))

	flipped := bytes.Clone(pae)
	flipped[len(flipped)-10] ^= 1
	flippedSig := bytes.Clone(sig)
	flippedSig[5] ^= 1
	longer := bytes.Replace(pae, fmt.Appendf(nil, " %d ", len(payload)), fmt.Appendf(nil, " %d ", len(payload)+1), 1)
	refusals := []struct {
		name     string
		pae, sig []byte
	}{
		{"a payload bit flipped", flipped, sig},
		{"a signature bit flipped", pae, flippedSig},
		{"the body's length changed", longer, sig},
		{"the PAE over the base64 text", testPAE(env.PayloadType, []byte(env.Payload)), sig},
	}
	for _, rf := range refusals {
		t.Run(rf.name, func(t *testing.T) {
			is := is.New(t)
			ok, out := verify(rf.pae, rf.sig)
			is.True(!ok) // openssl refuses it
			is.True(strings.Contains(out, "Signature Verification Failure"))
		})
	}
}

// TestTheSigningPageRecipeVerifiesASignedRunWithoutUs runs the shell recipe of
// docs/signing.md (README links it) for checking a signed run with openssl
// alone, verbatim, with HOME pointing at the keys that page makes there: it verifies a signed run and
// prints the subjects' digests, which equal the files'; and it fails on
// the same run with one bit of the payload flipped.
func TestTheSigningPageRecipeVerifiesASignedRunWithoutUs(t *testing.T) {
	haveOpenSSL(t)
	is := is.New(t)
	readme, err := os.ReadFile(filepath.Join(testutil.Root(t), "docs", "signing.md"))
	is.NoErr(err)
	recipe := shellBlockWith(t, string(readme), "openssl pkeyutl -verify")
	run := regexp.MustCompile(`(?m)^run=(\S+)`).FindStringSubmatch(recipe)
	if run == nil {
		t.Fatalf("the recipe sets no run=: %s", recipe)
	}
	out, id := filepath.Dir(run[1]), filepath.Base(run[1])

	home := t.TempDir()
	is.NoErr(os.Mkdir(filepath.Join(home, ".metricproof"), 0o700))
	keygen := shellBlockWith(t, string(readme), "openssl genpkey -algorithm ed25519")
	cmd := exec.Command("sh", "-e", "-c", keygen)
	cmd.Dir, cmd.Env = t.TempDir(), append(os.Environ(), "HOME="+home)
	gen, err := cmd.CombinedOutput()
	is.NoErr(err) // the page's key commands run
	if t.Failed() {
		t.Fatalf("%s", gen)
	}
	key := testKey{privPath: filepath.Join(home, ".metricproof", "key.pem"), pubPath: filepath.Join(home, ".metricproof", "key.pub.pem")}
	fi, err := os.Stat(key.privPath)
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), os.FileMode(0o600)) // the page's key is private

	ws := fixture(t)
	signedAnalyze(t, ws, out, id, key)
	files := runFiles(t, ws, out, id)
	sh := func() (string, error) {
		cmd := exec.Command("sh", "-c", recipe)
		cmd.Dir, cmd.Env = ws, append(os.Environ(), "HOME="+home)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	got, err := sh()
	is.NoErr(err) // the recipe verifies the run
	is.True(strings.Contains(got, "Signature Verified Successfully"))
	for _, name := range []string{"receipt.json", "result.json"} {
		is.True(strings.Contains(got, testutil.SHA256Hex(files[name]))) // the recipe shows each subject's digest
	}
	is.Equal(entriesIn(t, filepath.Join(ws, out, id)), []string{"attestation.json", "checksums.json", "receipt.json", "result.json"}) // and writes nothing into the run
	if t.Failed() {
		t.Logf("recipe output:\n%s", got)
	}

	env := map[string]any{}
	is.NoErr(json.Unmarshal(files["attestation.json"], &env))
	env["payload"] = flipDecoded(t, env["payload"].(string), 40)
	writeFile(t, filepath.Join(ws, out, id, "attestation.json"), damageIndented(env))
	got, err = sh()
	is.True(err != nil) // the recipe fails on a flipped payload
	is.True(strings.Contains(got, "Signature Verification Failure"))
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

// shellBlockWith returns the one ```sh block of markdown that contains
// marker.
func shellBlockWith(t *testing.T, markdown, marker string) string {
	t.Helper()
	var found []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(markdown, -1) {
		if strings.Contains(m[1], marker) {
			found = append(found, m[1])
		}
	}
	if len(found) != 1 {
		t.Fatalf("docs/signing.md has %d sh blocks holding %q, want 1", len(found), marker)
	}
	return found[0]
}

// checkSignedBy asserts that run ws/out/id is signed by key: its receipt
// names key, its attestation verifies with key by this test's own code,
// and verify_result with key trusted answers verified with the eight
// checks.
func checkSignedBy(t *testing.T, ws, out, id string, key testKey) {
	t.Helper()
	files := runFiles(t, ws, out, id)
	var receipt struct {
		Signer struct {
			KeyID string `json:"key_id"`
		} `json:"signer"`
	}
	if err := json.Unmarshal(files["receipt.json"], &receipt); err != nil || receipt.Signer.KeyID != key.id {
		t.Errorf("run %s is not signed by the key: %v", id, err)
	}
	if p := attestationProblem(files, key.pub); p != "" {
		t.Errorf("run %s: %s", id, p)
	}
	v := verifyTrusting(t, ws, out, id, key.pubPath)
	checks, _ := v.result()["checks"].([]any)
	if v.exit != 0 || !slices.Equal(checks, signedChecks()) {
		t.Errorf("run %s does not verify with its key trusted: %s", id, v.raw)
	}
}

// signerOfRun is the public key a run's receipt names, or nil when the
// receipt names none.
func signerOfRun(t *testing.T, receipt []byte) ed25519.PublicKey {
	t.Helper()
	var r struct {
		Signer *struct {
			PublicKey string `json:"public_key"`
		} `json:"signer"`
	}
	if err := json.Unmarshal(receipt, &r); err != nil {
		t.Fatal(err)
	}
	if r.Signer == nil {
		return nil
	}
	der, err := base64.StdEncoding.DecodeString(r.Signer.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		t.Fatal(err)
	}
	pub, ok := key.(ed25519.PublicKey)
	if !ok {
		t.Fatal("the receipt's signer is not an Ed25519 key")
	}
	return pub
}
