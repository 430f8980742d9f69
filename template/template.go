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
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/sbxdev/sbx"
)

// Template is one built version of a template.
type Template struct {
	Name     string   `json:"name"`
	Version  string   `json:"version"`
	Source   string   `json:"source"` // e.g. "debian bookworm from http://deb.debian.org/debian"
	Packages []string `json:"packages,omitempty"`
	StartCmd string   `json:"startCmd,omitempty"` // started in the background by the agent when a sandbox boots
	User     string   `json:"user,omitempty"`     // the default user of commands, PTYs and new files in its sandboxes; empty: root
	Workdir  string   `json:"workdir,omitempty"`  // the default working directory of its sandboxes' commands; empty: the agent's
	Recipe   int      `json:"recipe,omitempty"`   // the RecipeRevision a Debian build was made with
	// Egress is the default egress policy of its sandboxes: what a create
	// that names none gets (checked by sbx.CheckEgress when built).
	Egress *sbx.Egress `json:"egress,omitempty"`
	// Ports are the ports its sandboxes serve: a create that names none
	// lists them with their preview URLs.
	Ports   []int     `json:"ports,omitempty"`
	Created time.Time `json:"created"`
	Dir     string    `json:"-"` // the version directory
}

// Rootfs is the template's root tree.
func (t Template) Rootfs() string { return filepath.Join(t.Dir, "rootfs") }

// Store is the templates directory.
type Store struct{ Dir string }

// CheckName rejects names that are not template names.
func CheckName(name string) error {
	if !sbx.ValidTemplateName(name) {
		return fmt.Errorf("template name %q must be 1-64 lowercase letters, digits, '.', '_' or '-'", name)
	}
	return nil
}

// CheckEgress checks a template's default egress policy (nil: none) with
// sbx.CheckEgress, and answers it as that writes it.
func CheckEgress(e *sbx.Egress) (*sbx.Egress, error) {
	if e == nil {
		return nil, nil
	}
	var p sbx.Problems
	checked := sbx.CheckEgress(&p, "egress", *e)
	if err := p.Err(); err != nil {
		return nil, fmt.Errorf("the default egress policy: %s", sbx.ErrorMessage(err))
	}
	return &checked, nil
}

