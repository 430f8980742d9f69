package agent

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sbxdev/sbx/apiv1"
)

// uploadBuffer is the size of each write of an upload to its file: in
// gVisor a write costs about as much at 1 MiB as at io.Copy's 32 KiB.
const uploadBuffer = 1 << 20

// The /files routes that move file contents: downloads, uploads and
// multipart uploads, all streamed, never held whole in memory.

// pathParam is the request's ?path, resolved.
func (a *Agent) pathParam(r *http.Request) (string, error) {
	p := r.URL.Query().Get("path")
	if p == "" {
		return "", invalidField("path", "the query needs a path")
	}
	return a.resolve(p), nil
}

// queryParam is the query parameter name and whether it is given; given
// empty (?depth=) is a 400.
func queryParam(r *http.Request, name string) (string, bool, error) {
	v, ok := r.URL.Query()[name]
	if !ok {
		return "", false, nil
	}
	if v[0] == "" {
		return "", false, invalidField(name, "query parameter %s is empty", quote(name))
	}
	return v[0], true, nil
}

// readFile sends the bytes of the file ?path names (serveFile).
func (a *Agent) readFile(w http.ResponseWriter, r *http.Request) error {
	path, err := a.pathParam(r)
	if err != nil {
		return err
	}
	return a.serveFile(w, r, path)
}

