package agent

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The start command's output reaches the writer logStart is given (the
// sandbox's log) in whole lines: a last line without its newline gets one,
// and a line longer than maxLogLine is cut.
func TestStartOutputGoesToTheLog(t *testing.T) {
	long := strings.Repeat("x", maxLogLine+10)
	a, err := New(Config{Token: strings.Repeat("t", minTokenLen), Workdir: t.TempDir(),
		Start: "echo first; echo second; printf " + long + "; echo; printf 'no newline'"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var log bytes.Buffer
	a.logStart(context.Background(), &log) // returns once the command's output ends
	want := "first\nsecond\n" + long[:maxLogLine] + "\n" + long[maxLogLine:] + "\nno newline\n"
	if log.String() != want {
		t.Errorf("the log holds %q…, want %q…", trim(log.String()), trim(want))
	}
}

// Without a start command there is nothing to copy.
func TestNoStartCommandLogsNothing(t *testing.T) {
	a, err := New(Config{Token: strings.Repeat("t", minTokenLen), Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var log bytes.Buffer
	a.logStart(context.Background(), &log)
	if log.Len() != 0 {
		t.Errorf("logged %q", log.String())
	}
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:100] + "…" + s[len(s)-100:]
	}
	return s
}

// What the start command adds to the log is bounded: past the limit, one
// line says the rest is not logged, and the command runs on unhindered.
func TestStartOutputInTheLogIsBounded(t *testing.T) {
	defer func(was int64) { startLogLimit = was }(startLogLimit)
	startLogLimit = 11 // the first two lines
	a, err := New(Config{Token: strings.Repeat("t", minTokenLen), Workdir: t.TempDir(),
		Start: "echo 12345; echo 6789; echo over; echo more"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var log bytes.Buffer
	a.logStart(context.Background(), &log)
	if got := log.String(); !strings.HasPrefix(got, "12345\n6789\n[the start command's output beyond this point is not logged") || strings.Contains(got, "over") {
		t.Errorf("the log holds %q", got)
	}
	c, err := a.procs.find(StartTag)
	if err != nil {
		t.Fatal(err)
	}
	<-c.done
	if info := c.snapshot(); info.Running || info.ExitCode == nil || *info.ExitCode != 0 {
		t.Errorf("the start command: %+v", info)
	}
}
