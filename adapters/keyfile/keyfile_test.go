//go:build unix

package keyfile_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/keyfile"
	"github.com/metricproof/metricproof/ports"
)

// keys are the key materials every case draws on, made once per test.
type keys struct {
	priv      ed25519.PrivateKey
	privPEM   []byte // PKCS#8 "PRIVATE KEY"
	pubPEM    []byte // SPKI "PUBLIC KEY"
	other     []byte // a second Ed25519 private key, PKCS#8
	rsaPriv   []byte // PKCS#8 "PRIVATE KEY" of an RSA key
	rsaPub    []byte // SPKI "PUBLIC KEY" of an RSA key
	rsaPKCS1  []byte // "RSA PRIVATE KEY"
	ecPriv    []byte // PKCS#8 "PRIVATE KEY" of a P-256 key
	ecPub     []byte // SPKI "PUBLIC KEY" of a P-256 key
	ecSEC1    []byte // "EC PRIVATE KEY"
	withHead  []byte // the private key with a PEM header
	pubAsPriv []byte // the public key's DER labelled "PRIVATE KEY"
	privAsPub []byte // the private key's DER labelled "PUBLIC KEY"
}

func newKeys(t *testing.T) keys {
	t.Helper()
	enc := func(typ string, der []byte, headers map[string]string) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: typ, Headers: headers, Bytes: der})
	}
	must := func(der []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	privDER := must(x509.MarshalPKCS8PrivateKey(priv))
	pubDER := must(x509.MarshalPKIXPublicKey(pub))
	return keys{
		priv:      priv,
		privPEM:   enc("PRIVATE KEY", privDER, nil),
		pubPEM:    enc("PUBLIC KEY", pubDER, nil),
		other:     enc("PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(other)), nil),
		rsaPriv:   enc("PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(rsaKey)), nil),
		rsaPub:    enc("PUBLIC KEY", must(x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)), nil),
		rsaPKCS1:  enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey), nil),
		ecPriv:    enc("PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(ecKey)), nil),
		ecPub:     enc("PUBLIC KEY", must(x509.MarshalPKIXPublicKey(&ecKey.PublicKey)), nil),
		ecSEC1:    enc("EC PRIVATE KEY", must(x509.MarshalECPrivateKey(ecKey)), nil),
		withHead:  enc("PRIVATE KEY", privDER, map[string]string{"Comment": "made for a test"}),
		pubAsPriv: enc("PRIVATE KEY", pubDER, nil),
		privAsPub: enc("PUBLIC KEY", privDER, nil),
	}
}

// keyCase is one key file and what each reader must say about it.
type keyCase struct {
	name string
	// file makes the key file in dir and returns the path to give.
	file func(t *testing.T, dir string) string
	// signing and trusted are what SigningKey and TrustedKey return: nil
	// for the test's key, else the exact port error.
	signing, trusted error
}

