// Package buildcmd holds README's build command of tool-runner, the one
// every program and test of this repository that builds the runner uses,
// so that they all build the engine an operator builds (docs/engine.md).
//
// -buildvcs=true stamps the checkout's revision in the binary whatever
// GOFLAGS says (a flag on the command line beats GOFLAGS, which many CI
// images and distribution packages set to -buildvcs=false), so every
// receipt names the source an auditor checks out. -trimpath leaves the
// checkout's path out of the binary and -ldflags="-s -w" its symbol and
// debug tables, so two clean checkouts of one revision at different
// paths, built with the same Go for the same platform, give
// byte-identical engines; CGO_ENABLED=0 makes it static whatever C
// compiler the machine has.
package buildcmd

import (
	"os"
	"os/exec"
)

// Line is README's build command, exactly as the operator types it.
const Line = `CGO_ENABLED=0 go build -buildvcs=true -trimpath -ldflags="-s -w" -o bin/tool-runner ./cmd/tool-runner`

// Flags are the build flags of Line between "go build" and "-o", as go
// receives them once the shell has removed the quotes.
func Flags() []string { return []string{"-buildvcs=true", "-trimpath", "-ldflags=-s -w"} }

// Args returns go's arguments of Line, building the package pkg (such as
// "./cmd/tool-runner") into out.
func Args(out, pkg string) []string {
	return append(append([]string{"build"}, Flags()...), "-o", out, pkg)
}

// Command returns the command of Line run in the module at dir, building
// pkg into out, with CGO_ENABLED=0 set on top of this process's
// environment.
func Command(dir, out, pkg string) *exec.Cmd {
	cmd := exec.Command("go", Args(out, pkg)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}
