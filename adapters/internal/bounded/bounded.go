// Package bounded reads a stream with a byte limit that is enforced while
// reading, so a file that grows or lies about its size can never make an
// adapter read more than the limit plus one byte.
package bounded

import (
	"io"

	"github.com/metricproof/metricproof/ports"
)

// Read reads r to EOF and returns its bytes, reading at most limitBytes+1
// bytes: when r holds more than limitBytes it stops and returns
// ports.ErrTooLarge. sizeHint, when positive, sizes the buffer.
func Read(r io.Reader, limitBytes, sizeHint int64) ([]byte, error) {
	capacity := min(max(sizeHint, 0), limitBytes) + 1
	buf := make([]byte, 0, min(capacity, 64<<20))
	lr := io.LimitReader(r, limitBytes+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limitBytes {
			return nil, ports.ErrTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
