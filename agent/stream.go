package agent

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"time"
)

// A command's stream batches its output: the events a reader finds waiting
// are written together, adjacent chunks of one stream are merged into one
// event of up to maxEventData bytes, and the response is flushed at most
// flushDelay after the first byte it holds, not after every chunk. Until
// that flush the stream does not look at the output again (unless the
// command ends): in gVisor, waking for each small write of a busy command
// costs more than the write. An idle command's output thus reaches the
// client within flushDelay, and a busy one goes out in large writes.
const (
	flushDelay   = 5 * time.Millisecond
	maxEventData = 256 << 10
)

// streamEvents answers c's stream: the start event, its output from what
// the buffer holds, live, then the end event. The client leaving ends the
// stream, not the command. The headers and the start event go out in one
// write, and the end event in the one that ends the response: in gVisor
// each write to the network costs a few hundred microseconds, which a
// short command's round trip would feel.
func (a *Agent) streamEvents(w http.ResponseWriter, r *http.Request, c *command) {
	streamHeaders(w, http.StatusOK)
	if err := writeLine(w, c.startEvent()); err != nil {
		return
	}
	flush(w)
	ew := &eventWriter{w: w, encode: ndjsonEvent}
	if err := followOutput(r.Context(), w, c, ew.write, keepalive{}); err != nil {
		if r.Context().Err() == nil {
			a.log.Debug("command stream cut", "pid", c.pid, "err", err)
		}
		return
	}
	writeLine(w, c.endEvent()) // sent as the handler returns
}

// keepalive is what a stream sends when it has sent nothing for a while,
// so that proxies and idle timers keep it open.
type keepalive struct {
	every time.Duration // 0: never
	send  func() error
}

// followOutput writes c's output to w through write, from the oldest byte
// its buffer holds, then live, batched as described above; with
// ping.every, ping.send is called (and flushed) every ping.every that
// finds the stream waiting for output. It answers nil once the output has
// ended, all of it written (c has ended: its end event may follow), ctx's
// error when ctx ends first, and write's or ping's error when one fails.
func followOutput(ctx context.Context, w http.ResponseWriter, c *command, write func([]chunk) error, ping keepalive) error {
	rd := c.out.attach()
	defer rd.detach()
	timer := time.NewTimer(flushDelay)
	timer.Stop()
	defer timer.Stop()
	var pings <-chan time.Time
	if ping.every > 0 {
		ticker := time.NewTicker(ping.every)
		defer ticker.Stop()
		pings = ticker.C
	}
	var due <-chan time.Time // set while written output waits for a flush
	for {
		idle := due
		if idle == nil {
			idle = pings
		}
		chunks, err := rd.next(ctx, idle)
		switch {
		case errors.Is(err, errIdle) && due != nil:
			flush(w)
			due = nil
			continue
		case errors.Is(err, errIdle): // quiet since the last ping
			if err := ping.send(); err != nil {
				return err
			}
			flush(w)
			continue
		case errors.Is(err, io.EOF):
			<-c.done
			return nil
		case err != nil:
			return err // ctx ended: the client left
		}
		if err := write(chunks); err != nil {
			return err
		}
		if due == nil {
			timer.Reset(flushDelay)
			due = timer.C
		}
		select { // gather until the flush, or the end
		case <-due:
			flush(w)
			due = nil
		case <-c.out.ended():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// eventWriter writes output chunks as events, each encoded by encode,
// merging adjacent chunks of one stream.
type eventWriter struct {
	w       io.Writer
	encode  func(buf []byte, stream string, data []byte) []byte // appends one event of data to buf
	pending []byte                                              // data of the event being merged
	stream  string
	line    []byte
}

// write writes chunks as events, merging adjacent ones of one stream.
func (ew *eventWriter) write(chunks []chunk) error {
	for _, c := range chunks {
		if len(ew.pending) > 0 && (c.stream != ew.stream || len(ew.pending)+len(c.data) > maxEventData) {
			if err := ew.emit(); err != nil {
				return err
			}
		}
		ew.stream = c.stream
		ew.pending = append(ew.pending, c.data...)
	}
	return ew.emit()
}

// emit writes the pending event.
func (ew *eventWriter) emit() error {
	if len(ew.pending) == 0 {
		return nil
	}
	ew.line = ew.encode(ew.line[:0], ew.stream, ew.pending)
	ew.pending = ew.pending[:0]
	_, err := ew.w.Write(ew.line)
	return err
}

// ndjsonEvent appends data as one NDJSON CommandEvent, encoded by hand:
// {"type":"stdout","data":"<base64>"}.
func ndjsonEvent(buf []byte, stream string, data []byte) []byte {
	buf = append(buf, `{"type":"`...)
	buf = append(buf, stream...)
	buf = append(buf, `","data":"`...)
	buf = base64.StdEncoding.AppendEncode(buf, data)
	return append(buf, "\"}\n"...)
}
