//go:build !landlockprobe

package main

import (
	"context"
	"io"

	"github.com/metricproof/metricproof/app"
)

// probe is the test-only command of a build tagged landlockprobe
// (probe_landlockprobe.go); the shipped runner has none, and
// "landlock-probe" is a stray argument to it like any other.
func probe(context.Context, []string, io.Reader, io.Writer, confiner, app.Wire) (int, bool) {
	return 0, false
}
