package local

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// notePrefix starts the provider's own lines in a sandbox's output.log; the
// sandbox's output between two such lines is dated by the first.
const notePrefix = "[sbx "

// note appends a dated provider line to a sandbox's output.
func note(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "%s%s] %s\n", notePrefix, time.Now().UTC().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
}

// parseNote reads a line note wrote.
func parseNote(line string) (time.Time, string, bool) {
	rest, ok := strings.CutPrefix(line, notePrefix)
	if !ok {
		return time.Time{}, "", false
	}
	stamp, text, ok := strings.Cut(rest, "] ")
	if !ok {
		return time.Time{}, "", false
	}
	at, err := time.Parse(time.RFC3339Nano, stamp)
	return at, text, err == nil
}
