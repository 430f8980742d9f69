package agent

import (
	"errors"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
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
		return "", invalid("the query needs a path")
	}
	return a.resolve(p), nil
}

// readFile sends a file's bytes; http.ServeContent streams them (with
// sendfile) and answers Range requests too.
func (a *Agent) readFile(w http.ResponseWriter, r *http.Request) error {
	path, err := a.pathParam(r)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fsError(path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fsError(path, err)
	}
	if fi.IsDir() {
		return fsError(path, syscall.EISDIR)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, "", fi.ModTime(), f)
	return nil
}

// writeFile writes the body to the path; with mode (octal, e.g. 755) the
// file gets that mode, else a new file gets 644 and a replaced one keeps its.
func (a *Agent) writeFile(w http.ResponseWriter, r *http.Request) error {
	path, err := a.pathParam(r)
	if err != nil {
		return err
	}
	var mode fs.FileMode
	if m := r.URL.Query().Get("mode"); m != "" {
		v, err := strconv.ParseUint(m, 8, 32)
		if err != nil || v > 0o777 {
			return invalid("mode %q must be octal permissions, 0 to 777", m)
		}
		mode = fs.FileMode(v)
	}
	acct, err := a.lookupAccount(r.URL.Query().Get("user"))
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
	acct, err := a.lookupAccount(r.URL.Query().Get("user"))
	if err != nil {
		return err
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return invalid("the body must be multipart/form-data: %v", err)
	}
	list := apiv1.EntryList{Items: []apiv1.EntryInfo{}}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return invalid("reading the multipart body: %v", err)
		}
		// Not part.FileName(), which drops the directories.
		_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
		name := params["filename"]
		if name == "" {
			return invalid("part %q has no filename", part.FormName())
		}
		clean := filepath.Clean(name)
		if !filepath.IsLocal(clean) {
			return invalid("filename %q leaves %s", name, dir)
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
// its owner, and its mode unless perm is given (not 0); a new file and the
// parents it makes belong to acct.
func writeStream(path string, body io.Reader, perm fs.FileMode, acct *account) (apiv1.EntryInfo, error) {
	mode := fs.FileMode(0o644)
	old, err := os.Stat(path)
	switch {
	case err == nil && old.IsDir():
		return apiv1.EntryInfo{}, fsError(path, syscall.EISDIR)
	case err == nil:
		mode = old.Mode().Perm()
	}
	if perm != 0 {
		mode = perm
	}
	dir := filepath.Dir(path)
	if err := mkdirAllAs(dir, acct); err != nil {
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
		return apiv1.EntryInfo{}, invalid("reading the upload of %s: %v", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return apiv1.EntryInfo{}, fsError(path, err)
	}
	if st, ok := statOf(old); ok {
		tmp.Chown(int(st.Uid), int(st.Gid)) // best effort: as root it works
	} else if err := chownNew(tmp.Name(), acct); err != nil {
		return apiv1.EntryInfo{}, fsError(path, err)
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
