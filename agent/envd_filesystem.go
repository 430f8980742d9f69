package agent

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// envd's filesystem.Filesystem service over the agent's file helpers and
// its fsnotify watch. Paths resolve as envd resolves them (envdPath) for
// the request's user; new directories belong to that user, made as it
// (account.as) as the agent's own routes make them; the rest is done as
// the agent, as those routes do.

// Messages of envd's filesystem.proto, as E2B's SDKs send and read them.
type (
	pathMessage struct { // StatRequest, MakeDirRequest, RemoveRequest
		Path string `json:"path"`
	}
	listDirRequest struct {
		Path  string   `json:"path"`
		Depth pbUint32 `json:"depth"`
	}
	moveRequest struct {
		Source      string `json:"source"`
		Destination string `json:"destination"`
	}
	watchDirRequest struct {
		Path           string `json:"path"`
		Recursive      bool   `json:"recursive"`
		IncludeEntry   bool   `json:"includeEntry"`
		IncludeEntrySn bool   `json:"include_entry"` // protobuf's JSON takes both names
	}
	entryResponse struct { // StatResponse, MakeDirResponse, MoveResponse
		Entry *envdEntry `json:"entry,omitempty"`
	}
	listDirResponse struct {
		Entries []*envdEntry `json:"entries,omitempty"`
	}
	watchMessage struct { // WatchDirResponse; keepalives are watchKeepalive
		Start      *empty           `json:"start,omitempty"`
		Filesystem *filesystemEvent `json:"filesystem,omitempty"`
	}
	filesystemEvent struct {
		Name  string     `json:"name,omitempty"`
		Type  string     `json:"type,omitempty"`
		Entry *envdEntry `json:"entry,omitempty"`
	}
)

// watchKeepalive is the keepalive message of a watch's stream.
var watchKeepalive = []byte(`{"keepalive":{}}`)

// envdStat describes a path itself (a symlink, not its target).
func (a *Agent) envdStat(r *http.Request, req *pathMessage) (*entryResponse, error) {
	path, err := a.envdRequestPath(r, req.Path)
	if err != nil {
		return nil, err
	}
	entry, err := statEntry(path)
	if err != nil {
		return nil, err
	}
	return &entryResponse{Entry: entry}, nil
}

// envdListDir lists a directory's entries, and theirs to depth levels (1
// when not given), sorted by path.
func (a *Agent) envdListDir(r *http.Request, req *listDirRequest) (*listDirResponse, error) {
	path, err := a.envdRequestPath(r, req.Path)
	if err != nil {
		return nil, err
	}
	depth := max(int(req.Depth), 1)
	resp := &listDirResponse{}
	owners := readOwners()
	err = walkDir(path, depth, func(p string, fi fs.FileInfo) { resp.Entries = append(resp.Entries, owners.entry(p, fi)) })
	if err != nil {
		return nil, fsFault(path, err)
	}
	slices.SortFunc(resp.Entries, func(a, b *envdEntry) int { return strings.Compare(a.Path, b.Path) })
	return resp, nil
}

// envdMakeDir makes a directory and its parents as the user: a directory
// that exists is already_exists, anything else there invalid_argument.
func (a *Agent) envdMakeDir(r *http.Request, req *pathMessage) (*entryResponse, error) {
	acct, err := a.envdUser(r)
	if err != nil {
		return nil, err
	}
	path, err := a.envdPath(req.Path, acct)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return nil, rpcError(codeAlreadyExists, "%s: the directory already exists", short(path))
		}
		return nil, rpcError(codeInvalidArgument, "%s: already exists and is not a directory", short(path))
	}
	if err := acct.as(func() error { return os.MkdirAll(path, 0o755) }); err != nil {
		return nil, fsFault(path, err)
	}
	entry, err := statEntry(path)
	if err != nil {
		return nil, err
	}
	return &entryResponse{Entry: entry}, nil
}

