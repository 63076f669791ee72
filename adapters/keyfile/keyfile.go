// Package keyfile reads the operator's Ed25519 keys from PEM files, the
// ones openssl writes: a private key in PKCS#8 ("PRIVATE KEY") for
// --signing-key, a public key in SPKI ("PUBLIC KEY") for --trusted-key.
//
// Key paths are operator configuration, not workspace paths: they may lie
// anywhere and symlinks are followed. A key file holds exactly one PEM
// block, without headers (so no encrypted key). A private key file must
// grant no permission to group or others (mode & 077 == 0), as ssh
// insists; that is checked once the file is known to hold a private key,
// so that a public key given in its place is named as the wrong kind of
// key, not as an exposed one. Errors are the ports' closed set and never
// carry the path or any key bytes.
package keyfile

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/metricproof/metricproof/adapters/internal/bounded"
	"github.com/metricproof/metricproof/ports"
)

// maxKeyBytes bounds a key file: an Ed25519 PEM key is about 120 bytes.
const maxKeyBytes = 64 << 10

// Reader reads key files from the real filesystem.
type Reader struct{}

var _ ports.KeyReader = Reader{}

// SigningKey implements ports.KeyReader.
func (Reader) SigningKey(path string) (ed25519.PrivateKey, error) {
	block, mode, err := readPEM(path)
	if err != nil {
		return nil, err
	}
	if block.Type != "PRIVATE KEY" {
		return nil, ports.ErrKeyFormat
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, ports.ErrKeyFormat
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, ports.ErrKeyFormat
	}
	if mode.Perm()&0o077 != 0 {
		return nil, ports.ErrKeyExposed
	}
	return priv, nil
}

// TrustedKey implements ports.KeyReader.
func (Reader) TrustedKey(path string) (ed25519.PublicKey, error) {
	block, _, err := readPEM(path)
	if err != nil {
		return nil, err
	}
	if block.Type != "PUBLIC KEY" {
		return nil, ports.ErrKeyFormat
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, ports.ErrKeyFormat
	}
	pub, ok := key.(ed25519.PublicKey)
	if !ok {
		return nil, ports.ErrKeyFormat
	}
	return pub, nil
}

// readPEM reads the one PEM block of the key file at path, and the file's
// mode. The file is opened without blocking, so a FIFO is refused as not
// regular instead of waiting for a writer.
func readPEM(path string) (*pem.Block, fs.FileMode, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return nil, 0, ports.ErrMissing
	case errors.Is(err, fs.ErrPermission):
		return nil, 0, ports.ErrPermission
	case errors.Is(err, syscall.ENXIO):
		// open(2) of a socket, or of a device node without a driver.
		return nil, 0, ports.ErrNotRegular
	case err != nil:
		return nil, 0, errors.New("the key file could not be opened")
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, errors.New("the key file could not be read")
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, ports.ErrNotRegular
	}
	data, err := bounded.Read(f, maxKeyBytes, fi.Size())
	switch {
	case errors.Is(err, ports.ErrTooLarge):
		return nil, 0, ports.ErrKeyFormat
	case err != nil:
		return nil, 0, errors.New("the key file could not be read")
	}
	block, rest := pem.Decode(data)
	if block == nil || len(block.Headers) != 0 {
		return nil, 0, ports.ErrKeyFormat
	}
	if next, _ := pem.Decode(rest); next != nil {
		return nil, 0, ports.ErrKeyFormat // one key per file, never a choice
	}
	return block, fi.Mode(), nil
}
