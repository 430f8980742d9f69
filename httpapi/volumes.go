package httpapi

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

func (s *Server) createVolume(w http.ResponseWriter, r *http.Request) {
	var body apiv1.CreateVolumeRequest
	if !s.decode(w, r, &body) {
		return
	}
	c, err := caller(r), error(nil)
	if body.ProjectID != "" {
		c, err = s.tenancy.InProject(r.Context(), c, body.ProjectID)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	v, err := s.mgr.CreateVolume(r.Context(), c, body.Name, body.SizeMB)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, renderVolume(v))
}

func (s *Server) listVolumes(w http.ResponseWriter, r *http.Request) {
	page, ok := s.page(w, r)
	if !ok {
		return
	}
	items, next, err := s.mgr.ListVolumes(r.Context(), caller(r), page)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.VolumeList{Items: renderAll(items, renderVolume), NextCursor: next})
}

func (s *Server) getVolume(w http.ResponseWriter, r *http.Request) {
	v, err := s.mgr.GetVolume(r.Context(), caller(r), r.PathValue("volume"))
	s.answerVolume(w, r, v, err)
}

func (s *Server) resizeVolume(w http.ResponseWriter, r *http.Request) {
	var body apiv1.ResizeVolumeRequest
	if !s.decode(w, r, &body) {
		return
	}
	v, err := s.mgr.ResizeVolume(r.Context(), caller(r), r.PathValue("volume"), body.SizeMB)
	s.answerVolume(w, r, v, err)
}

func (s *Server) deleteVolume(w http.ResponseWriter, r *http.Request) {
	v, err := s.mgr.DeleteVolume(r.Context(), caller(r), r.PathValue("volume"))
	s.answerVolume(w, r, v, err)
}

func (s *Server) answerVolume(w http.ResponseWriter, r *http.Request, v sbx.Volume, err error) {
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderVolume(v))
}

// volumeFile opens the volume the request names and the path its query
// names in it (relative to the volume's root, which nothing leaves).
func (s *Server) volumeFile(w http.ResponseWriter, r *http.Request) (*os.Root, string, bool) {
	p := r.URL.Query().Get("path")
	if p == "" {
		p = "/"
	}
	clean := strings.TrimPrefix(path.Clean("/"+p), "/")
	if clean == "" {
		clean = "."
	}
	root, err := s.mgr.VolumeRoot(r.Context(), caller(r), r.PathValue("volume"))
	if err != nil {
		s.error(w, r, err)
		return nil, "", false
	}
	return root, clean, true
}

func (s *Server) readVolumeFile(w http.ResponseWriter, r *http.Request) {
	root, name, ok := s.volumeFile(w, r)
	if !ok {
		return
	}
	defer root.Close()
	f, err := root.Open(name)
	if err == nil {
		defer f.Close()
		var fi fs.FileInfo
		if fi, err = f.Stat(); err == nil && fi.IsDir() {
			err = sbx.Invalid("path", "%s is a directory: list it with GET …/files/list", name)
		}
	}
	if err != nil {
		s.error(w, r, fileError(err, name))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	io.Copy(w, f)
}

func (s *Server) writeVolumeFile(w http.ResponseWriter, r *http.Request) {
	root, name, ok := s.volumeFile(w, r)
	if !ok {
		return
	}
	defer root.Close()
	if name == "." {
		s.error(w, r, sbx.Invalid("path", "path names the volume's root: name a file"))
		return
	}
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			s.error(w, r, fileError(err, dir))
			return
		}
	}
	f, err := root.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		s.error(w, r, fileError(err, name))
		return
	}
	_, err = io.Copy(f, r.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.error(w, r, fileError(err, name))
		return
	}
	fi, err := root.Stat(name)
	if err != nil {
		s.error(w, r, fileError(err, name))
		return
	}
	writeJSON(w, http.StatusOK, entry(name, fi))
}

func (s *Server) listVolumeFiles(w http.ResponseWriter, r *http.Request) {
	root, name, ok := s.volumeFile(w, r)
	if !ok {
		return
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		s.error(w, r, fileError(err, name))
		return
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		s.error(w, r, fileError(err, name))
		return
	}
	out := apiv1.EntryList{Items: []apiv1.EntryInfo{}}
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			out.Items = append(out.Items, entry(path.Join(name, e.Name()), fi))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// entry describes a volume's file at name.
func entry(name string, fi fs.FileInfo) apiv1.EntryInfo {
	typ := "other"
	switch {
	case fi.Mode().IsRegular():
		typ = "file"
	case fi.IsDir():
		typ = "dir"
	case fi.Mode()&fs.ModeSymlink != 0:
		typ = "symlink"
	}
	return apiv1.EntryInfo{Name: fi.Name(), Path: "/" + strings.TrimPrefix(name, "."), Type: typ, Size: fi.Size(),
		Mode: fmt.Sprintf("%04o", fi.Mode().Perm()), ModTime: fi.ModTime().UTC()}
}

// fileError is the API's error for a failed file operation on a volume.
func fileError(err error, name string) error {
	var e *sbx.Error
	switch {
	case errors.As(err, &e):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return sbx.Errorf(sbx.ENotFound, "%s does not exist in the volume", "/"+strings.TrimPrefix(name, "."))
	case errors.Is(err, syscall.ENOSPC):
		return sbx.Errorf(sbx.ENoStorage, "the volume is full: resize it")
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ELOOP), strings.Contains(err.Error(), "escapes"):
		return sbx.Invalid("path", "%s: %s", "/"+strings.TrimPrefix(name, "."), errors.Unwrap(err))
	}
	return err
}

func renderVolume(v sbx.Volume) apiv1.Volume {
	return apiv1.Volume{ID: v.ID, Name: v.Name, SizeMB: v.SizeMB, State: string(v.State), Provider: v.Provider, OrgID: v.OrgID,
		WorkspaceID: v.WorkspaceID, ProjectID: v.ProjectID, CreatedAt: v.CreatedAt, DeletedAt: timePtr(v.DeletedAt)}
}
