// Package template builds and keeps sandbox templates: immutable, versioned
// root trees under <data-dir>/templates/<name>/<version>/rootfs, with a
// `current` link naming the version new sandboxes start from. A rebuild is a
// new version directory, never a change to an old one, because a checkpoint
// reopens its template tree by path.
package template

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Template is one built version of a template.
type Template struct {
	Name     string    `json:"name"`
	Version  string    `json:"version"`
	Source   string    `json:"source"` // e.g. "debian bookworm from http://deb.debian.org/debian"
	Packages []string  `json:"packages,omitempty"`
	StartCmd string    `json:"startCmd,omitempty"` // started in the background by the agent when a sandbox boots
	Created  time.Time `json:"created"`
	Dir      string    `json:"-"` // the version directory
}

// Rootfs is the template's root tree.
func (t Template) Rootfs() string { return filepath.Join(t.Dir, "rootfs") }

// Store is the templates directory.
type Store struct{ Dir string }

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// CheckName rejects names that are not template names.
func CheckName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("template name %q must be 1-64 lowercase letters, digits, '.', '_' or '-'", name)
	}
	return nil
}

// maxStartCmd bounds a start command, well under the 128 KiB that Linux
// allows one argument: it reaches the agent as one.
const maxStartCmd = 64 << 10

// CheckStartCmd rejects start commands the agent could not be given: one
// with a NUL byte, or a longer one than maxStartCmd. Newlines are fine: the
// agent runs the command line with a shell's -c.
func CheckStartCmd(cmd string) error {
	if strings.ContainsRune(cmd, 0) {
		return fmt.Errorf("a start command must not contain a NUL byte")
	}
	if len(cmd) > maxStartCmd {
		return fmt.Errorf("a start command must be at most %d bytes, not %d", maxStartCmd, len(cmd))
	}
	return nil
}

// Current returns the version of name that new sandboxes use.
func (s Store) Current(name string) (Template, error) {
	if err := CheckName(name); err != nil {
		return Template{}, err
	}
	version, err := os.Readlink(filepath.Join(s.Dir, name, "current"))
	if errors.Is(err, os.ErrNotExist) {
		return Template{}, fmt.Errorf("template %s is not built: run `sbx template build %s`", name, name)
	}
	if err != nil {
		return Template{}, err
	}
	return s.load(name, version)
}

// List returns the current version of every built template, by name.
func (s Store) List() ([]Template, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Template
	for _, e := range entries {
		if t, err := s.Current(e.Name()); err == nil {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s Store) load(name, version string) (Template, error) {
	dir := filepath.Join(s.Dir, name, version)
	data, err := os.ReadFile(filepath.Join(dir, "template.json"))
	if err != nil {
		return Template{}, fmt.Errorf("template %s version %s: %w", name, version, err)
	}
	var t Template
	if err := json.Unmarshal(data, &t); err != nil {
		return Template{}, fmt.Errorf("template %s version %s: %w", name, version, err)
	}
	t.Dir = dir
	return t, nil
}

// publish moves a finished build into place as a new version and points
// `current` at it atomically.
func (s Store) publish(t Template, building string) (Template, error) {
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return t, err
	}
	if err := os.WriteFile(filepath.Join(building, "template.json"), data, 0o644); err != nil {
		return t, err
	}
	t.Dir = filepath.Join(s.Dir, t.Name, t.Version)
	if err := os.Rename(building, t.Dir); err != nil {
		return t, err
	}
	link := filepath.Join(s.Dir, t.Name, "current")
	tmp := link + ".new"
	os.Remove(tmp)
	if err := os.Symlink(t.Version, tmp); err != nil {
		return t, err
	}
	return t, os.Rename(tmp, link)
}