// keyFile writes data at dir/name with mode (chmod'ed, so the umask does
// not interfere) and returns the path.
func keyFile(name string, data []byte, mode os.FileMode) func(t *testing.T, dir string) string {
	return func(t *testing.T, dir string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

func keyCases(k keys) []keyCase {
	priv := func(data []byte) func(*testing.T, string) string { return keyFile("key.pem", data, 0o600) }
	pub := func(data []byte) func(*testing.T, string) string { return keyFile("key.pub.pem", data, 0o644) }
	cs := []keyCase{
		{"the private key, mode 0600", priv(k.privPEM), nil, ports.ErrKeyFormat},
		{"the private key, mode 0400", keyFile("key.pem", k.privPEM, 0o400), nil, ports.ErrKeyFormat},
		{"the private key, mode 0700", keyFile("key.pem", k.privPEM, 0o700), nil, ports.ErrKeyFormat},
		// The wrong half of the pair is named as the wrong kind of key,
		// whatever its mode: chmod would not help.
		{"the public key, mode 0644", pub(k.pubPEM), ports.ErrKeyFormat, nil},
		{"the public key, mode 0600", keyFile("key.pub.pem", k.pubPEM, 0o600), ports.ErrKeyFormat, nil},
		{"the private key with CRLF line ends", priv(bytes.ReplaceAll(k.privPEM, []byte("\n"), []byte("\r\n"))), nil, ports.ErrKeyFormat},
		{"the private key after a line of text", priv(append([]byte("my signing key\n"), k.privPEM...)), nil, ports.ErrKeyFormat},
		{"the private key through a symlink", func(t *testing.T, dir string) string {
			target := keyFile("real.pem", k.privPEM, 0o600)(t, dir)
			link := filepath.Join(dir, "link.pem")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, nil, ports.ErrKeyFormat},

		{"a missing file", func(_ *testing.T, dir string) string { return filepath.Join(dir, "absent.pem") }, ports.ErrMissing, ports.ErrMissing},
		{"a path through a regular file", func(t *testing.T, dir string) string {
			return filepath.Join(keyFile("file", []byte("x"), 0o600)(t, dir), "key.pem")
		}, ports.ErrMissing, ports.ErrMissing},
		{"a dangling symlink", func(t *testing.T, dir string) string {
			link := filepath.Join(dir, "dangling.pem")
			if err := os.Symlink("nowhere.pem", link); err != nil {
				t.Fatal(err)
			}
			return link
		}, ports.ErrMissing, ports.ErrMissing},
		{"a directory", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "keys")
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			return p
		}, ports.ErrNotRegular, ports.ErrNotRegular},
		// No writer ever opens it: a reader that waited for one would hang
		// the test.
		{"a FIFO", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "fifo.pem")
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, ports.ErrNotRegular, ports.ErrNotRegular},
		{"a character device", func(*testing.T, string) string { return "/dev/zero" }, ports.ErrNotRegular, ports.ErrNotRegular},
		// open(2) of a socket fails (ENXIO) where a FIFO's succeeds.
		{"a socket", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "sock.pem")
			if err := syscall.Mknod(p, syscall.S_IFSOCK|0o600, 0); err != nil {
				t.Fatal(err)
			}
			return p
		}, ports.ErrNotRegular, ports.ErrNotRegular},

		{"an empty file", priv(nil), ports.ErrKeyFormat, ports.ErrKeyFormat},
		{"text that is not PEM", priv([]byte("this is not a key\n")), ports.ErrKeyFormat, ports.ErrKeyFormat},
		{"the private key's DER without PEM", priv(mustDecode(k.privPEM)), ports.ErrKeyFormat, ports.ErrKeyFormat},
		{"a truncated PEM block", priv(k.privPEM[:len(k.privPEM)/2]), ports.ErrKeyFormat, ports.ErrKeyFormat},
		{"a file over 64 KiB", priv(append(bytes.Repeat([]byte("#\n"), 32<<10), k.privPEM...)), ports.ErrKeyFormat, ports.ErrKeyFormat},
		{"an RSA private key in PKCS#8", priv(k.rsaPriv), ports.ErrKeyFormat, ports.ErrKeyFormat},
		{"an RSA private key in PKCS#1", priv(k.rsaPKCS1), ports.ErrKeyFormat, ports.ErrKeyFormat},
		{"an RSA public key", pub(k.rsaPub), ports.ErrKeyFormat, ports.ErrKeyFormat},
		{"an EC private key in PKCS#8", priv(k.ecPriv), ports.ErrKeyFormat, ports.ErrKeyFormat},
		{"an EC private key in SEC 1", priv(k.ecSEC1), ports.ErrKeyFormat, ports.ErrKeyFormat},
		{"an EC public key", pub(k.ecPub), ports.ErrKeyFormat, ports.ErrKeyFormat},
		{"the public key's DER labelled PRIVATE KEY", priv(k.pubAsPriv), ports.ErrKeyFormat, ports.ErrKeyFormat},
		{"the private key's DER labelled PUBLIC KEY", pub(k.privAsPub), ports.ErrKeyFormat, ports.ErrKeyFormat},
		{"the private key with a PEM header", priv(k.withHead), ports.ErrKeyFormat, ports.ErrKeyFormat},
		{"the private key followed by a second private key", priv(append(append([]byte{}, k.privPEM...), k.other...)), ports.ErrKeyFormat, ports.ErrKeyFormat},
		{"the private key followed by its public key", priv(append(append([]byte{}, k.privPEM...), k.pubPEM...)), ports.ErrKeyFormat, ports.ErrKeyFormat},
		{"the public key followed by a second public key", pub(append(append([]byte{}, k.pubPEM...), k.pubPEM...)), ports.ErrKeyFormat, ports.ErrKeyFormat},
	}
	// Any permission bit for group or others exposes a private key; a
	// public key may be read by anyone.
	for _, mode := range []os.FileMode{0o640, 0o604, 0o644, 0o660, 0o601, 0o602, 0o610, 0o620, 0o666, 0o777, 0o440, 0o404} {
		cs = append(cs, keyCase{
			name:    fmt.Sprintf("the private key, mode %04o", mode),
			file:    keyFile("key.pem", k.privPEM, mode),
			signing: ports.ErrKeyExposed, trusted: ports.ErrKeyFormat,
		})
	}
	return cs
}

