package attest_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/app/attest"
	"github.com/metricproof/metricproof/domain"
)

func indented(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }

// A signed statement checks, and each change to it, its key or what it is
// about is the fault named, in the order the checks run.
func TestSignThenCheck(t *testing.T) {
	is := is.New(t)
	seed := bytes.Repeat([]byte{7}, ed25519.SeedSize)
	key := ed25519.NewKeyFromSeed(seed)
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, ed25519.SeedSize))
	predicate := []byte(`{"run_id": "r1", "n": 80}`)
	subjects := []attest.Subject{{Name: "a.json", SHA256: domain.SHA256Hex([]byte("a"))}, {Name: "b.json", SHA256: domain.SHA256Hex([]byte("b"))}}
	data, err := attest.Sign(key, subjects, predicate, indented)
	is.NoErr(err)
	id, pub, err := attest.Signer(key)
	is.NoErr(err)
	k, err := attest.ParseKey(id, pub)
	is.NoErr(err)
	is.True(k.Is(key.Public().(ed25519.PublicKey)))
	is.True(!k.Is(other.Public().(ed25519.PublicKey)))
	is.NoErr(attest.Check(data, k, subjects, []byte(`{"n":80.0,"run_id":"r1"}`))) // the same JSON value

	otherID, otherPub, _ := attest.Signer(other)
	otherKey, _ := attest.ParseKey(otherID, otherPub)
	resigned, _ := attest.Sign(other, subjects, predicate, indented)
	var env map[string]any
	is.NoErr(json.Unmarshal(data, &env))
	withKeyID := func(keyID string) []byte {
		env["signatures"].([]any)[0].(map[string]any)["keyid"] = keyID
		b, _ := json.Marshal(env)
		return b
	}
	tests := []struct {
		name        string
		attestation []byte
		key         attest.Key
		subjects    []attest.Subject
		predicate   string
		want        error
	}{
		{"not JSON", []byte("{"), k, subjects, string(predicate), attest.ErrNotEnvelope},
		{"a key too many", []byte(`{"payload":"","payloadType":"application/vnd.in-toto+json","signatures":[],"x":1}`), k, subjects, string(predicate), attest.ErrNotEnvelope},
		{"another key's signature", resigned, k, subjects, string(predicate), attest.ErrOtherKeyID},
		{"a signature under another key ID", withKeyID(otherID), otherKey, subjects, string(predicate), attest.ErrSignature},
		{"other subjects", data, k, subjects[:1], string(predicate), attest.ErrSubjects},
		{"another digest", data, k, []attest.Subject{subjects[0], {Name: "b.json", SHA256: subjects[0].SHA256}}, string(predicate), attest.ErrSubjects},
		{"another predicate", data, k, subjects, `{"run_id":"r2","n":80}`, attest.ErrPredicate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			err := attest.Check(tt.attestation, tt.key, tt.subjects, []byte(tt.predicate))
			is.True(errors.Is(err, tt.want)) // the fault named
		})
	}
}

func TestParseKeyFaults(t *testing.T) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	id, pub, err := attest.Signer(key)
	if err != nil {
		t.Fatal(err)
	}
	notEd := base64.StdEncoding.EncodeToString([]byte("not a key"))
	tests := []struct {
		name, id, pub string
		want          error
	}{
		{"line break in base64", id, pub[:10] + "\n" + pub[10:], attest.ErrKeyEncoding},
		{"key ID of another key", domain.SHA256Hex([]byte("x")), pub, attest.ErrKeyID},
		{"not SPKI DER", domain.SHA256Hex([]byte("not a key")), notEd, attest.ErrNotEd25519},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := attest.ParseKey(tt.id, tt.pub)
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}
