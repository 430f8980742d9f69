package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// execd's files over the agent's file machinery (serveFile, writeStream,
// walkDir). A path is absolute, or relative to the agent's working
// directory; modes are written as octal digits read as a decimal number
// (644), as execd has them; files are written as the agent's default user
// unless an upload names an owner.

// fileInfo is execd's FileInfo.
type fileInfo struct {
	Path       string    `json:"path"`
	Type       string    `json:"type"` // file, directory, symlink or other
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at"`
	CreatedAt  time.Time `json:"created_at"` // the inode's change time: Linux keeps no creation time the agent can read
	Owner      string    `json:"owner"`
	Group      string    `json:"group"`
	Mode       int       `json:"mode"`
}

// permission is execd's Permission, and FileMetadata without its path.
type permission struct {
	Owner string `json:"owner"`
	Group string `json:"group"`
	Mode  *int   `json:"mode"`
}

// info describes path, whose Lstat is fi, as execd does.
func (o *owners) info(path string, fi fs.FileInfo) fileInfo {
	out := fileInfo{Path: path, Size: fi.Size(), ModifiedAt: fi.ModTime().UTC(), CreatedAt: fi.ModTime().UTC(), Type: "other"}
	out.Mode, _ = strconv.Atoi(strconv.FormatUint(uint64(fi.Mode().Perm()), 8))
	switch m := fi.Mode(); {
	case m.IsRegular():
		out.Type = "file"
	case m.IsDir():
		out.Type = "directory"
	case m&fs.ModeSymlink != 0:
		out.Type = "symlink"
	}
	if st, ok := statOf(fi); ok {
		out.Owner, out.Group = idName(o.users, st.Uid), idName(o.groups, st.Gid)
		out.CreatedAt = time.Unix(st.Ctim.Unix()).UTC()
	}
	return out
}

