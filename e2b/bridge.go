package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// bridge serves sbx's agent API (apiv1/agent.go) for one e2b sandbox, in
// serve's process, over the sandbox's envd: commands and PTYs are envd
// processes (bridge_process.go), files its filesystem service and /files.
// Only serve reaches it (internal/pipenet), and serve has checked the
// caller, so it checks no access token; POST /token is accepted as it
// changes nothing envd knows.
//
// What envd cannot do is refused with a 501 or a 400 that says so: signals
// other than TERM and KILL, the code API (an E2B template has its own code
// interpreter), and SFTP (no sbx agent runs in the sandbox). A command's
// default working directory is envd's (the user's home), since E2B
// templates have no /workspace.
type bridge struct {
	envd *envd
	ctx  context.Context // ends when the bridge closes: the processes it follows are let go
	stop context.CancelFunc
	mux  *http.ServeMux

	mu        sync.Mutex
	procs     map[int]*proc // what the bridge started, running or recently ended
	endedPIDs []int         // PIDs of ended processes, oldest first
}

// maxEnded is how many ended processes the bridge remembers.
const maxEnded = 64

func newBridge(e *envd) *bridge {
	b := &bridge{envd: e, mux: http.NewServeMux(), procs: map[int]*proc{}}
	b.ctx, b.stop = context.WithCancel(context.Background())
	for pattern, fn := range map[string]func(http.ResponseWriter, *http.Request) error{
		"GET /health": b.health,
		"GET /ready":  b.ready,
		"POST /token": b.token,
		"/code/":      b.noCode,

		"POST /commands":               b.postCommand,
		"GET /commands":                b.listCommands,
		"GET /commands/{ref}":          b.getCommand,
		"GET /commands/{ref}/stream":   b.streamCommand,
		"POST /commands/{ref}/stdin":   b.writeStdin,
		"DELETE /commands/{ref}/stdin": b.closeStdin,
		"POST /commands/{ref}/signal":  b.signalCommand,
		"DELETE /commands/{ref}":       b.killCommand,
		"POST /pty":                    b.postPty,
		"GET /pty/{ref}":               b.attachPty,
		"POST /pty/{ref}/resize":       b.resizePty,
		"GET /files":                   b.readFile,
		"PUT /files":                   b.writeFile,
		"POST /files":                  b.uploadFiles,
		"DELETE /files":                b.removeFile,
		"GET /files/list":              b.listFiles,
		"GET /files/stat":              b.statFile,
		"POST /files/mkdir":            b.makeDir,
		"POST /files/move":             b.moveFile,
		"GET /files/watch":             b.watchFiles,
	} {
		b.mux.Handle(pattern, handler(fn))
	}
	return b
}

func (b *bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) { b.mux.ServeHTTP(w, r) }

// handler writes a handler's error in the agent's envelope.
type handler func(http.ResponseWriter, *http.Request) error

func (fn handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := fn(w, r); err != nil {
		writeError(w, err)
	}
}

// apiError is an answer of the agent's API with a status and a detail.
func apiError(status int, format string, args ...any) *apiv1.Error {
	return &apiv1.Error{Code: status, Type: apiv1.ErrorType(status), Detail: fmt.Sprintf(format, args...), Errors: []apiv1.FieldError{}}
}

// rpcStatus is the agent's status for each of envd's codes.
var rpcStatus = map[string]int{
	"invalid_argument": 400, "failed_precondition": 400, "out_of_range": 400, "unauthenticated": 400,
	"permission_denied": 403, "not_found": 404, "already_exists": 409, "resource_exhausted": 507,
	"deadline_exceeded": 504, "unavailable": 502, "canceled": 502,
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiv1.Error
	var re *rpcError
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &re):
		status, ok := rpcStatus[re.Code]
		if !ok {
			status = http.StatusBadGateway
		}
		ae = apiError(status, "envd: %s", re.Message)
	default:
		ae = apiError(http.StatusBadGateway, "e2b: %v", err)
	}
	writeJSON(w, ae.Code, ae)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// decodeJSON reads a JSON body of at most 1 MiB into v, strictly.
func decodeJSON(r *http.Request, v any) error {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return apiError(http.StatusUnsupportedMediaType, "the body must be application/json")
	}
	d := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return apiError(http.StatusBadRequest, "the body: %v", err)
	}
	return nil
}

func (b *bridge) health(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, apiv1.HealthStatus{Status: "ok", Version: "e2b-envd"})
	return nil
}

