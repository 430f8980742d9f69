package agentbridge

import (
	"encoding/json"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// The agent's file routes over the Remote's file calls; a mode is set by
// running chmod.

// queryPath is the request's ?path, which every file route needs.
func queryPath(r *http.Request) (string, error) {
	p := r.URL.Query().Get("path")
	if p == "" {
		return "", Errorf(http.StatusBadRequest, "give ?path")
	}
	return p, nil
}

func (b *Bridge) readFile(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	rc, err := b.remote.Read(r.Context(), p)
	if err != nil {
		return err
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	io.Copy(w, rc)
	return nil
}

// writeFile writes the body to ?path as ?user, then sets ?mode.
func (b *Bridge) writeFile(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	mode := q.Get("mode")
	if mode != "" {
		if _, err := strconv.ParseUint(mode, 8, 12); err != nil {
			return Errorf(http.StatusBadRequest, "?mode %q must be octal permissions such as 644", mode)
		}
	}
	if err := b.remote.Write(r.Context(), p, q.Get("user"), r.Body); err != nil {
		return err
	}
	if mode != "" {
		if err := b.run(r.Context(), "root", "chmod", mode, "--", p); err != nil {
			return err
		}
	}
	info, err := b.remote.Stat(r.Context(), p, q.Get("user"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// uploadFiles writes each part of a multipart body to ?path/<its filename>.
func (b *Bridge) uploadFiles(w http.ResponseWriter, r *http.Request) error {
	dir, err := queryPath(r)
	if err != nil {
		return err
	}
	user := r.URL.Query().Get("user")
	mr, err := r.MultipartReader()
	if err != nil {
		return Errorf(http.StatusBadRequest, "the body must be multipart/form-data: %v", err)
	}
	list := apiv1.EntryList{Items: []apiv1.EntryInfo{}}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Errorf(http.StatusBadRequest, "the multipart body: %v", err)
		}
		name := part.FileName()
		if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
			return Errorf(http.StatusBadRequest, "part %q: its filename must name a file in the directory", part.FormName())
		}
		p := path.Join(dir, name)
		if err := b.remote.Write(r.Context(), p, user, part); err != nil {
			return err
		}
		info, err := b.remote.Stat(r.Context(), p, user)
		if err != nil {
			return err
		}
		list.Items = append(list.Items, info)
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (b *Bridge) removeFile(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	if err := b.remote.Remove(r.Context(), p); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (b *Bridge) listFiles(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	depth := 1
	if v := r.URL.Query().Get("depth"); v != "" {
		if depth, err = strconv.Atoi(v); err != nil || depth < 1 || depth > 64 {
			return Errorf(http.StatusBadRequest, "?depth %q must be an integer from 1 to 64", v)
		}
	}
	items, err := b.remote.List(r.Context(), p, depth)
	if err != nil {
		return err
	}
	if items == nil {
		items = []apiv1.EntryInfo{}
	}
	writeJSON(w, http.StatusOK, apiv1.EntryList{Items: items})
	return nil
}

func (b *Bridge) statFile(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	info, err := b.remote.Stat(r.Context(), p, "")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// makeDir makes a directory and its parents: 201, or 200 when it exists.
func (b *Bridge) makeDir(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.PathRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Path == "" {
		return Errorf(http.StatusBadRequest, "give path")
	}
	user := r.URL.Query().Get("user")
	existed, err := b.remote.MakeDir(r.Context(), req.Path, user)
	if err != nil {
		return err
	}
	info, err := b.remote.Stat(r.Context(), req.Path, user)
	if err != nil {
		return err
	}
	if info.Type != "dir" {
		return Errorf(http.StatusConflict, "%s exists and is not a directory", req.Path)
	}
	status := http.StatusCreated
	if existed {
		status = http.StatusOK
	}
	writeJSON(w, status, info)
	return nil
}

func (b *Bridge) moveFile(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.MoveRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.From == "" || req.To == "" {
		return Errorf(http.StatusBadRequest, "give from and to")
	}
	if err := b.remote.Move(r.Context(), req.From, req.To); err != nil {
		return err
	}
	info, err := b.remote.Stat(r.Context(), req.To, "")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// watchFiles streams the Remote's watch as NDJSON until the client leaves.
func (b *Bridge) watchFiles(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	recursive := false
	if v := r.URL.Query().Get("recursive"); v != "" {
		if recursive, err = strconv.ParseBool(v); err != nil {
			return Errorf(http.StatusBadRequest, "?recursive %q must be true or false", v)
		}
	}
	watch, err := b.remote.Watch(r.Context(), p, recursive)
	if err != nil {
		return err
	}
	defer watch.Close()
	w.Header().Set("Content-Type", apiv1.NDJSON)
	w.WriteHeader(http.StatusOK)
	flush(w)
	enc := json.NewEncoder(w)
	for {
		ev, err := watch.Next()
		if err != nil {
			if r.Context().Err() == nil && err != io.EOF {
				enc.Encode(apiv1.FileEvent{Type: "error", At: time.Now().UTC(), Error: err.Error()})
			}
			return nil
		}
		enc.Encode(ev)
		flush(w)
	}
}
