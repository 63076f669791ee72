package testutil

import (
	"testing"

	"github.com/matryer/is"
)

// A long test runs only with METRICPROOF_LONG=1 (not "0", not "true"), and
// when skipped says how to run it, naming itself and its package.
func TestALongTestRunsOnlyWhenAskedAndSaysHow(t *testing.T) {
	tests := []struct {
		value   string
		skipped bool
	}{
		{"", true},
		{"0", true},
		{"true", true},
		{"1", false},
	}
	for _, tt := range tests {
		t.Run("value "+tt.value, func(t *testing.T) {
			is := is.New(t)
			t.Setenv(LongEnv, tt.value)
			var inner *testing.T
			t.Run("long", func(t *testing.T) {
				inner = t
				SkipUnlessLong(t)
			})
			is.Equal(inner.Skipped(), tt.skipped)
			is.Equal(Long(), !tt.skipped)
		})
	}
	is := is.New(t)
	is.Equal(packageDir(t), "./internal/testutil")
	is.Equal(howToRunLong("TestX/y", "./cmd/tool-runner"), "long test: run it with METRICPROOF_LONG=1 go test -run '^TestX/y$' ./cmd/tool-runner")
}
