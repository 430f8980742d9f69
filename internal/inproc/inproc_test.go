package inproc_test

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/internal/inproc"
)

// The answer streams: the caller reads a line the handler wrote while the
// handler still waits for it to be read, and closing the body ends the
// handler's context.
func TestStreamsAndCancels(t *testing.T) {
	ended := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(ended)
		if r.Header.Get("Authorization") != "Bearer k" || r.Host != "api.test" || r.URL.Path != "/stream" || r.URL.RawQuery != "a=1" {
			http.Error(w, "wrong request", 400)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(201)
		io.WriteString(w, "first\n")
		<-r.Context().Done()
	})
	c := &http.Client{Transport: inproc.Transport(h)}
	req, _ := http.NewRequest("GET", "http://api.test/stream?a=1", nil)
	req.Header.Set("Authorization", "Bearer k")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 201 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("answer %d %v", resp.StatusCode, resp.Header)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	resp.Body.Close()
	<-ended // the handler's context ended with the body
}

// A request body reaches the handler; a handler that writes nothing
// answers 200 with an empty body; one that panics before answering is an
// error.
func TestBodiesAndEnds(t *testing.T) {
	c := &http.Client{Transport: inproc.Transport(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			io.Copy(w, r.Body)
		case "/panic":
			panic("boom")
		}
	}))}
	resp, err := c.Post("http://api.test/echo", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := io.ReadAll(resp.Body); string(data) != "hello" {
		t.Fatalf("echo %q", data)
	}
	resp, err = c.Get("http://api.test/nothing")
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || len(data) != 0 {
		t.Fatalf("nothing: %d %q", resp.StatusCode, data)
	}
	if _, err := c.Get("http://api.test/panic"); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("panic: %v", err)
	}
}
