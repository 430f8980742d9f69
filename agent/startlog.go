package agent

import (
	"bytes"
	"context"
	"io"
)

// maxLogLine bounds a line the start command's output adds to the
// sandbox's log: a longer one is cut into lines of this size.
const maxLogLine = 64 << 10

// startLogLimit bounds what the start command adds to the sandbox's log, a
// file on the host that no disk cap covers: past it a last line says so,
// and the rest of its output is only in its buffer (GET /commands/start).
// A variable for tests.
var startLogLimit int64 = 64 << 20

// logStart copies the start command's output (stdout and stderr as they
// interleaved) to w, the sandbox's log, until the command's output ends or
// ctx does. It writes whole lines only, so that they do not mix with the
// agent's own lines on the same log; the last line is ended for it. The
// command is the one tagged StartTag when logStart is called: call it
// before the API serves, when no other command can have taken the tag.
func (a *Agent) logStart(ctx context.Context, w io.Writer) {
	c, err := a.procs.find(StartTag)
	if err != nil {
		return // no start command
	}
	rd := c.out.attach() // from the oldest byte held: the start, unless it wrote more than the buffer holds
	defer rd.detach()
	var line []byte // a line begun, not yet written
	var logged int64
	write := func(b []byte) bool {
		if logged += int64(len(b)); logged > startLogLimit {
			io.WriteString(w, "[the start command's output beyond this point is not logged: it wrote more than the log takes; GET /commands/start has what its buffer holds]\n")
			return false
		}
		w.Write(b)
		return true
	}
	for {
		chunks, err := rd.next(ctx, nil)
		for _, ch := range chunks {
			data := ch.data
			for len(data) > 0 {
				n, content := len(data), len(data) // what to take, and of it the line's text
				if i := bytes.IndexByte(data, '\n'); i >= 0 {
					n, content = i+1, i
				}
				if room := maxLogLine - len(line); content > room {
					line = append(line, data[:room]...)
					data = data[room:]
					if !write(append(line, '\n')) {
						return
					}
					line = line[:0]
					continue
				}
				line = append(line, data[:n]...)
				data = data[n:]
				if line[len(line)-1] == '\n' {
					if !write(line) {
						return
					}
					line = line[:0]
				}
			}
		}
		if err != nil {
			if len(line) > 0 {
				write(append(line, '\n'))
			}
			return
		}
	}
}
