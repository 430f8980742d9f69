package httpapi

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sbxdev/sbx"
)

// countingReader counts what was read of it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// A body refused for its size is read to its end (up to maxDrain), so the
// client finishes sending and reads the 413 instead of a reset connection;
// one larger than that is not read on without end.
func TestTooLargeBodyIsDrained(t *testing.T) {
	for _, tc := range []struct {
		size, read int64
	}{
		{3 << 20, 3 << 20},
		{maxBody + maxDrain + 1<<20, maxBody + maxDrain + 1},
	} {
		body := &countingReader{r: io.LimitReader(strings.NewReader(strings.Repeat(" ", int(tc.size))), tc.size)}
		r := httptest.NewRequest("POST", "/api/v1/sandboxes", body)
		_, err := readJSON(httptest.NewRecorder(), r)
		if e := (*sbx.Error)(nil); !errors.As(err, &e) || e.Code != sbx.ETooLarge {
			t.Fatalf("a body of %d bytes: %v, want %s", tc.size, err, sbx.ETooLarge)
		}
		if body.n != tc.read {
			t.Errorf("a body of %d bytes: %d read, want %d", tc.size, body.n, tc.read)
		}
	}
}
