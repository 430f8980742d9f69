package local

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// What a sandbox leaves on the host's disk is its owner's alone (see
// docs/SECURITY.md): its directory and the bundle in it are 0700, every file
// sbx writes there 0600, and the files runsc writes for it (its state under
// the runsc root, which holds the spec and so the sandbox's env; a
// checkpoint's images, which hold its memory) are made 0600 as soon as they
// are written, in directories that are 0700 from the start. Kill removes all
// of it.

// privateFiles makes the files runsc wrote for sandbox id readable by their
// owner only: runsc writes its state 0640 and checkpoint images 0644. (A
// file runsc rewrites in place keeps its mode.)
func (p *Provider) privateFiles(id string) error {
	state, err := filepath.Glob(filepath.Join(p.rs.Root, id+"*"))
	if err != nil {
		return err
	}
	var errs []error
	for _, top := range append(state, p.imageDir(id)) {
		errs = append(errs, privateTree(top))
	}
	return errors.Join(errs...)
}

// privateTree makes the directories under top (and top) 0700 and their
// files 0600; symlinks and sockets are left as they are, and a top that
// does not exist is fine.
func privateTree(top string) error {
	return filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return err
		case d.Type()&fs.ModeSymlink != 0 || d.Type()&fs.ModeSocket != 0:
			return nil
		case d.IsDir():
			return os.Chmod(path, 0o700)
		}
		return os.Chmod(path, 0o600)
	})
}

// hostPath is a directory of this host that sandboxes' owners do not see,
// and the name they see instead.
type hostPath struct{ path, name string }

// hostPaths are the host's directories that may appear in what runsc says,
// longest first: the data dir, the templates' directory, the engine's binary.
// New keeps them (Provider.hostPaths), since scrub runs on every log line.
func (p *Provider) findHostPaths() []hostPath {
	var out []hostPath
	add := func(path, name string) {
		if path == "" {
			return
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if path != "/" {
			out = append(out, hostPath{path, name})
		}
	}
	add(p.cfg.DataDir, "<data-dir>")
	add(p.cfg.Templates.Dir, "<templates>")
	add(p.rs.Path, p.rs.Name())
	sort.Slice(out, func(i, j int) bool { return len(out[i].path) > len(out[j].path) })
	return out
}

// scrub replaces the host's paths in a line a sandbox's owner may read (its
// logs, a diagnostic, a provider error): they say nothing to the owner and
// tell how the host is laid out.
func (p *Provider) scrub(s string) string {
	for _, h := range p.hostPaths {
		s = strings.ReplaceAll(s, h.path, h.name)
	}
	return s
}

// scrubbed is an error whose message has no host paths; it unwraps to the
// original, so its code and kind stay.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// hide is err with the host's paths scrubbed from its message.
func (p *Provider) hide(err error) error {
	if err == nil {
		return nil
	}
	if msg := p.scrub(err.Error()); msg != err.Error() {
		return &scrubbed{msg: msg, err: err}
	}
	return err
}