// ready answers once envd does.
func (b *bridge) ready(w http.ResponseWriter, r *http.Request) error {
	req, err := b.envd.request(r.Context(), http.MethodGet, "/health", "", nil)
	if err != nil {
		return err
	}
	resp, err := b.envd.http.Do(req)
	if err != nil {
		return b.envd.unreachable(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return apiError(http.StatusServiceUnavailable, "envd of sandbox %s answers %s", b.envd.id, resp.Status)
	}
	return b.health(w, r)
}

func (b *bridge) token(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.TokenRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if len(req.Env) > 0 || len(req.Unset) > 0 {
		return apiError(http.StatusNotImplemented, "provider e2b cannot change the environment of a running sandbox")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (b *bridge) noCode(w http.ResponseWriter, r *http.Request) error {
	return apiError(http.StatusNotImplemented, "provider e2b does not serve sbx's code API: an E2B template's code interpreter serves E2B's own")
}

// Files.

// entry is envd's EntryInfo.
type entry struct {
	Name          string     `json:"name"`
	Type          string     `json:"type"`
	Path          string     `json:"path"`
	Size          int64      `json:"size,string"`
	Mode          uint32     `json:"mode"`
	ModifiedTime  *time.Time `json:"modifiedTime"`
	SymlinkTarget *string    `json:"symlinkTarget"`
}

func (e *entry) info() apiv1.EntryInfo {
	out := apiv1.EntryInfo{Name: e.Name, Path: e.Path, Size: e.Size, Mode: fmt.Sprintf("%04o", e.Mode&0o7777), Type: "other"}
	switch {
	case e.SymlinkTarget != nil && *e.SymlinkTarget != "":
		out.Type, out.Target = "symlink", *e.SymlinkTarget
	case e.Type == "FILE_TYPE_FILE":
		out.Type = "file"
	case e.Type == "FILE_TYPE_DIRECTORY":
		out.Type = "dir"
	}
	if e.ModifiedTime != nil {
		out.ModTime = *e.ModifiedTime
	}
	return out
}

type entryAnswer struct {
	Entry *entry `json:"entry"`
}

// queryPath is the request's ?path, which every file route needs.
func queryPath(r *http.Request) (string, error) {
	p := r.URL.Query().Get("path")
	if p == "" {
		return "", apiError(http.StatusBadRequest, "give ?path")
	}
	return p, nil
}

func (b *bridge) stat(ctx context.Context, p, user string) (apiv1.EntryInfo, error) {
	var out entryAnswer
	if err := b.envd.unary(ctx, "filesystem.Filesystem/Stat", user, map[string]string{"path": p}, &out); err != nil {
		return apiv1.EntryInfo{}, err
	}
	if out.Entry == nil {
		return apiv1.EntryInfo{}, apiError(http.StatusBadGateway, "envd answered no entry for %s", p)
	}
	return out.Entry.info(), nil
}

func (b *bridge) readFile(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	resp, err := b.envd.download(r.Context(), p, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	if resp.ContentLength >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	w.WriteHeader(http.StatusOK)
	io.Copy(w, resp.Body)
	return nil
}

// writeFile writes the body to ?path as ?user, then sets ?mode by chmod.
func (b *bridge) writeFile(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	mode := q.Get("mode")
	if mode != "" {
		if _, err := strconv.ParseUint(mode, 8, 12); err != nil {
			return apiError(http.StatusBadRequest, "?mode %q must be octal permissions such as 644", mode)
		}
	}
	if err := b.envd.upload(r.Context(), p, q.Get("user"), r.Body); err != nil {
		return err
	}
	if mode != "" {
		if err := b.run(r.Context(), "root", "chmod", mode, "--", p); err != nil {
			return err
		}
	}
	info, err := b.stat(r.Context(), p, q.Get("user"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// uploadFiles writes each part of a multipart body to ?path/<its filename>.
func (b *bridge) uploadFiles(w http.ResponseWriter, r *http.Request) error {
	dir, err := queryPath(r)
	if err != nil {
		return err
	}
	user := r.URL.Query().Get("user")
	mr, err := r.MultipartReader()
	if err != nil {
		return apiError(http.StatusBadRequest, "the body must be multipart/form-data: %v", err)
	}
	list := apiv1.EntryList{Items: []apiv1.EntryInfo{}}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return apiError(http.StatusBadRequest, "the multipart body: %v", err)
		}
		name := part.FileName()
		if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
			return apiError(http.StatusBadRequest, "part %q: its filename must name a file in the directory", part.FormName())
		}
		p := path.Join(dir, name)
		if err := b.envd.upload(r.Context(), p, user, part); err != nil {
			return err
		}
		info, err := b.stat(r.Context(), p, user)
		if err != nil {
			return err
		}
		list.Items = append(list.Items, info)
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (b *bridge) removeFile(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	if err := b.envd.unary(r.Context(), "filesystem.Filesystem/Remove", "", map[string]string{"path": p}, nil); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (b *bridge) listFiles(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	depth := 1
	if v := r.URL.Query().Get("depth"); v != "" {
		if depth, err = strconv.Atoi(v); err != nil || depth < 1 || depth > 64 {
			return apiError(http.StatusBadRequest, "?depth %q must be an integer from 1 to 64", v)
		}
	}
	var out struct {
		Entries []*entry `json:"entries"`
	}
	if err := b.envd.unary(r.Context(), "filesystem.Filesystem/ListDir", "", map[string]any{"path": p, "depth": depth}, &out); err != nil {
		return err
	}
	list := apiv1.EntryList{Items: make([]apiv1.EntryInfo, 0, len(out.Entries))}
	for _, e := range out.Entries {
		list.Items = append(list.Items, e.info())
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (b *bridge) statFile(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	info, err := b.stat(r.Context(), p, "")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// makeDir makes a directory and its parents: 201, or 200 when it exists.
func (b *bridge) makeDir(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.PathRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Path == "" {
		return apiError(http.StatusBadRequest, "give path")
	}
	user, status := r.URL.Query().Get("user"), http.StatusCreated
	var out entryAnswer
	err := b.envd.unary(r.Context(), "filesystem.Filesystem/MakeDir", user, req, &out)
	var re *rpcError
	if errors.As(err, &re) && re.Code == "already_exists" {
		err, status = nil, http.StatusOK
	}
	if err != nil {
		return err
	}
	info, err := b.stat(r.Context(), req.Path, user)
	if err != nil {
		return err
	}
	if info.Type != "dir" {
		return apiError(http.StatusConflict, "%s exists and is not a directory", req.Path)
	}
	writeJSON(w, status, info)
	return nil
}

func (b *bridge) moveFile(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.MoveRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.From == "" || req.To == "" {
		return apiError(http.StatusBadRequest, "give from and to")
	}
	var out entryAnswer
	if err := b.envd.unary(r.Context(), "filesystem.Filesystem/Move", "", map[string]string{"source": req.From, "destination": req.To}, &out); err != nil {
		return err
	}
	info, err := b.stat(r.Context(), req.To, "")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// watchEvents is the FileEvent type of each of envd's event types.
var watchEvents = map[string]string{
	"EVENT_TYPE_CREATE": "create", "EVENT_TYPE_WRITE": "write", "EVENT_TYPE_REMOVE": "remove",
	"EVENT_TYPE_RENAME": "rename", "EVENT_TYPE_CHMOD": "chmod",
}

// watchFiles streams envd's WatchDir as FileEvents until the client leaves.
func (b *bridge) watchFiles(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	recursive := false
	if v := r.URL.Query().Get("recursive"); v != "" {
		if recursive, err = strconv.ParseBool(v); err != nil {
			return apiError(http.StatusBadRequest, "?recursive %q must be true or false", v)
		}
	}
	s, err := b.envd.stream(r.Context(), "filesystem.Filesystem/WatchDir", "", map[string]any{"path": p, "recursive": recursive}, 0)
	if err != nil {
		return err
	}
	defer s.Close()
	w.Header().Set("Content-Type", apiv1.NDJSON)
	w.WriteHeader(http.StatusOK)
	flush(w)
	enc := json.NewEncoder(w)
	for {
		msg, err := s.Next()
		if err != nil {
			if r.Context().Err() == nil && err != io.EOF {
				enc.Encode(apiv1.FileEvent{Type: "error", At: time.Now().UTC(), Error: err.Error()})
			}
			return nil
		}
		var ev struct {
			Filesystem *struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"filesystem"`
		}
		if json.Unmarshal(msg, &ev) != nil || ev.Filesystem == nil {
			continue // start, keepalive
		}
		enc.Encode(apiv1.FileEvent{Type: watchEvents[ev.Filesystem.Type], Path: path.Join(p, ev.Filesystem.Name), At: time.Now().UTC()})
		flush(w)
	}
}

func flush(w http.ResponseWriter) { http.NewResponseController(w).Flush() }
