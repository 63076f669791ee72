// Package s3test starts a real S3 server for tests: versitygw, over a
// fresh posix root, on a free loopback port, stopped when the test ends.
// The store's own tests and the program's real-process tests share it.
//
// The binary is found by [Binary]. A machine without it skips the tests
// that need it, saying in one line how to install it; with
// METRICPROOF_REQUIRE_S3=1 (as CI sets it) a missing server fails them
// instead, so CI never passes by skipping.
package s3test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Version is the versitygw release the tests are written against.
const Version = "v1.8.0"

// Install is the command that installs versitygw where [Binary] finds it.
const Install = "go install github.com/versity/versitygw/cmd/versitygw@" + Version

// Environment variables the package reads.
const (
	// BinaryEnv names the versitygw binary to use.
	BinaryEnv = "METRICPROOF_VERSITYGW"
	// RequireEnv, set to 1, makes a missing binary a failure, not a skip.
	RequireEnv = "METRICPROOF_REQUIRE_S3"
)

// Binary returns the path of versitygw: the file BinaryEnv names, else
// versitygw on PATH, else in $(go env GOPATH)/bin (where [Install] puts
// it).
func Binary() (string, error) {
	if p := os.Getenv(BinaryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s names %s, which cannot be used: %w", BinaryEnv, p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(gopath))) {
			p := filepath.Join(dir, "bin", "versitygw")
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	return "", errors.New("versitygw not found")
}

// Server is one running versitygw. Its root account's keys are Access and
// Secret.
type Server struct {
	// Endpoint is the server's base URL, http://127.0.0.1:PORT.
	Endpoint string
	Access   string
	Secret   string
	// Root is the posix directory whose subdirectories are the buckets.
	Root string

	t    testing.TB
	cmd  *exec.Cmd
	done chan struct{}
	log  *tail

	stopOnce sync.Once
}

// Options change how a server starts.
type Options struct {
	// IAM runs versitygw's internal IAM service (users with roles), kept
	// in a directory of its own; without it the root account is the only
	// one.
	IAM bool
}

// Start starts versitygw for the test and stops it at the test's end. It
// skips the test when the binary is missing, unless RequireEnv is 1.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%v, and %s=1: %s, or set %s to its path", err, RequireEnv, Install, BinaryEnv)
		}
		t.Skipf("%v: %s (or set %s) to run the tests against a real S3 server", err, Install, BinaryEnv)
	}
	base := xattrDir(t)
	// A port taken by another process between the probe and the start
	// makes the server exit at once; a few tries find a free one.
	var last error
	for range 5 {
		s, err := start(t, bin, base, opts)
		if err == nil {
			return s
		}
		last = err
	}
	t.Fatalf("versitygw did not start: %v", last)
	return nil
}

func start(t testing.TB, bin, base string, opts Options) (*Server, error) {
	dir, err := os.MkdirTemp(base, "vgw-")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	root, versions := filepath.Join(dir, "root"), filepath.Join(dir, "versions")
	for _, d := range []string{root, versions} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{
		Endpoint: "http://" + port,
		Access:   "metricproof-root",
		Secret:   "metricproof-root-secret",
		Root:     root,
		t:        t,
		done:     make(chan struct{}),
		log:      &tail{},
	}
	args := []string{"--access", s.Access, "--secret", s.Secret, "--port", port, "--health", "/health", "--quiet"}
	if opts.IAM {
		iam := filepath.Join(dir, "iam")
		if err := os.Mkdir(iam, 0o700); err != nil {
			return nil, err
		}
		args = append(args, "--iam-dir", iam)
	}
	args = append(args, "posix", "--versioning-dir", versions, root)
	s.cmd = exec.Command(bin, args...)
	// Only what the server needs: an AWS_* variable of the test's would
	// change nothing in it, and none of the caller's secrets are handed on.
	s.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.cmd.Wait()
		close(s.done)
	}()
	if err := s.ready(); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%w; its output ends: %s", err, s.log.String())
	}
	t.Cleanup(s.Stop)
	return s, nil
}

// ready waits until the server answers its health check, it exits, or a
// minute passes (a loaded 2-core machine starts an 83 MB binary slowly).
// Startup has no other signal to wait on, so this polls, every 20 ms.
func (s *Server) ready() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+"/health", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.done:
			return errors.New("versitygw exited at start")
		case <-ctx.Done():
			return errors.New("versitygw did not answer its health check within a minute")
		case <-tick.C:
		}
	}
}

// Stop ends the server and waits for it; the store's objects stay on
// disk. Calling it again does nothing.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.cmd.Process.Kill()
		<-s.done
	})
}

// Env sets the standard AWS environment for the test so that a store
// opened now reaches this server with the given keys, and nothing of the
// machine's own AWS configuration (files, profile, instance metadata)
// takes part.
func (s *Server) Env(t testing.TB, access, secret string) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           access,
		"AWS_SECRET_ACCESS_KEY":       secret,
		"AWS_REGION":                  "us-east-1",
		"AWS_ENDPOINT_URL_S3":         s.Endpoint,
		"AWS_CONFIG_FILE":             none,
		"AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
	for _, k := range []string{"AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_DEFAULT_REGION"} {
		Unsetenv(t, k)
	}
}

// Unsetenv removes k from the environment until the test ends.
func Unsetenv(t testing.TB, k string) {
	t.Helper()
	t.Setenv(k, "") // restored at the end
	os.Unsetenv(k)
}

// RootEnv is Env with the root account's keys.
func (s *Server) RootEnv(t testing.TB) { s.Env(t, s.Access, s.Secret) }

// freePort returns a loopback address whose port was free a moment ago.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// tail keeps the last 4 KiB a process wrote, for a failure's message.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (w *tail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > 4096 {
		w.buf = w.buf[len(w.buf)-4096:]
	}
	return len(p), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.ReplaceAll(strings.TrimSpace(string(w.buf)), "\n", " | ")
}
