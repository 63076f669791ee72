// Package stdio is the one-shot stdio transport's I/O: it reads one request
// from standard input under the protocol's character limit and writes the
// one response line.
package stdio

import (
	"errors"
	"io"
)

// chunkBytes is how much Read asks for at a time.
const chunkBytes = 32 << 10

// Read reads r until EOF, unless the input passes limitChars characters
// first: then it stops at once, without waiting for the rest, and reports
// over. A character is counted at each byte that does not continue a UTF-8
// sequence, which is exactly the code point count of valid UTF-8. Invalid
// UTF-8 is left for the JSON check to refuse, but cannot stretch the read:
// more than 4×limitChars bytes is over the limit whatever they hold, since
// valid UTF-8 never needs more.
func Read(r io.Reader, limitChars int) (data []byte, over bool, err error) {
	maxBytes := 4 * limitChars
	chars := 0
	buf := make([]byte, 0, chunkBytes)
	for {
		if cap(buf)-len(buf) < chunkBytes {
			buf = append(buf[:cap(buf)], make([]byte, chunkBytes)...)[:len(buf)]
		}
		n, rerr := r.Read(buf[len(buf) : len(buf)+chunkBytes])
		for _, b := range buf[len(buf) : len(buf)+n] {
			if b&0xC0 != 0x80 {
				chars++
			}
		}
		buf = buf[:len(buf)+n]
		if chars > limitChars || len(buf) > maxBytes {
			return nil, true, nil
		}
		if errors.Is(rerr, io.EOF) {
			return buf, false, nil
		}
		if rerr != nil {
			return nil, false, rerr
		}
	}
}

// Write writes the response line in one call.
func Write(w io.Writer, line []byte) error {
	_, err := w.Write(line)
	return err
}
