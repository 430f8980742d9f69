package client

import (
	"bufio"
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"strconv"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/ndjson"
)

// Files reads and writes a sandbox's files, through its agent. Paths are
// absolute in the sandbox; a relative one is relative to /workspace. Bodies
// stream both ways, never held whole in memory. A missing path is an
// *apiv1.Error with Code 404 whose Detail names the path.
type Files struct{ sandboxAPI }

// Files returns the files of the sandbox with this UUID or provider sandbox
// ID, for callers that have no Sandbox handle.
func (c *Client) Files(id string) *Files { return &Files{sandboxAPI{c, id}} }

// FileUpload is one file of WriteFiles.
type FileUpload struct {
	Name string    // the file's name in the directory
	Data io.Reader // its bytes, read to the end and not closed
}

// Read opens a file for reading as it streams; the caller closes it.
func (f *Files) Read(ctx context.Context, path string) (io.ReadCloser, error) {
	resp, err := f.c.send(ctx, http.MethodGet, f.path("files"), pathQuery(path), "", nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// ReadBytes reads a whole file.
func (f *Files) ReadBytes(ctx context.Context, path string) ([]byte, error) {
	r, err := f.Read(ctx, path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// Write writes r, read to its end and not closed, to a file, making its
// parent directories, and describes the file written. An r whose size is
// known (a regular *os.File, or anything with a Len method such as a
// bytes.Reader) goes with its length; any other in chunks of up to 1 MiB.
func (f *Files) Write(ctx context.Context, path string, r io.Reader) (*apiv1.EntryInfo, error) {
	resp, err := f.c.send(ctx, http.MethodPut, f.path("files"), pathQuery(path), "application/octet-stream", uploadBody(r))
	if err != nil {
		return nil, err
	}
	return decodeBody[apiv1.EntryInfo](resp)
}

// uploadChunk is the most an upload of unknown length sends in one chunk:
// each chunk costs the agent a few reads, which are dear in gVisor, so
// io.Copy's 32 KiB chunks made uploads three times slower.
const uploadChunk = 1 << 20

// uploadBody is r as a request body: sized when its size is known, else
// read through a buffer whose WriteTo gives the transport large chunks.
// Neither lets the transport close r.
func uploadBody(r io.Reader) io.Reader {
	if r == nil {
		return http.NoBody
	}
	if n := sizeOf(r); n >= 0 {
		return sized{r, n}
	}
	return io.NopCloser(bufio.NewReaderSize(r, uploadChunk))
}

// sized is a body of a known length.
type sized struct {
	io.Reader
	n int64
}

// sizeOf is how many bytes r has left to read, or -1 when that is unknown.
func sizeOf(r io.Reader) int64 {
	switch r := r.(type) {
	case interface{ Len() int }:
		return int64(r.Len())
	case *os.File:
		info, err := r.Stat()
		if err != nil || !info.Mode().IsRegular() {
			return -1
		}
		if off, err := r.Seek(0, io.SeekCurrent); err == nil && off <= info.Size() {
			return info.Size() - off
		}
	}
	return -1
}

// WriteFiles writes files into dir in one multipart request, streamed, and
// describes the files written.
func (f *Files) WriteFiles(ctx context.Context, dir string, files []FileUpload) ([]apiv1.EntryInfo, error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() { pw.CloseWithError(writeParts(mw, files)) }()
	resp, err := f.c.send(ctx, http.MethodPost, f.path("files"), pathQuery(dir), mw.FormDataContentType(), pr)
	pr.Close() // ends writeParts if the answer came before the whole body went
	if err != nil {
		return nil, err
	}
	l, err := decodeBody[apiv1.EntryList](resp)
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// writeParts writes each file as a part, then the closing boundary.
func writeParts(mw *multipart.Writer, files []FileUpload) error {
	for _, file := range files {
		part, err := mw.CreateFormFile("file", file.Name)
		if err != nil {
			return err
		}
		if file.Data != nil {
			if _, err := io.Copy(part, file.Data); err != nil {
				return err
			}
		}
	}
	return mw.Close()
}

// List describes the entries under path to depth levels (0: the agent's
// default, 1), sorted by path.
func (f *Files) List(ctx context.Context, path string, depth int) ([]apiv1.EntryInfo, error) {
	q := pathQuery(path)
	if depth > 0 {
		q.Set("depth", strconv.Itoa(depth))
	}
	l, err := call[apiv1.EntryList](ctx, f.c, http.MethodGet, f.path("files", "list"), q, nil)
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// Stat describes one entry.
func (f *Files) Stat(ctx context.Context, path string) (*apiv1.EntryInfo, error) {
	return call[apiv1.EntryInfo](ctx, f.c, http.MethodGet, f.path("files", "stat"), pathQuery(path), nil)
}

// MakeDir makes a directory and its parents; an existing directory is no error.
func (f *Files) MakeDir(ctx context.Context, path string) (*apiv1.EntryInfo, error) {
	return call[apiv1.EntryInfo](ctx, f.c, http.MethodPost, f.path("files", "mkdir"), nil, apiv1.PathRequest{Path: path})
}

// Rename moves an entry and describes it at its destination.
func (f *Files) Rename(ctx context.Context, from, to string) (*apiv1.EntryInfo, error) {
	return call[apiv1.EntryInfo](ctx, f.c, http.MethodPost, f.path("files", "move"), nil, apiv1.MoveRequest{From: from, To: to})
}

// Remove removes an entry, a directory with all it holds.
func (f *Files) Remove(ctx context.Context, path string) error {
	return f.c.do(ctx, http.MethodDelete, f.path("files"), pathQuery(path), nil, nil)
}

// Watch watches path (and, with recursive, what is under it) and calls
// onEvent for each change, in order, from one goroutine, until Stop or until
// ctx is done. It returns once the watch is set up: changes from then on are
// seen.
func (f *Files) Watch(ctx context.Context, path string, recursive bool, onEvent func(apiv1.FileEvent)) (*WatchHandle, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	q := pathQuery(path)
	q.Set("recursive", strconv.FormatBool(recursive))
	resp, err := f.c.send(ctx, http.MethodGet, f.path("files", "watch"), q, "", nil)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	w := &WatchHandle{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer resp.Body.Close()
		w.err = ndjson.Read(resp.Body, func(e apiv1.FileEvent) error {
			if e.Type == "error" {
				return &SandboxStoppedError{Reason: e.Error}
			}
			onEvent(e)
			return nil
		})
		switch {
		case errors.Is(context.Cause(ctx), errStopped):
			w.err = nil
		case ctx.Err() != nil:
			w.err = context.Cause(ctx)
		case w.err == nil:
			w.err = errors.New("the agent ended the watch of " + path)
		}
		cancel(nil)
	}()
	return w, nil
}

// WatchHandle is a running Watch.
type WatchHandle struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
	err    error // set before done closes
}

// errStopped is the cause of a watch that Stop ended.
var errStopped = errors.New("stopped")

// Stop ends the watch; no event is delivered once Wait returns.
func (w *WatchHandle) Stop() { w.cancel(errStopped) }

// Wait waits for the watch to end and says why: nil after Stop, the
// context's error when it ended the watch, else what broke the stream.
func (w *WatchHandle) Wait() error {
	<-w.done
	return w.err
}

// pathQuery is the query naming a path.
func pathQuery(path string) url.Values { return url.Values{"path": {path}} }