// serveFile sends a regular file's bytes: http.ServeContent streams them
// (with sendfile) and answers Range requests too, when the file can seek
// and has a size; a file that cannot or has none (those of /proc and /sys)
// is streamed as it reads. What cannot be read at all (a directory, a
// device, a named pipe, /proc/PID/mem) is a 4xx before anything is sent.
func (a *Agent) serveFile(w http.ResponseWriter, r *http.Request, path string) error {
	// Non-blocking, so that opening a named pipe does not wait for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return fsError(path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fsError(path, err)
	}
	switch {
	case fi.IsDir():
		return fsError(path, syscall.EISDIR)
	case !fi.Mode().IsRegular():
		return fsError(path, errNotRegular)
	}
	first := make([]byte, 32<<10)
	n, err := f.ReadAt(first, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fsError(path, err)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	size, err := f.Seek(0, io.SeekEnd)
	if err == nil && size > 0 && size == fi.Size() && (n == len(first) || int64(n) == size) {
		var content io.ReadSeeker = f
		if int64(n) == size {
			content = bytes.NewReader(first[:n]) // all of it is read already: not again
		}
		http.ServeContent(&enveloped{ResponseWriter: w, path: path}, r, "", fi.ModTime(), content)
		return nil
	}
	// No size to trust (a file of /proc or /sys): send what the file
	// reads, to its end.
	if n == len(first) {
		if _, err := f.Seek(int64(n), io.SeekStart); err != nil {
			return fsError(path, err)
		}
	}
	if n < len(first) {
		w.Header().Set("Content-Length", strconv.Itoa(n))
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := w.Write(first[:n]); err != nil || n < len(first) {
		return nil
	}
	if _, err := io.Copy(w, f); err != nil {
		a.log.Debug("reading a file", "path", path, "err", err)
	}
	return nil
}

// enveloped answers http.ServeContent's errors (a bad Range, a failed
// precondition) with the error envelope instead of its text.
type enveloped struct {
	http.ResponseWriter
	path   string
	failed bool
}

func (e *enveloped) WriteHeader(code int) {
	if code < 400 {
		e.ResponseWriter.WriteHeader(code)
		return
	}
	e.failed = true
	e.Header().Del("X-Content-Type-Options")
	writeJSON(e.ResponseWriter, code, apiError(code, "%s: %s", short(e.path), strings.ToLower(http.StatusText(code))))
}

func (e *enveloped) Write(b []byte) (int, error) {
	if e.failed {
		return len(b), nil // ServeContent's own text
	}
	return e.ResponseWriter.Write(b)
}

// ReadFrom keeps ServeContent's copy on the response's own ReadFrom, which
// sends a file with sendfile: through Write, a 256 MB download took 4.5×
// as long in gVisor.
func (e *enveloped) ReadFrom(src io.Reader) (int64, error) {
	if e.failed {
		return io.Copy(io.Discard, src)
	}
	return io.Copy(e.ResponseWriter, src)
}

// writeFile writes the body to the path; with mode (octal, e.g. 755) the
// file gets that mode, else a new file gets 644 and a replaced one keeps its.
func (a *Agent) writeFile(w http.ResponseWriter, r *http.Request) error {
	path, err := a.pathParam(r)
	if err != nil {
		return err
	}
	var mode fs.FileMode
	m, given, err := queryParam(r, "mode")
	if err != nil {
		return err
	}
	if given {
		v, err := strconv.ParseUint(m, 8, 32)
		if err != nil || v > 0o777 {
			return invalidField("mode", "mode %s must be octal permissions, 0 to 777", quote(m))
		}
		mode = fs.FileMode(v)
	}
	acct, err := a.userParam(r)
	if err != nil {
		return err
	}
	info, err := writeStream(path, r.Body, mode, acct)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// uploadFiles writes each part of a multipart body to DIR/<its filename>,
// in order; the filename may hold subdirectories, but none that leave DIR.
// Each part is written whole or not at all, but a bad part leaves the parts
// before it written.
func (a *Agent) uploadFiles(w http.ResponseWriter, r *http.Request) error {
	dir, err := a.pathParam(r)
	if err != nil {
		return err
	}
	acct, err := a.userParam(r)
	if err != nil {
		return err
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return apiError(http.StatusUnsupportedMediaType, "the body must be multipart/form-data with a boundary, not %s", quote(r.Header.Get("Content-Type")))
	}
	list := apiv1.EntryList{Items: []apiv1.EntryInfo{}}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return invalid("reading the multipart body: %s", short(err.Error()))
		}
		// Not part.FileName(), which drops the directories.
		_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
		name := params["filename"]
		if name == "" {
			return invalid("part %s has no filename", quote(part.FormName()))
		}
		clean := filepath.Clean(name)
		if !filepath.IsLocal(clean) {
			return invalid("filename %s leaves %s", quote(name), short(dir))
		}
		info, err := writeStream(filepath.Join(dir, clean), part, 0, acct)
		if err != nil {
			return err
		}
		list.Items = append(list.Items, info)
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

// writeStream writes body to path through a temporary file in the same
// directory, renamed over path once all of it is there: a failed upload
// leaves nothing behind. It makes the parents; a file it replaces keeps
// its owner where it may, and its mode unless perm is given (not 0). It
// runs as acct (account.as): a new file and the parents it makes belong to
// acct, and where acct may not write it is refused.
func writeStream(path string, body io.Reader, perm fs.FileMode, acct *account) (info apiv1.EntryInfo, err error) {
	err = acct.as(func() error {
		info, err = writeAs(path, body, perm)
		return err
	})
	return info, err
}

// writeAs is writeStream with the caller's credentials.
func writeAs(path string, body io.Reader, perm fs.FileMode) (apiv1.EntryInfo, error) {
	mode := fs.FileMode(0o644)
	old, err := os.Stat(path)
	switch {
	case err == nil && old.IsDir():
		return apiv1.EntryInfo{}, fsError(path, syscall.EISDIR)
	case err == nil && !old.Mode().IsRegular():
		// Renamed over, a device or pipe would be replaced, not written.
		return apiv1.EntryInfo{}, fsError(path, errNotRegular)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return apiv1.EntryInfo{}, fsError(path, err)
	case err == nil:
		mode = old.Mode().Perm()
	}
	if perm != 0 {
		mode = perm
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return apiv1.EntryInfo{}, fsError(dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".sbx-upload-*")
	if err != nil {
		return apiv1.EntryInfo{}, fsError(path, err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	defer tmp.Close()
	if _, err := io.CopyBuffer(struct{ io.Writer }{tmp}, body, make([]byte, uploadBuffer)); err != nil {
		if _, onDisk := errors.AsType[*fs.PathError](err); onDisk {
			return apiv1.EntryInfo{}, fsError(path, err)
		}
		return apiv1.EntryInfo{}, invalid("reading the upload of %s: %v", short(path), err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return apiv1.EntryInfo{}, fsError(path, err)
	}
	if st, ok := statOf(old); ok {
		tmp.Chown(int(st.Uid), int(st.Gid)) // best effort: as root it works
	}
	if err := tmp.Close(); err != nil {
		return apiv1.EntryInfo{}, fsError(path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return apiv1.EntryInfo{}, fsError(path, err)
	}
	return stat(path)
}

// statOf is fi's system stat, when there is one.
func statOf(fi fs.FileInfo) (*syscall.Stat_t, bool) {
	if fi == nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}
