// Package ndjson reads the NDJSON streams of sbx's agent and of serve's
// proxy in front of it (a command's events, a watch's, a log's): line by
// line, each line at most MaxLine bytes, with a fast path for the command
// output events the agent writes. The Go client and serve's own calls to an
// agent (internal/agentcall) both read command streams with it.
package ndjson

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/sbxdev/sbx/apiv1"
)

// MaxLine bounds a line of a stream: a chunk of output is at most about a
// MiB, base64 in JSON; a sandbox is no reason to exhaust our memory.
const MaxLine = 16 << 20

// Read decodes r line by line into fn until r ends or fn answers io.EOF
// (nil), or until fn or the stream fails. Blank lines are skipped. The
// bytes of an output event's Data are fn's only until it returns, like an
// io.Writer's.
func Read[T any](r io.Reader, fn func(T) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line, data []byte // reused from line to line
	for {
		var err error
		line, err = readLine(br, line[:0])
		if len(bytes.TrimSpace(line)) > 0 {
			var v T
			if jerr := decodeLine(line, &v, &data); jerr != nil {
				return fmt.Errorf("decoding a stream line: %w", jerr)
			}
			if ferr := fn(v); errors.Is(ferr, io.EOF) {
				// The stream's end follows at once: reading it lets the
				// connection be used again.
				io.Copy(io.Discard, io.LimitReader(br, 64<<10))
				return nil
			} else if ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// decodeLine decodes one line of a stream into v. An output event in the
// form the agent writes, {"type":"stdout","data":"<base64>"}, skips the
// JSON scanner and decodes into *data, reused: at hundreds of MB/s of
// output, scanning the base64 and allocating for it cost more than all the
// rest. Any other line, or one that does not decode so, goes through
// encoding/json.
func decodeLine[T any](line []byte, v *T, data *[]byte) error {
	if e, ok := any(v).(*apiv1.CommandEvent); ok && decodeOutputEvent(line, e, data) {
		return nil
	}
	return json.Unmarshal(line, v)
}

// outputPrefixes start the output events the agent writes, by stream.
var outputPrefixes = []struct {
	stream string
	prefix []byte
}{{"stdout", []byte(`{"type":"stdout","data":"`)}, {"stderr", []byte(`{"type":"stderr","data":"`)}}

// decodeOutputEvent decodes an output event written as the agent writes
// them, and reports whether line was one.
func decodeOutputEvent(line []byte, e *apiv1.CommandEvent, buf *[]byte) bool {
	for _, p := range outputPrefixes {
		rest, ok := bytes.CutPrefix(line, p.prefix)
		if !ok {
			continue
		}
		b64, ok := bytes.CutSuffix(bytes.TrimRight(rest, "\r\n"), []byte(`"}`))
		if !ok {
			return false
		}
		data, err := base64.StdEncoding.AppendDecode((*buf)[:0], b64)
		if err != nil {
			return false
		}
		if data == nil {
			data = []byte{} // as encoding/json decodes ""
		}
		*buf, *e = data, apiv1.CommandEvent{Type: p.stream, Data: data}
		return true
	}
	return false
}

// readLine appends to line up to and including the next newline, at most
// MaxLine bytes.
func readLine(br *bufio.Reader, line []byte) ([]byte, error) {
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > MaxLine {
			return nil, fmt.Errorf("a stream line is longer than %d bytes", MaxLine)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}
