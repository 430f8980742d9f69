package agent

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// E2B's envd: the API of the daemon inside E2B's sandboxes, which E2B's
// SDKs drive, served by the agent under envdPrefix over the agent's own
// commands, PTYs, files and watches, so that a command E2B's SDK starts is
// one sbx's API lists, follows and kills, and the other way round. Its
// procedures speak Connect (connect.go): the process.Process service
// (envd_process.go), the filesystem.Filesystem service
// (envd_filesystem.go); /files moves files' contents (envd_files.go).
//
// serve forwards E2B's envd traffic here, the path under envdPrefix, with
// the sandbox's access token: every route but envdHealth needs it, as the
// agent's own do. The Linux user a request acts as is the user name of
// its Authorization: Basic base64(USER:) (/files: ?username), by default
// the agent's default user.

// envdPrefix is where the agent serves envd's API, and envdHealth its
// health check, which needs no token.
const (
	envdPrefix = "/e2b/envd"
	envdHealth = envdPrefix + "/health"
)

// envdRoutes adds envd's API to mux.
func (a *Agent) envdRoutes(mux *http.ServeMux) {
	process := func(name string, h http.Handler) { mux.Handle("POST "+envdPrefix+"/process.Process/"+name, h) }
	process("Start", serverStream(a.envdStart))
	process("Connect", serverStream(a.envdConnect))
	process("List", unary(a.envdList))
	process("SendInput", unary(a.envdSendInput))
	process("SendSignal", unary(a.envdSendSignal))
	process("CloseStdin", unary(a.envdCloseStdin))
	process("Update", unary(a.envdUpdate))

	filesystem := func(name string, h http.Handler) { mux.Handle("POST "+envdPrefix+"/filesystem.Filesystem/"+name, h) }
	filesystem("Stat", unary(a.envdStat))
	filesystem("ListDir", unary(a.envdListDir))
	filesystem("MakeDir", unary(a.envdMakeDir))
	filesystem("Move", unary(a.envdMove))
	filesystem("Remove", unary(a.envdRemove))
	filesystem("WatchDir", serverStream(a.envdWatchDir))

	mux.HandleFunc("GET "+envdPrefix+"/files", a.envdDownload)
	mux.HandleFunc("POST "+envdPrefix+"/files", a.envdUpload)
	mux.HandleFunc("GET "+envdHealth, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
}

// basicUser is the user name of the request's Authorization: Basic
// base64(USER:), "" (the default user) without one.
func basicUser(r *http.Request) (string, error) {
	if r.Header.Get("Authorization") == "" {
		return "", nil
	}
	name, _, ok := r.BasicAuth()
	if !ok {
		return "", rpcError(codeUnauthenticated, "the Authorization header must be Basic base64(USER:)")
	}
	return name, nil
}

// envdUser is the account the request's Authorization names.
func (a *Agent) envdUser(r *http.Request) (*account, error) {
	name, err := basicUser(r)
	if err != nil {
		return nil, err
	}
	return a.envdAccount(name)
}

// envdAccount is lookupAccount, failing as envd does: a user the sandbox
// does not have is unauthenticated.
func (a *Agent) envdAccount(name string) (*account, error) {
	acct, err := a.lookupAccount(name)
	if err != nil {
		return nil, rpcError(codeUnauthenticated, "%s", asConnect(err).Message)
	}
	return acct, nil
}

// envdPath resolves a path as envd does: "" is the working directory, ~ and
// ~/… are the user's home and under it, and a relative path is relative
// to the home too.
func (a *Agent) envdPath(p string, acct *account) (string, error) {
	switch {
	case p == "":
		p = a.workdir
	case p == "~" || strings.HasPrefix(p, "~/"):
		p = filepath.Join(acct.home, p[1:])
	case strings.HasPrefix(p, "~"):
		return "", rpcError(codeInvalidArgument, "path %s: only ~ and ~/… are expanded, not another user's home", quote(p))
	case !filepath.IsAbs(p):
		p = filepath.Join(acct.home, p)
	}
	return filepath.Clean(p), nil
}

// fsFault is a failed file operation on path as a Connect error: the
// agent's own reason and kind (fsError), but a path that exists where it
// must not is already_exists.
func fsFault(path string, err error) error {
	e := asConnect(fsError(path, err))
	if errors.Is(err, fs.ErrExist) {
		e.Code = codeAlreadyExists
	}
	return e
}

// envdEntry is envd's filesystem.EntryInfo. Mode is the permission bits,
// as envd sends them; Permissions all of the mode as Go writes it
// (drwxr-xr-x); Owner and Group are names, or IDs that have none.
type envdEntry struct {
	Name          string     `json:"name,omitempty"`
	Type          string     `json:"type,omitempty"`
	Path          string     `json:"path,omitempty"`
	Size          int64      `json:"size,omitempty,string"`
	Mode          uint32     `json:"mode,omitempty"`
	Permissions   string     `json:"permissions,omitempty"`
	Owner         string     `json:"owner,omitempty"`
	Group         string     `json:"group,omitempty"`
	ModifiedTime  *time.Time `json:"modifiedTime,omitempty"`
	SymlinkTarget *string    `json:"symlinkTarget,omitempty"`
}

// owners names files' owners and groups from the sandbox's user database,
// read once by readOwners.
type owners struct {
	users, groups map[uint32]string
}

func readOwners() *owners {
	o := &owners{users: map[uint32]string{}, groups: map[uint32]string{}}
	users, _ := readPasswd()
	for _, u := range users {
		if _, dup := o.users[u.uid]; !dup {
			o.users[u.uid] = u.name
		}
	}
	eachLine(groupFile, func(f []string) {
		if len(f) < 3 {
			return
		}
		if gid, err := parseID(f[2]); err == nil && o.groups[gid] == "" {
			o.groups[gid] = f[0]
		}
	})
	return o
}

// idName is an ID's name in names, else the ID.
func idName(names map[uint32]string, id uint32) string {
	if n, ok := names[id]; ok {
		return n
	}
	return strconv.FormatUint(uint64(id), 10)
}

// entry describes path, whose Lstat is fi.
func (o *owners) entry(path string, fi fs.FileInfo) *envdEntry {
	mode := fi.Mode()
	mtime := fi.ModTime().UTC()
	e := &envdEntry{
		Name: fi.Name(), Path: path, Size: fi.Size(),
		Mode: uint32(mode.Perm()), Permissions: mode.String(), ModifiedTime: &mtime,
	}
	switch {
	case mode.IsRegular():
		e.Type = "FILE_TYPE_FILE"
	case mode.IsDir():
		e.Type = "FILE_TYPE_DIRECTORY"
	case mode&fs.ModeSymlink != 0:
		e.Type = "FILE_TYPE_SYMLINK"
		target, _ := os.Readlink(path)
		e.SymlinkTarget = &target
	}
	if st, ok := statOf(fi); ok {
		e.Owner, e.Group = idName(o.users, st.Uid), idName(o.groups, st.Gid)
	}
	return e
}

// stat describes path itself (a symlink, not its target).
func (o *owners) stat(path string) (*envdEntry, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fsFault(path, err)
	}
	return o.entry(path, fi), nil
}

// statEntry is stat with the user database read for it.
func statEntry(path string) (*envdEntry, error) { return readOwners().stat(path) }
