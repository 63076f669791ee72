package remote_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/metricproof/metricproof/adapters/remote"
	"github.com/metricproof/metricproof/internal/testutil"
)

// refused waits until the fixture's port takes no connection.
func refused(t *testing.T, f *fixture) {
	t.Helper()
	addr := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(f.srv.URL(), "http://"), "https://"), remote.PathMCP)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(time.Millisecond) // nothing tells when a port stops accepting: it is polled
	}
	t.Fatal("the server still accepts connections after its stop")
}

// On stop the server accepts no more, and the calls in flight finish and
// are answered; Serve then returns nil.
func TestAStopLetsCallsInFlightFinish(t *testing.T) {
	for _, version := range []string{stateless, handshake} {
		t.Run(version, func(t *testing.T) {
			is := is.New(t)
			f := start(t, false, nil)
			token := f.token(t, remote.ScopeRead+" "+remote.ScopeRun)
			done := make(chan seen, 3)
			for range 3 {
				cs, err := connect(context.Background(), f.srv.URL(), version, &recorder{token: token})
				is.NoErr(err)
				defer cs.Close()
				go func() {
					got, err := call(context.Background(), cs, "block")
					if err != nil {
						got.Tool = err.Error()
					}
					done <- got
				}()
			}
			for range 3 {
				<-f.toy.arrived
			}
			f.stop()
			refused(t, f)
			f.toy.releaseAll()
			for range 3 {
				got := <-done
				is.Equal(got.Tool, "block") // answered
				is.True(!got.Cancelled)
			}
			is.NoErr(f.wait())
		})
	}
}

// Past the stop's grace the calls still running are cancelled, and each
// still answers.
func TestPastTheGraceCallsAreCancelledAndAnswered(t *testing.T) {
	for _, version := range []string{stateless, handshake} {
		t.Run(version, func(t *testing.T) {
			is := is.New(t)
			limits := remote.DefaultLimits()
			// CancelGrace, the wait for the cancelled calls' answers, only
			// guards against a hang here: long, for a busy machine.
			limits.StopGrace, limits.CancelGrace = 50*time.Millisecond, time.Minute
			f := start(t, false, func(o *remote.Options) { o.Limits = limits })
			token := f.token(t, remote.ScopeRead+" "+remote.ScopeRun)
			done := make(chan seen, 2)
			for range 2 {
				cs, err := connect(context.Background(), f.srv.URL(), version, &recorder{token: token})
				is.NoErr(err)
				defer cs.Close()
				go func() {
					got, err := call(context.Background(), cs, "block")
					if err != nil {
						got.Tool = err.Error()
					}
					done <- got
				}()
			}
			for range 2 {
				<-f.toy.arrived
			}
			f.stop()
			is.NoErr(f.wait())
			for range 2 {
				got := <-done
				is.Equal(got.Tool, "block") // answered
				is.True(got.Cancelled)      // after its context ended
			}
		})
	}
}

// A call that ignores its cancellation cannot hold the stop: past both
// graces the front ends the requests and closes their connections.
func TestAStopEndsWithinItsGracesWhateverTheCallsDo(t *testing.T) {
	for _, version := range []string{stateless, handshake} {
		t.Run(version, func(t *testing.T) {
			is := is.New(t)
			limits := remote.DefaultLimits()
			limits.StopGrace, limits.CancelGrace = 50*time.Millisecond, 50*time.Millisecond
			f := start(t, true, func(o *remote.Options) { o.Limits, o.CancelCalls = limits, nil })
			cs, err := connect(context.Background(), f.srv.URL(), version, &recorder{})
			is.NoErr(err)
			defer cs.Close()
			done := make(chan error, 1)
			go func() {
				_, err := call(context.Background(), cs, "block")
				done <- err
			}()
			<-f.toy.arrived
			f.stop()
			is.NoErr(f.wait())
			refused(t, f)
			f.toy.releaseAll()
			<-done // answered or not, the client is not left waiting
		})
	}
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key.
func writeCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// With --tls-cert and --tls-key the server speaks TLS 1.2 or later only,
// and says https in its listening line.
func TestTLS(t *testing.T) {
	is := is.New(t)
	certFile, keyFile, pool := writeCert(t, t.TempDir())
	f := start(t, false, func(o *remote.Options) { o.TLSCert, o.TLSKey = certFile, keyFile })
	is.True(strings.HasPrefix(f.srv.URL(), "https://127.0.0.1:"))
	is.Equal(f.stderr.String(), `{"listening":"`+f.srv.URL()+`"}`+"\n")
	client := func(maxVersion uint16) *http.Transport {
		return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MaxVersion: maxVersion}}
	}
	rec := &recorder{token: f.token(t, remote.ScopeRead+" "+remote.ScopeRun), base: client(0)}
	cs, err := connect(context.Background(), f.srv.URL(), stateless, rec)
	is.NoErr(err)
	defer cs.Close()
	got, err := call(context.Background(), cs, "analyze")
	is.NoErr(err)
	is.Equal(got.Tool, "analyze")
	for _, old := range []uint16{tls.VersionTLS10, tls.VersionTLS11} {
		_, err = (&http.Client{Transport: client(old)}).Get(strings.Replace(f.srv.URL(), remote.PathMCP, remote.PathHealth, 1))
		is.True(err != nil) // no handshake below TLS 1.2
	}
	_, err = (&http.Client{Transport: client(tls.VersionTLS12)}).Get(strings.Replace(f.srv.URL(), remote.PathMCP, remote.PathHealth, 1))
	is.NoErr(err)
}