// envdMove renames a path as os.Rename does, making the destination's
// parents as the user first, as envd does.
func (a *Agent) envdMove(r *http.Request, req *moveRequest) (*entryResponse, error) {
	acct, err := a.envdUser(r)
	if err != nil {
		return nil, err
	}
	if req.Source == "" || req.Destination == "" {
		return nil, rpcError(codeInvalidArgument, "give a source and a destination")
	}
	from, err := a.envdPath(req.Source, acct)
	if err != nil {
		return nil, err
	}
	to, err := a.envdPath(req.Destination, acct)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(from); err != nil {
		return nil, fsFault(from, err)
	}
	dir := filepath.Dir(to)
	if err := acct.as(func() error { return os.MkdirAll(dir, 0o755) }); err != nil {
		return nil, fsFault(dir, err)
	}
	if err := os.Rename(from, to); err != nil {
		return nil, fsFault(fmt.Sprintf("moving %s to %s", short(from), short(to)), err)
	}
	entry, err := statEntry(to)
	if err != nil {
		return nil, err
	}
	return &entryResponse{Entry: entry}, nil
}

// envdRemove removes a path and everything under it; one that is not
// there is removed already, as envd has it.
func (a *Agent) envdRemove(r *http.Request, req *pathMessage) (*empty, error) {
	path, err := a.envdRequestPath(r, req.Path)
	if err != nil {
		return nil, err
	}
	if path == "/" {
		return nil, rpcError(codeInvalidArgument, "refusing to remove /")
	}
	if err := os.RemoveAll(path); err != nil {
		return nil, fsFault(path, err)
	}
	return &empty{}, nil
}

// envdRequestPath is a path of the request resolved for its user.
func (a *Agent) envdRequestPath(r *http.Request, p string) (string, error) {
	acct, err := a.envdUser(r)
	if err != nil {
		return "", err
	}
	return a.envdPath(p, acct)
}

// envdWatchDir streams the changes in a directory, and with recursive
// under it: first the start message once the watch is in place, then an
// event per change, named relative to the directory, with the entry it
// concerns when asked (and it is still there), and a keepalive whenever it
// has been quiet for the request's interval. Connect-Timeout-Ms ends it
// (deadline_exceeded), as the client's leaving does.
func (a *Agent) envdWatchDir(r *http.Request, req *watchDirRequest, s *connectStream) error {
	path, err := a.envdRequestPath(r, req.Path)
	if err != nil {
		return err
	}
	timeout, err := connectTimeout(r)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(path); err != nil {
		return fsFault(path, err)
	} else if !fi.IsDir() {
		return fsFault(path, syscall.ENOTDIR)
	}
	wt, err := a.openWatch(path, req.Recursive)
	if err != nil {
		return asConnect(err)
	}
	defer a.closeWatch(wt)
	ctx := r.Context()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if err := s.send(watchMessage{Start: &empty{}}); err != nil {
		return err
	}
	s.flush()
	ping := time.NewTicker(keepaliveInterval(r))
	defer ping.Stop()
	var entries *owners // names the events' entries, when asked for
	if req.IncludeEntry || req.IncludeEntrySn {
		entries = readOwners()
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ping.C:
			if err := s.sendRaw(watchKeepalive); err != nil {
				return err
			}
			s.flush()
		case err, ok := <-wt.Errors:
			if !ok {
				return errWatchClosed
			}
			a.log.Warn("watch", "err", err)
		case ev, ok := <-wt.Events:
			if !ok {
				return errWatchClosed
			}
			wt.follow(ev)
			if err := sendWatchEvents(s, path, ev, entries); err != nil {
				return err
			}
			if len(wt.Events) == 0 {
				s.flush()
			}
		}
	}
}

// errWatchClosed ends a watch that the agent's Close stopped.
var errWatchClosed = rpcError(codeUnavailable, "the agent is shutting down")

// sendWatchEvents sends an fsnotify event of the watch on dir as envd's
// events, one per operation it holds, with its entry when entries names
// them.
func sendWatchEvents(s *connectStream, dir string, ev fsnotify.Event, entries *owners) error {
	name, err := filepath.Rel(dir, ev.Name)
	if err != nil {
		return err
	}
	var entry *envdEntry
	if entries != nil {
		entry, _ = entries.stat(ev.Name) // none once it is gone
	}
	for _, o := range fileOps {
		if ev.Has(o.op) {
			typ := "EVENT_TYPE_" + strings.ToUpper(o.name)
			if err := s.send(watchMessage{Filesystem: &filesystemEvent{Name: name, Type: typ, Entry: entry}}); err != nil {
				return err
			}
		}
	}
	return nil
}
