package agent

import (
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
	rd := c.out.attach()
	defer rd.detach()
	ew := &eventWriter{w: w}
	timer := time.NewTimer(flushDelay)
	timer.Stop()
	defer timer.Stop()
	var due <-chan time.Time // set while written output waits for a flush
	for {
		chunks, err := rd.next(r.Context(), due)
		switch {
		case errors.Is(err, errIdle):
			flush(w)
			due = nil
			continue
		case errors.Is(err, io.EOF):
			<-c.done
			writeLine(w, c.endEvent()) // sent as the handler returns
			return
		case err != nil:
			return // the client left
		}
		if err := ew.write(chunks); err != nil {
			a.log.Debug("command stream cut", "pid", c.pid, "err", err)
			return
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
		case <-r.Context().Done():
			return
		}
	}
}

// eventWriter writes output chunks as NDJSON CommandEvents, encoding them
// by hand: {"type":"stdout","data":"<base64>"}.
type eventWriter struct {
	w       io.Writer
	pending []byte // data of the event being merged
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
	ew.line = append(ew.line[:0], `{"type":"`...)
	ew.line = append(ew.line, ew.stream...)
	ew.line = append(ew.line, `","data":"`...)
	ew.line = base64.StdEncoding.AppendEncode(ew.line, ew.pending)
	ew.line = append(ew.line, "\"}\n"...)
	ew.pending = ew.pending[:0]
	_, err := ew.w.Write(ew.line)
	return err
}