func mustDecode(data []byte) []byte {
	b, _ := pem.Decode(data)
	return b.Bytes
}

// TestKeyFilesAnswerTheExactPortError reads every kind of key file, real
// files in t.TempDir(), through both readers: a good key comes back as the
// key that was written, anything else as the exact port error, never an
// error that carries the path.
func TestKeyFilesAnswerTheExactPortError(t *testing.T) {
	k := newKeys(t)
	wantPub := k.priv.Public().(ed25519.PublicKey)
	for _, c := range keyCases(k) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			path := c.file(t, t.TempDir())

			priv, err := keyfile.Reader{}.SigningKey(path)
			is.Equal(err, c.signing) // SigningKey's error
			if c.signing == nil {
				is.True(priv.Equal(k.priv)) // the key written is the key read
			} else {
				is.Equal(priv, nil)
			}

			pub, err := keyfile.Reader{}.TrustedKey(path)
			is.Equal(err, c.trusted) // TrustedKey's error
			if c.trusted == nil {
				is.True(pub.Equal(wantPub)) // the key written is the key read
			} else {
				is.Equal(pub, nil)
			}
		})
	}
}

// TestAnUnreadableKeyFileIsPermissionDenied: a key file this user may not
// read is ports.ErrPermission, for either reader. Root reads anything, so
// the case needs an unprivileged user.
func TestAnUnreadableKeyFileIsPermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root, which may read any file")
	}
	is := is.New(t)
	path := keyFile("key.pem", newKeys(t).privPEM, 0o000)(t, t.TempDir())
	_, err := keyfile.Reader{}.SigningKey(path)
	is.Equal(err, ports.ErrPermission)
	_, err = keyfile.Reader{}.TrustedKey(path)
	is.Equal(err, ports.ErrPermission)
}

// TestKeysMadeByOpenSSLAreRead: the keys README tells the operator to make
// (openssl genpkey -algorithm ed25519, openssl pkey -pubout) are read, and
// are one pair; openssl's other key kinds and its encrypted private keys
// are refused as the wrong kind.
func TestKeysMadeByOpenSSLAreRead(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed; the keys made with crypto/ed25519 cover the format")
	}
	is := is.New(t)
	dir := t.TempDir()
	openssl := func(t *testing.T, args ...string) {
		t.Helper()
		cmd := exec.Command("openssl", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	openssl(t, "genpkey", "-algorithm", "ed25519", "-out", "key.pem")
	is.NoErr(os.Chmod(filepath.Join(dir, "key.pem"), 0o600))
	openssl(t, "pkey", "-in", "key.pem", "-pubout", "-out", "key.pub.pem")

	priv, err := keyfile.Reader{}.SigningKey(filepath.Join(dir, "key.pem"))
	is.NoErr(err)
	pub, err := keyfile.Reader{}.TrustedKey(filepath.Join(dir, "key.pub.pem"))
	is.NoErr(err)
	is.True(pub.Equal(priv.Public())) // openssl's pair is one pair
	_, err = keyfile.Reader{}.SigningKey(filepath.Join(dir, "key.pub.pem"))
	is.Equal(err, ports.ErrKeyFormat) // the public key is no signing key
	_, err = keyfile.Reader{}.TrustedKey(filepath.Join(dir, "key.pem"))
	is.Equal(err, ports.ErrKeyFormat) // the private key is no trusted key

	others := []struct {
		name string
		args []string
	}{
		{"ed448.pem", []string{"genpkey", "-algorithm", "ed448", "-out", "ed448.pem"}},
		{"x25519.pem", []string{"genpkey", "-algorithm", "x25519", "-out", "x25519.pem"}},
		{"rsa.pem", []string{"genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "rsa.pem"}},
		{"ec.pem", []string{"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "ec.pem"}},
		{"encrypted.pem", []string{"genpkey", "-algorithm", "ed25519", "-aes-256-cbc", "-pass", "pass:secret", "-out", "encrypted.pem"}},
	}
	for _, o := range others {
		t.Run(o.name, func(t *testing.T) {
			is := is.New(t)
			openssl(t, o.args...)
			p := filepath.Join(dir, o.name)
			is.NoErr(os.Chmod(p, 0o600))
			_, err := keyfile.Reader{}.SigningKey(p)
			is.Equal(err, ports.ErrKeyFormat) // not an Ed25519 private key
		})
	}
}