// CheckPorts rejects ports a template could not declare (sbx.CheckPorts).
func CheckPorts(ports []int) error {
	var p sbx.Problems
	sbx.CheckPorts(&p, "ports", ports)
	if err := p.Err(); err != nil {
		return fmt.Errorf("%s", sbx.ErrorMessage(err))
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

// userPattern is what a user a template names looks like: a name, or a
// UID, with an optional ":" and a group name or GID (as an OCI image's User).
var userPattern = regexp.MustCompile(`^([a-z_][a-z0-9_.-]{0,31}|[0-9]{1,10})(:([a-z_][a-z0-9_.-]{0,31}|[0-9]{1,10}))?$`)

// userNamePattern is a user name alone.
var userNamePattern = regexp.MustCompile(`^[a-z_][a-z0-9_.-]{0,31}$`)

// CheckUser rejects what cannot be a template's default user.
func CheckUser(user string) error {
	if user != "" && !userPattern.MatchString(user) {
		return fmt.Errorf("user %q must be a user name or UID, optionally with :GROUP or :GID", user)
	}
	return nil
}

// checkUserIn checks that the named parts of user are in the root's
// /etc/passwd and /etc/group, read through an os.Root so that no planted
// symlink leads outside it. Numeric parts need not be listed.
func checkUserIn(rootfs, user string) error {
	if err := CheckUser(user); err != nil || user == "" {
		return err
	}
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return err
	}
	defer root.Close()
	name, group, _ := strings.Cut(user, ":")
	for _, c := range []struct{ file, name string }{{"etc/passwd", name}, {"etc/group", group}} {
		if c.name == "" || strings.Trim(c.name, "0123456789") == "" {
			continue
		}
		data, err := root.ReadFile(c.file)
		if err != nil || !listed(string(data), c.name) {
			return fmt.Errorf("the default user %q: %s is not in the template's /%s", user, c.name, c.file)
		}
	}
	return nil
}

// listed reports whether a passwd or group file has an entry for name.
func listed(data, name string) bool {
	for _, line := range strings.Split(data, "\n") {
		if n, _, ok := strings.Cut(line, ":"); ok && n == name {
			return true
		}
	}
	return false
}

// Current returns the version of name that new sandboxes use.
func (s Store) Current(name string) (Template, error) {
	if err := CheckName(name); err != nil {
		return Template{}, err
	}
	version, err := os.Readlink(filepath.Join(s.Dir, name, "current"))
	if errors.Is(err, os.ErrNotExist) {
		return Template{}, fmt.Errorf("template %s is not built: run `sbx template build %s`: %w", name, name, ErrNotBuilt)
	}
	if err != nil {
		return Template{}, err
	}
	return s.load(name, version)
}

// ErrNotBuilt is Current's error for a template this host has not built.
var ErrNotBuilt = errors.New("no such template")

// ErrNoVersion is At's error for a version a template does not have; it is
// an ErrNotBuilt too.
var ErrNoVersion = fmt.Errorf("no such version: %w", ErrNotBuilt)

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

// Version reads one version of a template, current or not.
func (s Store) Version(name, version string) (Template, error) { return s.load(name, version) }

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

// Versions returns every version of name that is kept, the current one
// first, then the others from newest to oldest; ErrNotBuilt when there is
// none.
func (s Store) Versions(name string) ([]Template, error) {
	cur, err := s.Current(name)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(s.Dir, name))
	if err != nil {
		return nil, err
	}
	out := []Template{cur}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == cur.Version {
			continue
		}
		if t, err := s.load(name, e.Name()); err == nil {
			out = append(out, t)
		}
	}
	sort.SliceStable(out[1:], func(i, j int) bool { return out[1+i].Created.After(out[1+j].Created) })
	return out, nil
}

// Remove removes every version of name: first out of the way at once (a
// create that looks for it now finds none), then from the disk, with what
// an earlier Remove cut short left.
func (s Store) Remove(name string) error {
	if _, err := s.Current(name); err != nil {
		return err
	}
	gone, err := os.MkdirTemp(s.Dir, ".removing-")
	if err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(s.Dir, name), filepath.Join(gone, name)); err != nil {
		os.Remove(gone)
		return err
	}
	all, err := filepath.Glob(filepath.Join(s.Dir, ".removing-*"))
	for _, dir := range all {
		err = errors.Join(err, os.RemoveAll(dir))
	}
	return err
}

// Size is what a version's tree holds on disk: the blocks of each file
// once, however many links it has in the tree (a derived template's tree
// links its source's files; those count in both).
func Size(t Template) (int64, error) {
	seen := map[uint64]bool{}
	var total int64
	err := filepath.WalkDir(t.Dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok || seen[st.Ino] {
			return nil
		}
		seen[st.Ino] = true
		total += st.Blocks * 512
		return nil
	})
	return total, err
}

// At is version of name, or its current version when version is "";
// ErrNotBuilt when there is no such.
func (s Store) At(name, version string) (Template, error) {
	if version == "" {
		return s.Current(name)
	}
	if err := CheckName(name); err != nil {
		return Template{}, err
	}
	if strings.HasPrefix(version, ".") || strings.Contains(version, "/") || version == "current" {
		return Template{}, fmt.Errorf("template %s has no version %q: %w", name, version, ErrNoVersion)
	}
	t, err := s.load(name, version)
	if errors.Is(err, os.ErrNotExist) {
		return t, fmt.Errorf("template %s has no version %s: %w", name, version, ErrNoVersion)
	}
	return t, err
}