// Every option the front cannot serve is an OptionError naming it, and no
// path. Check refuses each as Listen does, but those only a bind or a
// file's bytes can show.
func TestBadOptionsAreRefusedBeforeServing(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := writeCert(t, dir)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	withAuth := &remote.Auth{Issuer: "https://issuer.example", Resource: resource,
		Verify: func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
			return nil, errors.New("unused")
		}}
	tests := []struct {
		name   string
		change func(*remote.Options)
		option string // "" when it listens; ending in "!" when only Listen can tell
	}{
		{"no port", func(o *remote.Options) { o.Addr = "127.0.0.1" }, "--http"},
		{"no host", func(o *remote.Options) { o.Addr = ":0" }, "--http"},
		{"a port out of range", func(o *remote.Options) { o.Addr = "127.0.0.1:65536" }, "--http"},
		{"a port that is a name", func(o *remote.Options) { o.Addr = "127.0.0.1:http" }, "--http"},
		{"a port in use", func(o *remote.Options) { o.Addr = busy.Addr().String() }, "--http!"},
		{"all addresses without authorization", func(o *remote.Options) { o.Addr = "0.0.0.0:0" }, "--auth-issuer"},
		{"all IPv6 addresses without authorization", func(o *remote.Options) { o.Addr = "[::]:0" }, "--auth-issuer"},
		{"a name without authorization", func(o *remote.Options) { o.Addr = "example.com:0" }, "--auth-issuer"},
		{"all addresses with authorization", func(o *remote.Options) { o.Addr = "0.0.0.0:0"; o.Auth = withAuth }, ""},
		{"localhost without authorization", func(o *remote.Options) { o.Addr = "localhost:0" }, ""},
		{"an allowed host with a scheme", func(o *remote.Options) { o.AllowedHosts = []string{"https://mcp.example.com"} }, "--allowed-host"},
		{"an allowed host with a path", func(o *remote.Options) { o.AllowedHosts = []string{"mcp.example.com/mcp"} }, "--allowed-host"},
		{"an empty allowed host", func(o *remote.Options) { o.AllowedHosts = []string{""} }, "--allowed-host"},
		{"a wildcard allowed host", func(o *remote.Options) { o.AllowedHosts = []string{"*.example.com"} }, "--allowed-host"},
		{"an allowed origin without a scheme", func(o *remote.Options) { o.AllowedOrigins = []string{"app.example.com"} }, "--allowed-origin"},
		{"an allowed origin with a path", func(o *remote.Options) { o.AllowedOrigins = []string{"https://app.example.com/x"} }, "--allowed-origin"},
		{"an allowed origin of ftp", func(o *remote.Options) { o.AllowedOrigins = []string{"ftp://app.example.com"} }, "--allowed-origin"},
		{"a certificate without its key", func(o *remote.Options) { o.TLSCert = certFile }, "--tls-cert"},
		{"a key without its certificate", func(o *remote.Options) { o.TLSKey = keyFile }, "--tls-cert"},
		{"a certificate that is a key", func(o *remote.Options) { o.TLSCert, o.TLSKey = keyFile, keyFile }, "--tls-cert!"},
		{"a missing certificate", func(o *remote.Options) { o.TLSCert, o.TLSKey = filepath.Join(dir, "none"), keyFile }, "--tls-cert!"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			o := remote.Options{Addr: "127.0.0.1:0", MCP: http.NotFoundHandler(), Stderr: &testutil.SyncBuffer{}}
			tt.change(&o)
			option, listenOnly := strings.CutSuffix(tt.option, "!")
			if err := remote.Check(o); option == "" || listenOnly {
				is.NoErr(err) // binds nothing, reads no file
			} else {
				var oe *remote.OptionError
				is.True(errors.As(err, &oe))
				is.Equal(oe.Option, option)
			}
			srv, err := remote.Listen(o)
			if tt.option == "" {
				is.NoErr(err)
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				is.NoErr(srv.Serve(ctx)) // closes what it bound
				return
			}
			var oe *remote.OptionError
			is.True(errors.As(err, &oe))
			is.Equal(oe.Option, option)
			is.True(!strings.Contains(err.Error(), dir)) // no path
		})
	}
}
