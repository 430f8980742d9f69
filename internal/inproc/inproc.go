// Package inproc is an http.RoundTripper that serves each request with an
// http.Handler in this process, with no network: the answer streams back
// as the handler writes it (an NDJSON stream, say), and closing its body,
// or ending the request's context, ends the handler's context. serve's
// MCP endpoint calls serve's own API through it, so that every tool call
// is one more API request, authenticated and authorized as any other.
package inproc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// Transport serves requests with h.
func Transport(h http.Handler) http.RoundTripper { return transport{h} }

type transport struct{ h http.Handler }

// RoundTrip runs the handler in a goroutine and answers once it has
// written its header (or returned).
func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	in := req.Clone(ctx)
	in.RequestURI = req.URL.RequestURI()
	in.Host = req.URL.Host
	in.RemoteAddr = "127.0.0.1:0" // this process
	if in.Body == nil {
		in.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &writer{header: http.Header{}, body: pw, ready: make(chan struct{})}
	go func() {
		defer in.Body.Close() // RoundTrip's contract: the request body is closed
		defer func() {
			if p := recover(); p != nil {
				w.fail(fmt.Errorf("inproc: the handler panicked: %v", p))
				return
			}
			w.WriteHeader(http.StatusOK) // a handler that wrote nothing
			pw.Close()
		}()
		t.h.ServeHTTP(w, in)
	}()
	select {
	case <-w.ready:
	case <-ctx.Done():
		pr.CloseWithError(ctx.Err())
		cancel()
		return nil, ctx.Err()
	}
	if w.err != nil {
		cancel()
		return nil, w.err
	}
	return &http.Response{Status: fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: w.sent, ContentLength: -1,
		Body: &body{PipeReader: pr, cancel: cancel}, Request: req}, nil
}

// writer is the handler's ResponseWriter: its header goes to RoundTrip on
// the first write, its body through a pipe, each write taken by the reader
// before it returns (so a flush has nothing to do).
type writer struct {
	header http.Header
	body   *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
	status int
	sent   http.Header
	err    error // the handler failed before its header
}

func (w *writer) Header() http.Header { return w.header }

func (w *writer) WriteHeader(status int) {
	if status >= 100 && status < 200 {
		return // informational: nothing to pass on
	}
	w.once.Do(func() {
		w.status, w.sent = status, w.header.Clone()
		close(w.ready)
	})
}

func (w *writer) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// fail ends the exchange with err: no answer when none was sent yet, else
// a body that breaks off with it.
func (w *writer) fail(err error) {
	w.once.Do(func() {
		w.err = err
		close(w.ready)
	})
	w.body.CloseWithError(err)
}

// Flush implements http.Flusher; writes are never buffered.
func (w *writer) Flush() { w.WriteHeader(http.StatusOK) }

// EnableFullDuplex lets a handler write while it reads the body (the
// agent proxy asks for it): the body is the caller's own reader.
func (w *writer) EnableFullDuplex() error { return nil }

// body is the answer's body: closing it ends the handler's context.
type body struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (b *body) Close() error {
	b.cancel()
	return b.PipeReader.Close()
}
