package httpapi

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"time"
	"unicode/utf8"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// An agent's stream, as the proxy passes it on, ends with a last message
// saying why when its sandbox stops running: the agent cannot say it, and
// the sandbox's connections do not even end. The stream is passed on in
// whole messages (lines of NDJSON, WebSocket frames), so that the last one
// follows a whole message: the start of one the agent had no time to finish
// is held back, and dropped when the stream is cut.

// maxHeld bounds the begun message a stream holds back: far more than a
// message of the agent's (a command's output comes in events of at most
// 256 KiB), and what a stream sends beyond it, without a message's end, is
// passed on as it comes. What comes from a sandbox is the tenant's to shape
// (root in it can answer for its agent), and a line or frame that never
// ends must not grow serve's memory with it.
const maxHeld = 16 << 20

// endingStream passes body on in whole messages and, when it fails because
// the sandbox stopped, ends with last(why).
type endingStream struct {
	body    io.ReadCloser
	stopped func() *sbx.Error   // why the sandbox stopped, or nil while it runs
	split   func([]byte) int    // the length of the whole messages b starts with
	last    func(string) []byte // the message that ends a cut stream

	// buf[r:w] are whole messages read and not yet passed on, buf[w:end]
	// the start of one. A stream read in reads that end with a message
	// (the agent flushes whole ones) goes straight through p instead.
	buf       []byte
	r, w, end int
	fin       []byte // the last message, once the stream is cut
	err       error  // once the body ended: what follows the rest
}

func (s *endingStream) Read(p []byte) (int, error) {
	for {
		switch {
		case s.r < s.w:
			n := copy(p, s.buf[s.r:s.w])
			s.r += n
			return n, nil
		case len(s.fin) > 0:
			n := copy(p, s.fin)
			s.fin = s.fin[n:]
			return n, nil
		case s.err != nil:
			return 0, s.err
		case s.w == s.end:
			// Nothing begun: read into p and pass on its whole messages.
			n, err := s.body.Read(p)
			whole := s.split(p[:n])
			if len(s.buf) < n-whole {
				s.buf = make([]byte, max(n-whole, 64<<10))
			}
			s.r, s.w, s.end = 0, 0, copy(s.buf, p[whole:n])
			s.ended(err)
			if whole > 0 {
				return whole, nil
			}
		default:
			// A message begun: read the rest of it after it.
			if s.w > 0 {
				s.r, s.w, s.end = 0, 0, copy(s.buf, s.buf[s.w:s.end])
			}
			if s.end == len(s.buf) {
				s.buf = append(s.buf, make([]byte, len(s.buf))...)
			}
			n, err := s.body.Read(s.buf[s.end:])
			s.end += n
			s.w = s.split(s.buf[:s.end])
			if s.w == 0 && s.end >= maxHeld {
				s.w = s.end // no message this long: pass it on as it is
			}
			s.ended(err)
		}
	}
}

// ended takes the body's error: the end of the stream, or its cut.
func (s *endingStream) ended(err error) {
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		s.w, s.err = s.end, err // what is left, as it is
	default:
		if why := s.stopped(); why != nil {
			s.end, s.fin, s.err = s.w, s.last(why.Message), io.EOF
			return
		}
		s.err = err
	}
}

func (s *endingStream) Close() error { return s.body.Close() }

// ndjsonLines is the length of the whole lines b starts with.
func ndjsonLines(b []byte) int { return bytes.LastIndexByte(b, '\n') + 1 }

// ndjsonError is the last line of a command's or a watch's stream whose
// sandbox stopped: an event of type error.
func ndjsonError(why string) []byte {
	line, _ := json.Marshal(apiv1.CommandEvent{Type: "error", Error: why})
	return append(line, '\n')
}

// endingUpgrade is an endingStream over the agent's side of a WebSocket:
// the agent's frames pass on whole, and the client's writes reach the agent
// until the sandbox stops; after that, they are dropped, so that the
// proxy's copy from the agent ends first, its close frame sent. The client
// then has closeLinger to close its side, as the closing handshake has it
// (which ends the proxy's copy from it, and the connection), before the
// proxy closes the connection itself.
type endingUpgrade struct {
	endingStream
	w io.Writer
}

// closeLinger is how long a client whose sandbox stopped has to close its
// side of the WebSocket once the close frame is sent.
const closeLinger = 5 * time.Second

func newEndingUpgrade(rw io.ReadWriteCloser, stopped func() *sbx.Error) *endingUpgrade {
	return &endingUpgrade{endingStream: endingStream{body: rw, stopped: stopped, split: wsFrames, last: wsGoingAway}, w: rw}
}

func (u *endingUpgrade) Read(p []byte) (int, error) {
	n, err := u.endingStream.Read(p)
	if err == io.EOF && u.stopped() != nil {
		time.Sleep(closeLinger)
		return n, errors.New("the sandbox stopped")
	}
	return n, err
}

func (u *endingUpgrade) Write(p []byte) (int, error) {
	if u.stopped() != nil {
		return len(p), nil
	}
	return u.w.Write(p)
}

// wsFrames is the length of the whole frames b starts with, frames from a
// server, which are not masked (RFC 6455, 5.2).
func wsFrames(b []byte) int {
	whole := 0
	for rest := b; len(rest) >= 2; {
		size, header := uint64(rest[1]&0x7f), 2
		switch size {
		case 126:
			if len(rest) < 4 {
				return whole
			}
			size, header = uint64(binary.BigEndian.Uint16(rest[2:])), 4
		case 127:
			if len(rest) < 10 {
				return whole
			}
			size, header = binary.BigEndian.Uint64(rest[2:]), 10
		}
		if rest[1]&0x80 != 0 {
			header += 4
		}
		if len(rest) < header || uint64(len(rest)-header) < size {
			return whole
		}
		n := header + int(size)
		whole, rest = whole+n, rest[n:]
	}
	return whole
}

// wsGoingAway is a close frame with status 1001 (going away) and why, cut
// to the 123 bytes a close frame's reason may have.
func wsGoingAway(why string) []byte {
	if len(why) > 123 {
		cut := 123
		for cut > 0 && !utf8.RuneStart(why[cut]) {
			cut--
		}
		why = why[:cut]
	}
	frame := []byte{0x88, byte(2 + len(why)), 0x03, 0xe9} // FIN + close; length; 1001
	return append(frame, why...)
}
