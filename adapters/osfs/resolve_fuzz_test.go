//go:build linux

package osfs_test

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/adapters/osfs"
	"github.com/metricproof/metricproof/ports"
)

// FuzzResolve builds, from the fuzz bytes, a small tree on a real disk
// (directories, files, relative and absolute symlinks, targets with "..",
// links that leave the workspace and come back) and a path into it, and
// holds Workspace.Resolve to the kernel's own resolution of that path: the
// kernel opens it (O_PATH) and /proc/self/fd names where it landed.
//
//   - The whole path resolves: Resolve finds the same place, inside the
//     workspace (Rel, Exists, Dir, Regular as os.Stat says) or ErrOutside.
//   - The kernel stops at a component that does not exist, and the rest
//     holds no "..": the missing tail is taken as written below the last
//     directory the kernel reached (Exists false), or ErrOutside when that
//     directory is outside.
//   - The kernel fails with ELOOP or ENOTDIR: Resolve fails too.
//
// Where the protocol leaves the answer open (a dangling symlink on the way, ".."
// after a missing component) only the shape of the answer is checked.
//
//	go test ./adapters/osfs -run '^$' -fuzz '^FuzzResolve$' -fuzztime 30s -fuzzminimizetime 2s
func FuzzResolve(f *testing.F) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		f.Skip("no /proc/self/fd to ask the kernel where a path leads")
	}
	// Seeds, in the encoding of buildTree and buildQuery: a count of
	// entries; each entry's kind (mkdir, file, relative link, absolute
	// link), parent (ws, out, base, then directories made), name (a, b, c),
	// and for a link its target's length-1 and components (a b c .. x ws
	// out .), then for an absolute one its anchor (base, ws, out); last the
	// path's length-1, components (a b c .. x ws out) and form (relative,
	// absolute from ws, absolute from base).
	for _, seed := range []struct{ name, data string }{
		{"an absolute link to the parent, then back in: upabs/ws/x (issue 7)", "\x01\x03\x00\x00\x00\x07\x00\x02\x00\x05\x04\x00"},
		{"its relative twin: uprel/ws/x", "\x01\x02\x00\x00\x00\x03\x02\x00\x05\x04\x00"},
		{"a link out and back in to a directory", "\x02\x00\x00\x01\x02\x00\x00\x02\x03\x05\x01\x01\x00\x04\x00"},
		{"an absolute link inside", "\x02\x00\x00\x01\x03\x00\x00\x00\x01\x01\x01\x00\x04\x00"},
		{"a chain through the sibling", "\x02\x02\x01\x00\x01\x03\x05\x02\x00\x01\x02\x03\x06\x00\x01\x01\x04\x00"},
		{"dot-dot after a link outside", "\x02\x00\x01\x01\x02\x00\x00\x02\x03\x06\x01\x02\x00\x03\x04\x00"},
		{"a loop", "\x02\x02\x00\x00\x00\x01\x02\x00\x01\x00\x00\x00\x00\x00"},
		{"the sibling's absolute link into the workspace", "\x01\x03\x01\x00\x00\x07\x01\x02\x06\x00\x04\x02"},
		{"a file in the way", "\x01\x01\x00\x00\x01\x00\x04\x01"},
		{"a dangling link", "\x01\x02\x00\x00\x00\x04\x01\x00\x01\x00"},
		{"above the workspace and back", "\x00\x02\x03\x05\x04\x00"},
		{"a file, then dot-dot", "\x01\x01\x00\x00\x02\x00\x04\x03\x01"},
	} {
		f.Add([]byte(seed.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		base, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		ws, outside := base+"/ws", base+"/out"
		for _, d := range []string{ws, outside} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		ops := &bytesOf{b: data}
		tree := buildTree(t, ops, base, ws, outside)
		query, kernelPath, comps, anchor := buildQuery(ops, base, ws)

		w, err := osfs.Open(ws)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		got, gotErr := w.Resolve(query)
		if gotErr == nil && (filepath.IsAbs(got.Rel) || got.Rel == "" || strings.Contains(got.Rel, base)) {
			t.Fatalf("Resolve(%q) = %+v: not a workspace-relative path\n%s", query, got, tree)
		}

		want, wantErr, decided := kernelAnswer(ws, kernelPath, anchor, comps)
		if !decided {
			return
		}
		disagree := func(what string) {
			t.Helper()
			t.Fatalf("%s\nResolve(%q) = %+v, %v\nkernel: %+v, %v (%s)\n%s", what, query, got, gotErr, want, wantErr, kernelPath, tree)
		}
		switch {
		case errors.Is(wantErr, ports.ErrOutside):
			if !errors.Is(gotErr, ports.ErrOutside) {
				disagree("the kernel lands outside the workspace")
			}
		case wantErr != nil:
			if gotErr == nil {
				disagree("the kernel cannot resolve the path")
			}
		case gotErr != nil || got != want:
			disagree("the kernel lands elsewhere")
		}
	})
}

