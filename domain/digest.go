package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// SHA256Hex returns the SHA256 of data as lowercase hex.
func SHA256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// SourceHashes maps each source's relative path to the SHA256 of its exact
// bytes, as lowercase hex.
type SourceHashes map[string]string

// HashSources hashes the exact bytes of each source.
func HashSources(files map[string][]byte) SourceHashes {
	h := make(SourceHashes, len(files))
	for name, data := range files {
		h[name] = SHA256Hex(data)
	}
	return h
}

// Digest returns the combined source digest: the SHA256 of the map as JSON
// with sorted keys, ',' and ':' separators, no spaces, and one trailing
// newline.
func (h SourceHashes) Digest() string {
	// encoding/json writes map keys sorted and compact; the keys are the
	// fixed ASCII source paths and the values hex, so nothing is escaped.
	canonical, _ := json.Marshal(map[string]string(h)) // a map of strings cannot fail
	return SHA256Hex(append(canonical, '\n'))
}
