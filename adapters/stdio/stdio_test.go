package stdio_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/stdio"
)

func TestReadCountsCodePoints(t *testing.T) {
	const limit = 8
	tests := []struct {
		name string
		in   string
		over bool
	}{
		{"empty", "", false},
		{"exactly the limit in ASCII", strings.Repeat("a", limit), false},
		{"one past in ASCII", strings.Repeat("a", limit+1), true},
		{"exactly the limit in 4-byte characters", strings.Repeat("😀", limit), false},
		{"one past in 4-byte characters", strings.Repeat("😀", limit+1), true},
		{"exactly the limit in 2-byte characters", strings.Repeat("é", limit), false},
		{"continuation bytes past 4×limit", strings.Repeat("\x80", 4*limit+1), true},
		{"continuation bytes within 4×limit", strings.Repeat("\x80", 4*limit), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			data, over, err := stdio.Read(strings.NewReader(tt.in), limit)
			is.NoErr(err)
			is.Equal(over, tt.over)
			if !tt.over {
				is.Equal(string(data), tt.in)
			}
		})
	}
}

// endless is an input that never ends: it writes 'a' forever.
type endless struct{ read int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	e.read += len(p)
	return len(p), nil
}

func TestReadDecidesWithoutReadingUnboundedInput(t *testing.T) {
	is := is.New(t)
	src := &endless{}
	done := make(chan bool)
	go func() {
		_, over, _ := stdio.Read(src, 65536)
		done <- over
	}()
	select {
	case over := <-done:
		is.True(over)
		is.True(src.read <= 65536+64<<10) // stopped within a chunk of the limit
	case <-time.After(10 * time.Second):
		t.Fatal("Read never returned on endless input")
	}
}

// stalled gives the limit's worth and more, then blocks as an open pipe
// would: the decision must not wait for EOF.
type stalled struct{ sent bool }

func (s *stalled) Read(p []byte) (int, error) {
	if !s.sent {
		s.sent = true
		return copy(p, strings.Repeat("x", 20)), nil
	}
	select {} // never returns
}

func TestReadAnswersOverTheLimitWhileTheWriterStillHoldsThePipe(t *testing.T) {
	is := is.New(t)
	done := make(chan bool)
	go func() {
		_, over, _ := stdio.Read(&stalled{}, 10)
		done <- over
	}()
	select {
	case over := <-done:
		is.True(over)
	case <-time.After(10 * time.Second):
		t.Fatal("Read waited for EOF")
	}
}

var _ io.Reader = (*endless)(nil)