// bytesOf hands out the fuzz bytes one decision at a time; once they run
// out every decision is 0.
type bytesOf struct {
	b []byte
	i int
}

func (o *bytesOf) next(n int) int {
	if o.i >= len(o.b) {
		return 0
	}
	o.i++
	return int(o.b[o.i-1]) % n
}

// Names the tree and the paths are made of; "x" is never created.
var (
	entryNames = []string{"a", "b", "c"}
	pathNames  = []string{"a", "b", "c", "..", "x", "ws", "out", "."}
)

func pathOf(ops *bytesOf, names []string, most int) []string {
	n := 1 + ops.next(most)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = names[ops.next(len(names))]
	}
	return parts
}

// buildTree makes up to 7 entries under the workspace, its sibling and
// their parent, and returns a listing for failure messages.
func buildTree(t *testing.T, ops *bytesOf, base, ws, outside string) (listing string) {
	t.Helper()
	dirs := []string{ws, outside, base}
	var lines []string
	for range ops.next(8) {
		kind := ops.next(4)
		parent := dirs[ops.next(len(dirs))]
		p := parent + "/" + entryNames[ops.next(len(entryNames))]
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		shown := strings.Replace(p, base, "$BASE", 1)
		switch kind {
		case 0:
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, p)
			lines = append(lines, "mkdir "+shown)
		case 1:
			if err := os.WriteFile(p, []byte("bytes"), 0o644); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, "file  "+shown)
		default:
			target := strings.Join(pathOf(ops, pathNames, 3), "/")
			if kind == 3 {
				anchor := []string{base, ws, outside}[ops.next(3)]
				target = anchor + "/" + target
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, "link  "+shown+" -> "+strings.Replace(target, base, "$BASE", 1))
		}
	}
	return strings.Join(lines, "\n")
}

// buildQuery makes the path to resolve: relative to the workspace, or
// absolute from the workspace or from its parent. It returns the path as
// Resolve gets it, as the kernel gets it (always absolute, never cleaned),
// its components and the directory they start from.
func buildQuery(ops *bytesOf, base, ws string) (query, kernelPath string, comps []string, anchor string) {
	comps = pathOf(ops, pathNames[:7], 5)
	rest := strings.Join(comps, "/")
	switch ops.next(3) {
	case 0:
		return rest, ws + "/" + rest, comps, ws
	case 1:
		return ws + "/" + rest, ws + "/" + rest, comps, ws
	}
	return base + "/" + rest, base + "/" + rest, comps, base
}

// kernelWhere opens p with O_PATH, following every symlink as any system
// call would, and returns where the kernel landed.
func kernelWhere(p string) (string, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	return os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
}

// kernelAnswer is what Resolve must answer for the path, judged from the
// kernel's resolution; decided is false where the kernel has no answer to
// compare with.
func kernelAnswer(ws, kernelPath, anchor string, comps []string) (want ports.Location, wantErr error, decided bool) {
	inside := func(real string) (string, bool) {
		rel, err := filepath.Rel(ws, real)
		return rel, err == nil && (rel == "." || filepath.IsLocal(rel))
	}
	real, err := kernelWhere(kernelPath)
	switch {
	case err == nil:
		rel, ok := inside(real)
		if !ok {
			return ports.Location{}, ports.ErrOutside, true
		}
		fi, err := os.Stat(real)
		if err != nil {
			return ports.Location{}, nil, false
		}
		return ports.Location{Rel: rel, Exists: true, Dir: fi.IsDir(), Regular: fi.Mode().IsRegular()}, nil, true
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.ENOTDIR):
		return ports.Location{}, err, true
	case !errors.Is(err, syscall.ENOENT):
		return ports.Location{}, nil, false
	}
	// Find the first component the kernel cannot step into.
	reached := anchor
	for k := range comps {
		prefix := anchor + "/" + strings.Join(comps[:k+1], "/")
		next, err := kernelWhere(prefix)
		if err == nil {
			reached = next
			continue
		}
		if _, lerr := os.Lstat(reached + "/" + comps[k]); lerr == nil || slices.Contains(comps[k:], "..") {
			// A dangling symlink, or ".." after a missing component: the
			// kernel has no answer.
			return ports.Location{}, nil, false
		}
		rel, ok := inside(reached)
		if !ok {
			return ports.Location{}, ports.ErrOutside, true
		}
		return ports.Location{Rel: path.Join(append([]string{rel}, comps[k:]...)...)}, nil, true
	}
	return ports.Location{}, nil, false
}
