package osfs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/porttest"
	"github.com/metricproof/metricproof/adapters/stdio"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/internal/testutil"
	"github.com/metricproof/metricproof/ports"
)

// An I/O fault is answered through the app as the operator needs it: the
// code, the cause in words with what to do about it, never an absolute
// path (the injected errors carry one, as the kernel's do), nothing
// committed and no pending directory left. CI runs as root, where chmod
// denies nothing, so the errnos are injected at the workspace's seams;
// the too-long names are real.
func TestIOFaultsNameTheirCause(t *testing.T) {
	long := strings.Repeat("n", 300) // over NAME_MAX (255) on every Linux filesystem
	tests := []struct {
		name   string
		inject func(w *Workspace)
		out    string // --output-dir; "runs" when empty
		extra  []string
		verify bool // the call is verify_result of a run committed first
		code   string
		cause  string // "" for none
		// writing: the fault met the writing of the run, so the message
		// must say that nothing was committed.
		writing bool
	}{
		{name: "a full disk on a file write", inject: func(w *Workspace) {
			w.write = func(f *os.File, _ []byte) (int, error) {
				return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
			}
		}, writing: true, code: "IO_OR_NUMERIC_ERROR", cause: "no space left on the device"},
		{name: "a quota reached on a file's fsync", inject: func(w *Workspace) {
			w.sync = func(f *os.File) error {
				return &fs.PathError{Op: "sync", Path: f.Name(), Err: syscall.EDQUOT}
			}
		}, writing: true, code: "IO_OR_NUMERIC_ERROR", cause: "disk quota exceeded"},
		{name: "a read-only mount on creating the output directory", inject: func(w *Workspace) {
			w.mkdir = func(_ *os.Root, name string, _ fs.FileMode) error {
				return &fs.PathError{Op: "mkdirat", Path: filepath.Join(w.real, name), Err: syscall.EROFS}
			}
		}, writing: true, code: "IO_OR_NUMERIC_ERROR", cause: "read-only file system"},
		{name: "a denied permission on creating the lock file", inject: func(w *Workspace) {
			w.openFile = failOpen(w.openFile, ports.LockFile, syscall.EACCES)
		}, writing: true, code: "IO_OR_NUMERIC_ERROR", cause: "permission denied"},
		{name: "a denied operation on creating the pending directory", inject: func(w *Workspace) {
			mkdir := w.mkdir
			w.mkdir = func(dir *os.Root, name string, perm fs.FileMode) error {
				if strings.HasPrefix(name, ports.PendingPrefix) {
					return &fs.PathError{Op: "mkdirat", Path: name, Err: syscall.EPERM}
				}
				return mkdir(dir, name, perm)
			}
		}, writing: true, code: "IO_OR_NUMERIC_ERROR", cause: "permission denied"},
		{name: "a full disk on the commit rename", inject: func(w *Workspace) {
			w.rename = func(*os.File, string, string) error { return syscall.ENOSPC }
		}, writing: true, code: "IO_OR_NUMERIC_ERROR", cause: "no space left on the device"},
		{name: "a fault with no known cause names none", inject: func(w *Workspace) {
			w.write = func(f *os.File, _ []byte) (int, error) {
				return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.EIO}
			}
		}, writing: true, code: "IO_OR_NUMERIC_ERROR"},
		{name: "a denied permission on reading a source", inject: func(w *Workspace) {
			w.openFile = failOpen(w.openFile, "data/groups.csv", syscall.EACCES)
		}, code: "IO_OR_NUMERIC_ERROR", cause: "permission denied"},
		{name: "a denied permission on reading a saved file", inject: func(w *Workspace) {
			w.openFile = failOpen(w.openFile, "result.json", syscall.EACCES)
		}, verify: true, code: "IO_OR_NUMERIC_ERROR", cause: "permission denied"},
		// Real, not injected: lstat of a 300-byte name is ENAMETOOLONG. An
		// output directory that can never exist is the operator's to fix:
		// INVALID_OUTPUT, whether the resolution or the creation meets it.
		{name: "an output directory with a name too long", out: long, code: "INVALID_OUTPUT", cause: "name too long"},
		{name: "a new output directory with a name too long", out: "runs/" + long, code: "INVALID_OUTPUT", cause: "name too long"},
		{name: "a ledger with a name too long", extra: []string{"--ledger", long}, code: "INVALID_OUTPUT", cause: "name too long"},
		{name: "a cancel file with a name too long", extra: []string{"--cancel-file", long + "/stop"}, code: "IO_OR_NUMERIC_ERROR", cause: "name too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			dir := faultWorkspace(t)
			out := tt.out
			if out == "" {
				out = "runs"
			}
			digest := callApp(t, nil, inspectRequest(), "--workspace", dir).result["source_digest"].(string)
			request := `{"request_id":"r1","tool":"analyze","arguments":{"expected_source_digest":"` + digest + `"}}`
			if tt.verify {
				is.Equal(callApp(t, nil, request, "--workspace", dir, "--output-dir", out).exit, 0) // a run to verify
				request = `{"request_id":"v1","tool":"verify_result","arguments":{"run_id":"r1"}}`
			}
			before := treeOf(t, dir)

			r := callApp(t, tt.inject, request, append([]string{"--workspace", dir, "--output-dir", out}, tt.extra...)...)
			is.Equal(r.code, tt.code)
			is.Equal(r.exit, 1)
			t.Log(r.message)
			is.True(!absolutePath.MatchString(r.raw))        // no absolute path
			is.True(!strings.Contains(r.raw, dir))           // not even the workspace's
			is.True(!strings.Contains(r.message, long[:64])) // nor a name the kernel refused
			if tt.cause != "" {
				is.True(strings.Contains(r.message, "("+tt.cause+": ")) // the cause in words, and what to do
			} else {
				is.True(!strings.Contains(r.message, "(")) // no cause that was not there
			}
			if tt.writing {
				is.True(strings.HasSuffix(r.message, "; nothing was committed")) // says the run is not there
			}

			// Nothing committed, no pending directory: at most the output
			// directory and its lock file are new, and nothing else changed.
			after := treeOf(t, dir)
			for name := range before {
				is.True(after[name]) // nothing removed
			}
			for name := range after {
				if !before[name] {
					is.True(name == "runs" || name == "runs/"+ports.LockFile) // only the output directory and its lock
				}
			}
		})
	}
}

