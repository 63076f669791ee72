package bounded_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/internal/bounded"
	"github.com/metricproof/metricproof/ports"
)

// counting counts the bytes handed out by Read.
type counting struct {
	r io.Reader
	n int64
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestReadNeverTakesMoreThanLimitPlusOne(t *testing.T) {
	tests := []struct {
		name           string
		size, limit    int64
		hint           int64
		wantTooLarge   bool
		wantReadAtMost int64
	}{
		{"empty", 0, 10, 0, false, 0},
		{"exactly the limit", 10, 10, 10, false, 10},
		{"one over", 11, 10, 11, true, 11},
		{"far over, honest hint", 1 << 20, 10, 1 << 20, true, 11},
		{"far over, lying hint", 1 << 20, 10, 3, true, 11},
		{"under, lying hint", 5, 10, 1 << 30, false, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			src := &counting{r: strings.NewReader(strings.Repeat("x", int(tt.size)))}
			data, err := bounded.Read(src, tt.limit, tt.hint)
			is.True(src.n <= tt.wantReadAtMost) // never reads past limit+1
			if tt.wantTooLarge {
				is.True(errors.Is(err, ports.ErrTooLarge))
				return
			}
			is.NoErr(err)
			is.True(bytes.Equal(data, bytes.Repeat([]byte("x"), int(tt.size))))
		})
	}
}
