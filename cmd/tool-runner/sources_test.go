//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"

	"github.com/metricproof/metricproof/internal/testinputs"
	"github.com/metricproof/metricproof/internal/testutil"
)

// where is what the message must contain: the file, and for a data fault
// the line, column and field; for the row limit the line.
func where(v testinputs.SourceVariant) string {
	switch {
	case v.Column > 0 && v.Field != "":
		return fmt.Sprintf("%s: line %d, column %d (%s)", v.File, v.Line, v.Column, v.Field)
	case v.Column > 0:
		return fmt.Sprintf("%s: line %d, column %d", v.File, v.Line, v.Column)
	case v.Line > 0:
		return fmt.Sprintf("%s: line %d", v.File, v.Line)
	}
	return v.File
}

// Every rule of protocol §4 through the real process, from testdata/sources.json,
// for inspect_inputs and analyze alike: the code, exit 1, the file and
// place in the message. Nothing is written.
func TestBadSourcesAnswerTheirCode(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testutil.Root(t), "testdata", "sources.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases, err := testinputs.SourceVariants(data)
	if err != nil || len(cases) < 50 {
		t.Fatalf("testdata/sources.json: %v, %d cases", err, len(cases))
	}
	for _, tt := range cases {
		for _, tool := range []string{"inspect_inputs", "analyze"} {
			t.Run(tt.Name+"/"+tool, func(t *testing.T) {
				t.Parallel() // a workspace of its own
				is := is.New(t)
				ws := fixture(t)
				path := filepath.Join(ws, tt.File)
				if tt.Remove {
					is.NoErr(os.Remove(path))
				} else {
					in, err := testinputs.Assemble(tt.Input)
					is.NoErr(err)
					writeFile(t, path, in)
				}
				req := inspectRequest("r1")
				if tool == "analyze" {
					req = analyzeRequest("r1", strings.Repeat("0", 64))
				}
				o := call(t, ws, req, "--workspace", ws, "--output-dir", "runs")
				is.Equal(o.code(), tt.Code)
				is.Equal(o.exit, 1)
				is.Equal(o.resp["tool"], tool)
				is.True(strings.Contains(o.message(), where(tt))) // names the file and place
				_, err := os.Stat(filepath.Join(ws, "runs"))
				is.True(os.IsNotExist(err)) // nothing written
			})
		}
	}
}

// Anything at a source's path that is not a regular file is MISSING_INPUT
// (protocol §4), through the real process and whatever open(2) does with
// it: a FIFO opens (and is never waited on), a socket and a device node
// without a driver do not (ENXIO), a device node does. The answer is the
// same for each, at once, and nothing is written.
func TestASpecialFileAtASourcePathIsMissingInput(t *testing.T) {
	tests := []struct {
		name string
		make func(path string) error
	}{
		{"a FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"a socket", func(p string) error { return syscall.Mknod(p, syscall.S_IFSOCK|0o644, 0) }},
		{"a character device", func(p string) error {
			return syscall.Mknod(p, syscall.S_IFCHR|0o644, int(unix.Mkdev(1, 3))) // /dev/null's numbers
		}},
		{"a device node without a driver", func(p string) error {
			return syscall.Mknod(p, syscall.S_IFCHR|0o644, int(unix.Mkdev(4095, 4095)))
		}},
	}
	for _, tt := range tests {
		for _, tool := range []string{"inspect_inputs", "analyze"} {
			t.Run(tt.name+"/"+tool, func(t *testing.T) {
				is := is.New(t)
				ws := fixture(t)
				path := filepath.Join(ws, "data", "groups.csv")
				is.NoErr(os.Remove(path))
				if err := tt.make(path); err != nil {
					t.Skip("this user cannot make one here:", err) // device nodes need root
				}
				req := inspectRequest("r1")
				if tool == "analyze" {
					req = analyzeRequest("r1", strings.Repeat("0", 64))
				}
				o := call(t, ws, req, "--workspace", ws, "--output-dir", "runs")
				is.Equal(o.code(), "MISSING_INPUT")
				is.Equal(o.exit, 1)
				is.Equal(o.message(), "data/groups.csv is not a regular file")
				_, err := os.Stat(filepath.Join(ws, "runs"))
				is.True(os.IsNotExist(err)) // nothing written
			})
		}
	}
}