// A workspace path the kernel refuses is named as such: a 300-byte name
// is ENAMETOOLONG from stat, for real.
func TestAWorkspaceWithANameTooLongSaysSo(t *testing.T) {
	is := is.New(t)
	dir := filepath.Join(t.TempDir(), strings.Repeat("w", 300))
	r := callApp(t, nil, inspectRequest(), "--workspace", dir)
	is.Equal(r.code, "MISSING_WORKSPACE")
	is.Equal(r.message, "the workspace cannot be opened (name too long: choose a shorter path)")
}

// failOpen makes openFile fail with errno for the file named name, and
// open everything else as before.
func failOpen(openFile func(*os.Root, string, int, fs.FileMode) (*os.File, error), name string, errno syscall.Errno) func(*os.Root, string, int, fs.FileMode) (*os.File, error) {
	return func(dir *os.Root, n string, flag int, perm fs.FileMode) (*os.File, error) {
		if n == name || strings.HasSuffix(n, "/"+name) {
			return nil, &fs.PathError{Op: "openat", Path: filepath.Join(dir.Name(), n), Err: errno}
		}
		return openFile(dir, n, flag, perm)
	}
}

// Every cause the ports name is recognised from its errnos, and a wrapped
// error is wrapped once.
func TestWithCauseNamesEachErrno(t *testing.T) {
	tests := []struct {
		errno syscall.Errno
		cause error
	}{
		{syscall.ENOSPC, ports.ErrNoSpace},
		{syscall.EDQUOT, ports.ErrQuota},
		{syscall.EROFS, ports.ErrReadOnly},
		{syscall.EACCES, ports.ErrPermission},
		{syscall.EPERM, ports.ErrPermission},
		{syscall.ENAMETOOLONG, ports.ErrNameTooLong},
		{syscall.EIO, nil},
	}
	for _, tt := range tests {
		t.Run(tt.errno.Error(), func(t *testing.T) {
			is := is.New(t)
			err := withCause(&fs.PathError{Op: "open", Path: "/abs/x", Err: tt.errno})
			is.True(errors.Is(err, tt.errno)) // the OS error stays inside
			for _, c := range ports.IOCauses() {
				is.Equal(errors.Is(err, c), c == tt.cause) // exactly its own cause
			}
			again := withCause(err)
			var f *ioFault
			if errors.As(again, &f) {
				var inner *ioFault
				is.True(!errors.As(f.err, &inner)) // wrapped once
			}
		})
	}
	is := is.New(t)
	is.NoErr(withCause(nil))
	is.Equal(withCause(ports.ErrMissing), ports.ErrMissing) // the ports' own errors pass as they are
}

// faultWorkspace copies the shipped fixture into a fresh directory.
func faultWorkspace(t *testing.T) string {
	t.Helper()
	return testutil.CopyFixture(t, t.TempDir())
}

func inspectRequest() string {
	return `{"request_id":"i1","tool":"inspect_inputs","arguments":{}}`
}

// appAnswer is one answer of the app, decoded.
type appAnswer struct {
	raw, code, message string
	exit               int
	result             map[string]any
}

// callApp answers request through the one-shot transport and the app, on
// this workspace adapter with inject applied to it (when not nil).
func callApp(t *testing.T, inject func(*Workspace), request string, args ...string) appAnswer {
	t.Helper()
	var out bytes.Buffer
	a := appAnswer{exit: stdio.Run(context.Background(), args, strings.NewReader(request), &out, wireWith(inject)), raw: out.String()}
	var body struct {
		Result map[string]any `json:"result"`
		Error  *struct {
			Code, Message string
		} `json:"error"`
	}
	if err := json.Unmarshal(out.Bytes(), &body); err != nil {
		t.Fatalf("not one JSON answer: %v: %q", err, out.String())
	}
	a.result = body.Result
	if body.Error != nil {
		a.code, a.message = body.Error.Code, body.Error.Message
	}
	return a
}

// wireWith wires the app on this workspace adapter with inject applied to
// it (when not nil), a fixed clock and a fixed engine.
func wireWith(inject func(*Workspace)) app.Wire {
	return func(o app.Options) (app.Ports, io.Closer, error) {
		w, err := Open(o.Workspace)
		if err != nil {
			return app.Ports{}, nil, err
		}
		if inject != nil {
			inject(w)
		}
		return app.Ports{
			Sources: w, Paths: w, Evidence: w, Ledger: w, Cancel: w.Marker(o.CancelFile),
			Clock:  porttest.FixedClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)),
			Engine: porttest.FixedEngine{SHA256: strings.Repeat("e", 64), GoVersion: "go1.26.8"},
		}, w, nil
	}
}

// absolutePath finds what looks like an absolute path inside a JSON string.
var absolutePath = regexp.MustCompile(`"/[^"]*|[ (]/[A-Za-z]`)

// treeOf lists every path under root, relative, without following links.
func treeOf(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		names[filepath.ToSlash(rel)] = true
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}
