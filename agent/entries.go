package agent

import (
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sbxdev/sbx/apiv1"
)

// The /files routes about entries rather than contents: list, stat,
// mkdir, move and remove.

func (a *Agent) listFiles(w http.ResponseWriter, r *http.Request) error {
	path, err := a.pathParam(r)
	if err != nil {
		return err
	}
	depth := 1
	d, given, err := queryParam(r, "depth")
	if err != nil {
		return err
	}
	if given && d != "0" { // 0: the default
		if depth, err = strconv.Atoi(d); err != nil || depth < 1 {
			return invalidField("depth", "depth must be a number from 1, not %s", quote(d))
		}
	}
	list := apiv1.EntryList{Items: []apiv1.EntryInfo{}}
	err = walkDir(path, depth, func(p string, fi fs.FileInfo) { list.Items = append(list.Items, entryInfo(p, fi)) })
	if err != nil {
		return fsError(path, err)
	}
	slices.SortFunc(list.Items, func(a, b apiv1.EntryInfo) int { return strings.Compare(a.Path, b.Path) })
	writeJSON(w, http.StatusOK, list)
	return nil
}

// walkDir calls fn with each of dir's entries, and theirs to depth levels,
// without following symlinks below dir; subdirectories it cannot read are
// skipped.
func walkDir(dir string, depth int, fn func(path string, fi fs.FileInfo)) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		fi, err := e.Info()
		if err != nil {
			continue // gone since ReadDir
		}
		fn(p, fi)
		if depth > 1 && e.IsDir() {
			walkDir(p, depth-1, fn)
		}
	}
	return nil
}

func (a *Agent) statFile(w http.ResponseWriter, r *http.Request) error {
	path, err := a.pathParam(r)
	if err != nil {
		return err
	}
	info, err := stat(path)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// makeDir makes a directory and its parents: 201, or 200 when it exists.
func (a *Agent) makeDir(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.PathRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Path == "" {
		return invalidField("path", "the body needs a path")
	}
	path := a.resolve(req.Path)
	acct, err := a.userParam(r)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if fi, err := os.Stat(path); err == nil {
		if !fi.IsDir() {
			return conflict("%s: already exists and is not a directory", short(path))
		}
		status = http.StatusOK
	} else if err := acct.as(func() error { return os.MkdirAll(path, 0o755) }); err != nil {
		return fsError(path, err)
	}
	info, err := stat(path)
	if err != nil {
		return err
	}
	writeJSON(w, status, info)
	return nil
}

// moveFile renames as os.Rename does: a file replaces a file, nothing
// replaces a directory (409), and nothing moves across file systems (400).
func (a *Agent) moveFile(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.MoveRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.From == "" || req.To == "" {
		return invalid("the body needs from and to")
	}
	from, to := a.resolve(req.From), a.resolve(req.To)
	if _, err := os.Lstat(from); err != nil {
		return fsError(from, err)
	}
	if err := os.Rename(from, to); err != nil {
		return fsError(fmt.Sprintf("moving %s to %s", short(from), short(to)), err)
	}
	info, err := stat(to)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// removeFile removes a path and everything under it.
func (a *Agent) removeFile(w http.ResponseWriter, r *http.Request) error {
	path, err := a.pathParam(r)
	if err != nil {
		return err
	}
	if path == "/" {
		return invalid("refusing to remove /")
	}
	if _, err := os.Lstat(path); err != nil {
		return fsError(path, err)
	}
	if err := os.RemoveAll(path); err != nil {
		return fsError(path, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// stat describes path itself (a symlink, not its target).
func stat(path string) (apiv1.EntryInfo, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return apiv1.EntryInfo{}, fsError(path, err)
	}
	return entryInfo(path, fi), nil
}

func entryInfo(path string, fi fs.FileInfo) apiv1.EntryInfo {
	e := apiv1.EntryInfo{
		Name: fi.Name(), Path: path, Type: "other", Size: fi.Size(),
		Mode: fmt.Sprintf("%04o", fi.Mode().Perm()), ModTime: fi.ModTime().UTC(),
	}
	switch t := fi.Mode().Type(); {
	case t.IsRegular():
		e.Type = "file"
	case t == fs.ModeDir:
		e.Type = "dir"
	case t == fs.ModeSymlink:
		e.Type = "symlink"
		e.Target, _ = os.Readlink(path)
	}
	return e
}
