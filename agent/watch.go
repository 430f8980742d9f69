package agent

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sbxdev/sbx/apiv1"
)

// fileOps names the fsnotify operations as FileEvent types.
var fileOps = []struct {
	op   fsnotify.Op
	name string
}{
	{fsnotify.Create, "create"},
	{fsnotify.Write, "write"},
	{fsnotify.Remove, "remove"},
	{fsnotify.Rename, "rename"},
	{fsnotify.Chmod, "chmod"},
}

// watchFiles streams the changes under a path as FileEvents until the
// client leaves or the agent closes. The stream's headers go out once the
// watch is in place: changes after that are seen. With recursive, new
// subdirectories are watched as they appear.
func (a *Agent) watchFiles(w http.ResponseWriter, r *http.Request) error {
	path, err := a.pathParam(r)
	if err != nil {
		return err
	}
	recursive := false
	if v, given, err := queryParam(r, "recursive"); err != nil {
		return err
	} else if given {
		if recursive, err = strconv.ParseBool(v); err != nil {
			return invalidField("recursive", "recursive must be true or false, not %s", quote(v))
		}
	}
	wt, err := a.openWatch(path, recursive)
	if err != nil {
		return err
	}
	defer a.closeWatch(wt)
	startStream(w, http.StatusOK)
	a.streamWatch(r.Context(), w, wt)
	return nil
}

// watch is an fsnotify watch of a path, which Close stops.
type watch struct {
	*fsnotify.Watcher
	recursive bool // every directory under the path is watched, new ones too (follow)
}

// openWatch watches path, and with recursive (and a directory) every
// directory under it. Changes after it answers are seen. Close it with
// closeWatch.
func (a *Agent) openWatch(path string, recursive bool) (*watch, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fsError(path, err)
	}
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, watchError(path, err)
	}
	if !a.track(watcher) {
		watcher.Close()
		return nil, apiError(http.StatusServiceUnavailable, "the agent is shutting down")
	}
	wt := &watch{Watcher: watcher, recursive: recursive && fi.IsDir()}
	if err := addWatches(watcher, path, wt.recursive); err != nil {
		a.closeWatch(wt)
		return nil, watchError(path, err)
	}
	return wt, nil
}

func (a *Agent) closeWatch(wt *watch) {
	a.untrack(wt.Watcher)
	wt.Close()
}

// follow watches the directory ev created under a recursive watch, and
// those under it, before the event is passed on: changes in it after the
// client has seen the event are seen too.
func (wt *watch) follow(ev fsnotify.Event) {
	if !wt.recursive || !ev.Has(fsnotify.Create) {
		return
	}
	if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
		addWatches(wt.Watcher, ev.Name, true)
	}
}

// watchError describes a watch that could not be set: inotify's limits
// (instances: EMFILE; watches: ENOSPC) are the agent's, a 503; anything
// else is about the path.
func watchError(path string, err error) error {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.ENFILE) {
		return apiError(http.StatusServiceUnavailable, "watching %s: the sandbox's inotify limits are reached; close other watches", short(path))
	}
	return fsError(path, err)
}

// streamWatch writes the watch's events until ctx ends or it closes.
func (a *Agent) streamWatch(ctx context.Context, w http.ResponseWriter, wt *watch) {
	for {
		select {
		case <-ctx.Done():
			return
		case err, ok := <-wt.Errors:
			if !ok {
				return
			}
			a.log.Warn("watch", "err", err)
		case ev, ok := <-wt.Events:
			if !ok {
				return
			}
			wt.follow(ev)
			now := time.Now().UTC()
			for _, o := range fileOps {
				if ev.Has(o.op) {
					if writeLine(w, apiv1.FileEvent{Type: o.name, Path: ev.Name, At: now}) != nil {
						return
					}
				}
			}
			if len(wt.Events) == 0 {
				flush(w)
			}
		}
	}
}

// addWatches watches path, and with recursive every directory under it.
func addWatches(watcher *fsnotify.Watcher, path string, recursive bool) error {
	if !recursive {
		return watcher.Add(path)
	}
	return filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == path {
				return err
			}
			return nil // an unreadable or vanished subdirectory
		}
		if d.IsDir() {
			if err := watcher.Add(p); err != nil && p == path {
				return err
			}
		}
		return nil
	})
}

// track registers a watch for Close to stop; false once the agent closed.
func (a *Agent) track(watcher *fsnotify.Watcher) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.watches[watcher] = struct{}{}
	return true
}

func (a *Agent) untrack(watcher *fsnotify.Watcher) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.watches, watcher)
}
