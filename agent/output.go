package agent

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// outputLimit is how many bytes of output a command keeps for readers that
// attach late.
const outputLimit = 4 << 20

// errIdle is what reader.next answers when its idle channel fires first.
var errIdle = errors.New("no output yet")

// chunk is one read of a command's output: immutable once written.
type chunk struct {
	stream string // stdout or stderr
	data   []byte
}

// output is a command's output, stdout and stderr interleaved as read, in a
// bounded buffer shared by its readers.
//
// The buffer holds the latest limit bytes (at least the latest chunk), so
// a reader that attaches late gets the output from the start when it fits,
// and otherwise only what the buffer still holds: older bytes are gone.
// A reader that is attached, though, gets every byte: while the oldest chunk
// is one an attached reader has yet to read, a write that would overflow
// the buffer waits, which stops the command's pipe from being read and so
// slows the command down as a full pipe would. A reader that detaches (its
// client went away) stops holding anything back.
type output struct {
	limit int

	mu      sync.Mutex
	chunks  []chunk // held, oldest first; chunks[i] is number base+i
	base    int64
	size    int // bytes held
	readers map[*reader]struct{}
	closed  bool          // nothing more will be written
	done    chan struct{} // closed with closed
	nowait  bool          // writes never wait (the agent is closing)
	changed chan struct{} // closed and replaced on every change
}

func newOutput(limit int) *output {
	return &output{limit: limit, readers: map[*reader]struct{}{}, changed: make(chan struct{}), done: make(chan struct{})}
}

// ended is closed once nothing more will be written.
func (o *output) ended() <-chan struct{} { return o.done }

// notify wakes everyone waiting for a change; mu is held.
func (o *output) notify() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// write appends a copy of p, waiting while the buffer is full of bytes an
// attached reader has not read.
func (o *output) write(stream string, p []byte) {
	c := chunk{stream: stream, data: append([]byte(nil), p...)}
	o.mu.Lock()
	defer o.mu.Unlock()
	for !o.trim(len(c.data)) {
		changed := o.changed
		o.mu.Unlock()
		<-changed
		o.mu.Lock()
	}
	o.chunks = append(o.chunks, c)
	o.size += len(c.data)
	o.notify()
}

// trim drops the oldest chunks that every reader has read until n more
// bytes fit, and reports whether they do; mu is held.
func (o *output) trim(n int) bool {
	oldestUnread := o.end()
	for r := range o.readers {
		oldestUnread = min(oldestUnread, r.pos)
	}
	for o.size+n > o.limit && len(o.chunks) > 0 && (o.base < oldestUnread || o.nowait) {
		o.size -= len(o.chunks[0].data)
		o.chunks[0] = chunk{}
		o.chunks = o.chunks[1:]
		o.base++
	}
	return o.size+n <= o.limit || len(o.chunks) == 0
}

// end is the number of the next chunk to be written; mu is held.
func (o *output) end() int64 { return o.base + int64(len(o.chunks)) }

// close marks the end of the output: readers get io.EOF once they have read it all.
func (o *output) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.closed = true
		close(o.done)
	}
	o.notify()
}

// abandon stops writes from waiting for readers, who may lose bytes.
func (o *output) abandon() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.nowait = true
	o.notify()
}

// release drops everything held, for a command that ended long ago,
// unless a reader is still attached.
func (o *output) release() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.readers) > 0 {
		return
	}
	o.base, o.chunks, o.size = o.end(), nil, 0
	o.notify()
}

// held is how many bytes the buffer holds.
func (o *output) held() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.size
}

// attach adds a reader that starts at the oldest chunk held.
func (o *output) attach() *reader {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := &reader{o: o, pos: o.base}
	o.readers[r] = struct{}{}
	return r
}

// reader reads an output from where it attached; detach it when done.
type reader struct {
	o   *output
	pos int64 // the number of the next chunk to read
}

// detach removes the reader, releasing a writer that waited for it.
func (r *reader) detach() {
	o := r.o
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.readers, r)
	o.notify()
}

// next answers the chunks written since the last call, waiting for at least
// one; io.EOF once the output is closed and read, errIdle when idle fires
// first, ctx's error when ctx ends first.
func (r *reader) next(ctx context.Context, idle <-chan time.Time) ([]chunk, error) {
	o := r.o
	o.mu.Lock()
	for {
		r.pos = max(r.pos, o.base) // past what a release or an abandoned wait dropped
		if end := o.end(); r.pos < end {
			out := append([]chunk(nil), o.chunks[r.pos-o.base:]...)
			r.pos = end
			o.notify() // a writer may be waiting for this reader
			o.mu.Unlock()
			return out, nil
		}
		if o.closed {
			o.mu.Unlock()
			return nil, io.EOF
		}
		changed := o.changed
		o.mu.Unlock()
		select {
		case <-changed:
		case <-idle:
			return nil, errIdle
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		o.mu.Lock()
	}
}
