package client

import (
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sbxdev/sbx/apiv1"
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
// parent directories, and describes the file written.
func (f *Files) Write(ctx context.Context, path string, r io.Reader) (*apiv1.EntryInfo, error) {
	body := io.Reader(http.NoBody)
	if r != nil {
		body = io.NopCloser(r) // the transport would close a Closer
	}
	resp, err := f.c.send(ctx, http.MethodPut, f.path("files"), pathQuery(path), "application/octet-stream", body)
	if err != nil {
		return nil, err
	}
	return decodeBody[apiv1.EntryInfo](resp)
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
		w.err = readNDJSON(resp.Body, func(e apiv1.FileEvent) error { onEvent(e); return nil })
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
