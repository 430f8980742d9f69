package httpapi

import (
	"io"
	"testing"

	"github.com/sbxdev/sbx"
)

// endless is a body of n bytes that never holds a message's end: no
// newline, or one WebSocket frame that says it is larger than anything.
type endless struct {
	head []byte
	n    int
}

func (e *endless) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	k := min(len(p), e.n)
	c := copy(p, e.head)
	e.head = e.head[c:]
	for i := c; i < k; i++ {
		p[i] = 'x'
	}
	e.n -= k
	return k, nil
}

func (e *endless) Close() error { return nil }

// The proxy holds a begun message only up to a bound: what comes from a
// sandbox is the tenant's to shape (root in it can answer for its agent),
// and a line or frame that never ends must not grow serve's memory with it.
func TestEndingStreamHoldsABoundedMessage(t *testing.T) {
	const total = 64 << 20
	stopped := func() *sbx.Error { return sbx.Errorf(sbx.EConflict, "sandbox sbx-x was deleted") }
	for name, s := range map[string]*endingStream{
		"an NDJSON line":    {body: &endless{n: total}, stopped: stopped, split: ndjsonLines, last: ndjsonError},
		"a WebSocket frame": {body: &endless{head: []byte{0x82, 127, 0x40, 0, 0, 0, 0, 0, 0, 0}, n: total}, stopped: stopped, split: wsFrames, last: wsGoingAway},
	} {
		p := make([]byte, 256<<10)
		passed := 0
		for {
			n, err := s.Read(p)
			passed += n
			if len(s.buf) > 2*maxHeld {
				t.Fatalf("%s: the proxy holds %d bytes of one message (passed on %d)", name, len(s.buf), passed)
			}
			if err != nil {
				break
			}
		}
		if passed < total-2*maxHeld {
			t.Errorf("%s: passed on %d bytes of %d", name, passed, total)
		}
	}
}