// execdInfo answers each ?path's FileInfo.
func (a *Agent) execdInfo(w http.ResponseWriter, r *http.Request) error {
	paths, err := queryPaths(r)
	if err != nil {
		return err
	}
	o, out := readOwners(), map[string]fileInfo{}
	for _, p := range paths {
		fi, err := os.Lstat(a.resolve(p))
		if err != nil {
			return fsError(p, err)
		}
		out[p] = o.info(a.resolve(p), fi)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// execdRemoveFiles removes files, never a directory (DELETE /directories).
func (a *Agent) execdRemoveFiles(w http.ResponseWriter, r *http.Request) error {
	paths, err := queryPaths(r)
	if err != nil {
		return err
	}
	for _, p := range paths {
		path := a.resolve(p)
		if fi, err := os.Lstat(path); err != nil {
			return fsError(path, err)
		} else if fi.IsDir() {
			return invalidField("path", "%s is a directory: DELETE /directories removes directories", quote(path))
		}
		if err := os.Remove(path); err != nil {
			return fsError(path, err)
		}
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// execdRemoveDirs removes directories and everything under them.
func (a *Agent) execdRemoveDirs(w http.ResponseWriter, r *http.Request) error {
	paths, err := queryPaths(r)
	if err != nil {
		return err
	}
	for _, p := range paths {
		path := a.resolve(p)
		if path == "/" {
			return invalidField("path", "refusing to remove /")
		}
		if _, err := os.Lstat(path); err != nil {
			return fsError(path, err)
		}
		if err := os.RemoveAll(path); err != nil {
			return fsError(path, err)
		}
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// execdMakeDirs makes directories with their parents as the default user
// (as an upload writes), then gives each the mode, owner and group asked
// for.
func (a *Agent) execdMakeDirs(w http.ResponseWriter, r *http.Request) error {
	var req map[string]permission
	if err := decodeExecd(r, &req); err != nil {
		return err
	}
	acct, err := a.lookupAccount("")
	if err != nil {
		return err
	}
	for p, perm := range req {
		path := a.resolve(p)
		if err := acct.as(func() error { return os.MkdirAll(path, 0o755) }); err != nil {
			return fsError(path, err)
		}
		if err := a.setPermission(path, perm); err != nil {
			return err
		}
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// execdChmod sets files' modes, owners and groups.
func (a *Agent) execdChmod(w http.ResponseWriter, r *http.Request) error {
	var req map[string]permission
	if err := decodeExecd(r, &req); err != nil {
		return err
	}
	for p, perm := range req {
		if err := a.setPermission(a.resolve(p), perm); err != nil {
			return err
		}
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// setPermission gives path the mode (octal digits), owner and group that
// perm names; what it leaves out stays.
func (a *Agent) setPermission(path string, perm permission) error {
	if perm.Mode != nil {
		mode, err := parseMode(*perm.Mode)
		if err != nil {
			return err
		}
		if err := os.Chmod(path, mode); err != nil {
			return fsError(path, err)
		}
	}
	uid, gid := -1, -1
	if perm.Owner != "" {
		acct, err := resolveAccount(perm.Owner)
		if err != nil {
			return err
		}
		uid = int(acct.uid)
	}
	if perm.Group != "" {
		g, err := lookupGroup(perm.Group)
		if err != nil {
			return err
		}
		gid = int(g)
	}
	if uid != -1 || gid != -1 {
		if err := os.Lchown(path, uid, gid); err != nil {
			return fsError(path, err)
		}
	}
	return nil
}

// parseMode reads a mode written as octal digits (755).
func parseMode(m int) (fs.FileMode, error) {
	n, err := strconv.ParseUint(strconv.Itoa(m), 8, 32)
	if err != nil || n > 0o7777 {
		return 0, invalidField("mode", "mode %d must be octal digits, such as 644 or 755", m)
	}
	mode := fs.FileMode(n & 0o777)
	if n&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if n&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if n&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode, nil
}

// execdMove renames files as os.Rename does.
func (a *Agent) execdMove(w http.ResponseWriter, r *http.Request) error {
	var req []struct {
		Src  string `json:"src"`
		Dest string `json:"dest"`
	}
	if err := decodeExecd(r, &req); err != nil {
		return err
	}
	for i, m := range req {
		if m.Src == "" || m.Dest == "" {
			return invalidField(fmt.Sprintf("[%d]", i), "a move needs src and dest")
		}
		from, to := a.resolve(m.Src), a.resolve(m.Dest)
		if err := os.Rename(from, to); err != nil {
			return fsError(fmt.Sprintf("moving %s to %s", short(from), short(to)), err)
		}
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// maxFound bounds what a search or a listing answers.
const maxFound = 10000

// execdList lists a directory's entries to ?depth levels (1: its
// children), each followed by its own, in lexical order; symlinks are not
// followed, and a path that is one is refused.
func (a *Agent) execdList(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if q.Get("path") == "" {
		return invalidField("path", "the query needs path")
	}
	depth := 1
	if v := q.Get("depth"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 64 {
			return invalidField("depth", "depth %s must be from 0 to 64", quote(v))
		}
		depth = max(n, 1)
	}
	dir := a.resolve(q.Get("path"))
	if fi, err := os.Lstat(dir); err != nil {
		return fsError(dir, err)
	} else if fi.Mode()&fs.ModeSymlink != 0 {
		return invalidField("path", "%s is a symbolic link: list the directory it points to", quote(dir))
	}
	o, out := readOwners(), []fileInfo{}
	err := walkDir(dir, depth, func(path string, fi fs.FileInfo) {
		if len(out) < maxFound {
			out = append(out, o.info(path, fi))
		}
	})
	if err != nil {
		return fsError(dir, err)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// execdSearch finds the files under ?path whose path below it matches the
// glob ?pattern (** any path, * and ? within a name; a pattern without /
// is matched against names), by default every file.
func (a *Agent) execdSearch(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if q.Get("path") == "" {
		return invalidField("path", "the query needs path")
	}
	pattern := q.Get("pattern")
	if pattern == "" {
		pattern = "**"
	}
	match, err := globMatcher(pattern)
	if err != nil {
		return err
	}
	root := a.resolve(q.Get("path"))
	if _, err := os.Stat(root); err != nil {
		return fsError(root, err)
	}
	o, out := readOwners(), []fileInfo{}
	walkDir(root, 64, func(path string, fi fs.FileInfo) {
		rel := strings.TrimPrefix(path, strings.TrimSuffix(root, "/")+"/")
		if !fi.IsDir() && len(out) < maxFound && match(rel) {
			out = append(out, o.info(path, fi))
		}
	})
	writeJSON(w, http.StatusOK, out)
	return nil
}

// globMatcher compiles a glob: ** matches any path, * and ? within a name.
// A pattern without / matches a name in any directory.
func globMatcher(pattern string) (func(string) bool, error) {
	var re strings.Builder
	re.WriteString("^")
	if !strings.Contains(pattern, "/") && pattern != "**" {
		re.WriteString("(.*/)?")
	}
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case strings.HasPrefix(pattern[i:], "**/"):
			re.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(pattern[i:], "**"):
			re.WriteString(".*")
			i++
		case c == '*':
			re.WriteString("[^/]*")
		case c == '?':
			re.WriteString("[^/]")
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString("$")
	rx, err := regexp.Compile(re.String())
	if err != nil {
		return nil, invalidField("pattern", "pattern %s is not a glob: %s", quote(pattern), short(err.Error()))
	}
	return rx.MatchString, nil
}

// execdReplace replaces every occurrence of a string in files, keeping
// their modes; with ?verbose=true it answers how many each had.
func (a *Agent) execdReplace(w http.ResponseWriter, r *http.Request) error {
	var req map[string]struct {
		Old string `json:"old"`
		New string `json:"new"`
	}
	if err := decodeExecd(r, &req); err != nil {
		return err
	}
	acct, err := a.lookupAccount("")
	if err != nil {
		return err
	}
	counts := map[string]struct {
		ReplacedCount int `json:"replacedCount"`
	}{}
	for p, rep := range req {
		if rep.Old == "" {
			return invalidField(p+".old", "old must not be empty")
		}
		path := a.resolve(p)
		data, err := os.ReadFile(path)
		if err != nil {
			return fsError(path, err)
		}
		n := strings.Count(string(data), rep.Old)
		if n > 0 {
			if _, err := writeStream(path, strings.NewReader(strings.ReplaceAll(string(data), rep.Old, rep.New)), 0, acct); err != nil {
				return err
			}
		}
		c := counts[p]
		c.ReplacedCount = n
		counts[p] = c
	}
	if r.URL.Query().Get("verbose") == "true" {
		writeJSON(w, http.StatusOK, counts)
		return nil
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// execdUpload writes files from a multipart body of pairs of parts: a
// metadata part (JSON: path, and the owner, group and mode to give it),
// then a file part, its contents. A file is written as its owner, or the
// default user; a bad pair leaves those before it written.
func (a *Agent) execdUpload(w http.ResponseWriter, r *http.Request) error {
	mr, err := r.MultipartReader()
	if err != nil {
		return invalid("the body must be multipart/form-data, not %s", quote(r.Header.Get("Content-Type")))
	}
	var meta *struct {
		Path string `json:"path"`
		permission
	}
	written := 0
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return invalid("reading the multipart body: %s", short(err.Error()))
		}
		switch part.FormName() {
		case "metadata":
			meta = nil
			dec := json.NewDecoder(io.LimitReader(part, maxJSONBody))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&meta); err != nil || meta == nil || meta.Path == "" {
				return invalidField("metadata", "a metadata part must be JSON naming the file's path (and its owner, group and mode)")
			}
		case "file":
			if meta == nil {
				return invalidField("metadata", "a file part must follow its metadata part")
			}
			if err := a.uploadOne(a.resolve(meta.Path), meta.permission, part); err != nil {
				return err
			}
			meta, written = nil, written+1
		}
	}
	if written == 0 {
		return invalid("the multipart body has no pair of a metadata and a file part")
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// uploadOne writes body to path as perm's owner (the default user when
// none), then gives it perm's group and mode.
func (a *Agent) uploadOne(path string, perm permission, body io.Reader) error {
	acct, err := a.lookupAccount(perm.Owner)
	if err != nil {
		return err
	}
	var mode fs.FileMode
	if perm.Mode != nil {
		if mode, err = parseMode(*perm.Mode); err != nil {
			return err
		}
	}
	if _, err := writeStream(path, body, mode, acct); err != nil {
		return err
	}
	return a.setPermission(path, permission{Group: perm.Group})
}

// execdDownload sends the bytes of the file ?path names (serveFile: Range
// requests are served); ?offset and ?limit ask for a range too.
func (a *Agent) execdDownload(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if q.Get("path") == "" {
		return invalidField("path", "the query needs path")
	}
	if q.Has("offset") || q.Has("limit") {
		off, err1 := strconv.ParseInt(q.Get("offset"), 10, 64)
		if !q.Has("offset") {
			off, err1 = 0, nil
		}
		rng := fmt.Sprintf("bytes=%d-", off)
		if q.Has("limit") {
			n, err := strconv.ParseInt(q.Get("limit"), 10, 64)
			if err != nil || n < 1 {
				return invalidField("limit", "limit %s must be a positive number of bytes", quote(q.Get("limit")))
			}
			rng += strconv.FormatInt(off+n-1, 10)
		}
		if err1 != nil || off < 0 {
			return invalidField("offset", "offset %s must be a byte offset from 0", quote(q.Get("offset")))
		}
		r.Header.Set("Range", rng)
	}
	return a.serveFile(w, r, a.resolve(q.Get("path")))
}
