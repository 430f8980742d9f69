package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

// readAll reads r to the end of the output.
func readAll(t *testing.T, r *reader) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var buf bytes.Buffer
	for {
		chunks, err := r.next(ctx, nil)
		if errors.Is(err, io.EOF) {
			return buf.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chunks {
			buf.Write(c.data)
		}
	}
}

func TestOutputLateReaderGetsWhatFits(t *testing.T) {
	o := newOutput(10)
	for _, s := range []string{"aaaa", "bbbb", "cccc", "dddd"} {
		o.write("stdout", []byte(s)) // no reader: never waits
	}
	o.close()
	if got := readAll(t, o.attach()); got != "ccccdddd" {
		t.Errorf("late reader got %q, want the newest 8 bytes", got)
	}
}

func TestOutputAttachedReaderGetsEveryByte(t *testing.T) {
	o := newOutput(8)
	r := o.attach()
	var want bytes.Buffer
	go func() {
		for i := range 1000 {
			o.write("stdout", fmt.Appendf(nil, "%04d", i))
		}
		o.close()
	}()
	for i := range 1000 {
		fmt.Fprintf(&want, "%04d", i)
	}
	if got := readAll(t, r); got != want.String() {
		t.Errorf("the reader lost bytes: got %d, want %d", len(got), want.Len())
	}
}

func TestOutputDetachReleasesWriter(t *testing.T) {
	o := newOutput(4)
	r := o.attach()
	o.write("stdout", []byte("full"))
	wrote := make(chan struct{})
	go func() {
		o.write("stdout", []byte("more")) // waits for r
		close(wrote)
	}()
	r.detach()
	select {
	case <-wrote:
	case <-time.After(time.Minute):
		t.Fatal("a detached reader still holds the writer")
	}
	o.close()
	if got := readAll(t, o.attach()); got != "more" {
		t.Errorf("got %q", got)
	}
}

func TestOutputIdle(t *testing.T) {
	o := newOutput(4)
	idle := make(chan time.Time, 1)
	idle <- time.Now()
	if _, err := o.attach().next(t.Context(), idle); !errors.Is(err, errIdle) {
		t.Errorf("next on an idle output: %v", err)
	}
}
