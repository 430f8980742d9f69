package template

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sbxdev/sbx"
)

// CatalogEntry is a template of the curated catalog: Debian packages over
// a minbase, so that it builds on any host that reaches a Debian mirror (no
// registry), with a category and a description for the create wizard, and
// the start command and ports its sandboxes get.
type CatalogEntry struct {
	Name        string   `json:"name"`
	Category    string   `json:"category"`
	Description string   `json:"description"`
	Packages    []string `json:"packages"`
	StartCmd    string   `json:"startCmd,omitempty"`
	Ports       []int    `json:"ports,omitempty"`
}

var basePackages = []string{"bash", "coreutils", "ca-certificates", "curl", "git", "procps"}

// with is basePackages and more.
func with(more ...string) []string { return append(append([]string{}, basePackages...), more...) }

var pythonData = []string{"python3", "python3-pip", "python3-numpy", "python3-pandas", "python3-matplotlib", "python3-scipy",
	"python3-ipykernel", "python3-jupyter-server"}

// desktopStart runs the desktop: an X server on display :1, a window
// manager, a terminal, and a VNC server on port 5900 (view and control
// without a password: only serve's desktop route reaches it).
const desktopStart = "export DISPLAY=:1; Xvfb :1 -screen 0 1280x800x24 -nolisten tcp & sleep 1; openbox & xterm & exec x11vnc -display :1 -forever -shared -nopw -quiet -rfbport 5900"

// Catalog is the curated catalog, by category: what `sbx template catalog`
// lists, `sbx template build NAME` (or --catalog NAME) builds and the API
// serves to the create wizard.
var Catalog = []CatalogEntry{
	{Name: "base", Category: "general", Description: "Debian bookworm with bash, coreutils, curl, git and procps", Packages: basePackages},
	{Name: "code-interpreter", Category: "code", Description: "Python 3 with numpy, pandas, matplotlib, scipy, ipykernel and a Jupyter server", Packages: with(pythonData...)},
	{Name: "node", Category: "code", Description: "Node.js and npm", Packages: with("nodejs", "npm")},
	{Name: "data-science", Category: "data", Description: "code-interpreter and scikit-learn", Packages: with(append(append([]string{}, pythonData...), "python3-sklearn")...)},
	{Name: "pytorch", Category: "machine learning", Description: "Python 3 with PyTorch (CPU) and numpy, from Debian's python3-torch", Packages: with("python3", "python3-pip", "python3-numpy", "python3-torch")},
	{Name: "desktop", Category: "desktop", Description: "A graphical desktop: Xvfb, the openbox window manager, xterm and Chromium, served over VNC on port 5900; ImageMagick for screenshots",
		Packages: with("xvfb", "openbox", "xterm", "x11vnc", "chromium", "fonts-dejavu-core", "imagemagick"), StartCmd: desktopStart, Ports: []int{5900}},
}

// CatalogEntryNamed is the catalog's entry called name.
func CatalogEntryNamed(name string) (CatalogEntry, bool) {
	for _, e := range Catalog {
		if e.Name == name {
			return e, true
		}
	}
	return CatalogEntry{}, false
}

// RecipeRevision names what BuildDebian makes of a recipe besides its
// packages; it is bumped whenever that changes (2: the default user), so
// that trees built before are known to be older.
const RecipeRevision = 2

// DefaultUser is the unprivileged user a Debian template's sandboxes run
// commands as by default, as E2B's templates do: UID 1000, home
// /home/user, owning /workspace.
const DefaultUser = "user"

// DebianOptions say how to build a Debian template.
type DebianOptions struct {
	Suite    string      // default bookworm
	Mirror   string      // default: the host's configured Debian mirror
	Packages []string    // default: Catalog's entry (the template's name, or Catalog)
	Catalog  string      // the catalog entry whose packages, start command and ports to build; default the template's name
	StartCmd string      // started by the agent at each sandbox's boot; default none
	User     string      // the default user, made if missing (the first with UID 1000) and given /workspace; default DefaultUser; root keeps root
	Egress   *sbx.Egress // the default egress policy of its sandboxes; default none (the server's)
	Ports    []int       // the ports its sandboxes serve; default none
}

// BuildDebian builds a new version of template name as a Debian root made by
// debootstrap (variant minbase) from the host's Debian mirror, with
// /workspace ready as the default working directory. Progress goes to
// progress, a line at a time.
func (s Store) BuildDebian(ctx context.Context, name string, opts DebianOptions, progress io.Writer) (Template, error) {
	if err := CheckName(name); err != nil {
		return Template{}, err
	}
	if err := CheckStartCmd(opts.StartCmd); err != nil {
		return Template{}, err
	}
	if err := CheckPorts(opts.Ports); err != nil {
		return Template{}, err
	}
	egress, err := CheckEgress(opts.Egress)
	if err != nil {
		return Template{}, err
	}
	if opts.Suite == "" {
		opts.Suite = "bookworm"
	}
	if opts.User == "" {
		opts.User = DefaultUser
	}
	if !userNamePattern.MatchString(opts.User) {
		return Template{}, fmt.Errorf("user %q: a Debian template's default user is a user name (root, or one to make)", opts.User)
	}
	if opts.Packages == nil {
		entry := opts.Catalog
		if entry == "" {
			entry = name
		}
		e, ok := CatalogEntryNamed(entry)
		if !ok {
			return Template{}, fmt.Errorf("%s is not in the catalog (sbx template catalog); name its packages", entry)
		}
		opts.Packages = e.Packages
		if opts.StartCmd == "" {
			opts.StartCmd = e.StartCmd
		}
		if opts.Ports == nil {
			opts.Ports = e.Ports
		}
	}
	if opts.Mirror == "" {
		var err error
		if opts.Mirror, err = HostMirror(opts.Suite, "/etc/apt"); err != nil {
			return Template{}, err
		}
	}
	if os.Geteuid() != 0 {
		return Template{}, fmt.Errorf("building a Debian template needs root (debootstrap)")
	}
	debootstrap, err := exec.LookPath("debootstrap")
	if err != nil {
		return Template{}, fmt.Errorf("debootstrap is not installed: apt-get install debootstrap")
	}
	now := time.Now().UTC()
	t := Template{Name: name, Version: now.Format("20060102T150405.000000Z"), Created: now, Packages: opts.Packages,
		Source: fmt.Sprintf("debian %s from %s", opts.Suite, opts.Mirror), StartCmd: opts.StartCmd, Recipe: RecipeRevision, Egress: egress, Ports: opts.Ports}
	if opts.User != "root" {
		t.User = opts.User
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, name), 0o755); err != nil {
		return t, err
	}
	building, err := os.MkdirTemp(filepath.Join(s.Dir, name), ".building-")
	if err != nil {
		return t, err
	}
	defer os.RemoveAll(building) // gone once published; cleans up a failed build
	rootfs := filepath.Join(building, "rootfs")
	fmt.Fprintf(progress, "building template %s (%s) into %s\n", name, t.Source, filepath.Join(s.Dir, name, t.Version))
	// debootstrap installs the base packages itself; apt-get, in the new
	// root, the rest (debootstrap's own resolver fails on larger sets, such
	// as python3-ipykernel's).
	include, extra := splitPackages(opts.Packages)
	for attempt := 1; ; attempt++ {
		cmd := exec.CommandContext(ctx, debootstrap, "--variant=minbase", "--include="+strings.Join(include, ","),
			opts.Suite, rootfs, opts.Mirror)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // no build outlives a killed serve
		err := runLogged(cmd, progress)
		if err == nil {
			break
		}
		if attempt == downloadAttempts || !downloadFailed(err) || ctx.Err() != nil {
			return t, fmt.Errorf("debootstrap of %s failed: %w", name, err)
		}
		wait := time.Duration(attempt) * retryDelay
		fmt.Fprintf(progress, "a download from %s failed (%v); trying again from the start in %s\n", opts.Mirror, err, wait)
		if err := os.RemoveAll(rootfs); err != nil {
			return t, err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return t, ctx.Err()
		}
	}
	if len(extra) > 0 {
		if err := aptInstall(ctx, rootfs, extra, progress); err != nil {
			return t, fmt.Errorf("installing %s in %s: %w", strings.Join(extra, " "), name, err)
		}
	}
	if err := finishRoot(rootfs); err != nil {
		return t, err
	}
	if t.User != "" {
		if err := addUser(ctx, rootfs, t.User, progress); err != nil {
			return t, err
		}
	}
	t, err = s.publish(t, building)
	if err == nil {
		fmt.Fprintf(progress, "template %s version %s is ready\n", name, t.Version)
	}
	return t, err
}

// splitPackages parts packages into those debootstrap includes (the base
// packages) and the others.
func splitPackages(packages []string) (include, extra []string) {
	for _, p := range packages {
		if contains(basePackages, p) {
			include = append(include, p)
		} else {
			extra = append(extra, p)
		}
	}
	return include, extra
}

// aptInstall installs packages in a fresh Debian root with its own apt-get
// (chroot), from the mirror debootstrap configured, without recommends;
// then empties apt's lists.
func aptInstall(ctx context.Context, rootfs string, packages []string, progress io.Writer) error {
	env := []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C"}
	for _, args := range [][]string{
		{"apt-get", "update", "-q"},
		append([]string{"apt-get", "install", "-y", "-q", "--no-install-recommends"}, packages...),
	} {
		cmd := exec.CommandContext(ctx, "chroot", append([]string{rootfs}, args...)...)
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := runLogged(cmd, progress); err != nil {
			return err
		}
	}
	lists, _ := filepath.Glob(filepath.Join(rootfs, "var/lib/apt/lists/*_*"))
	for _, l := range lists {
		os.Remove(l)
	}
	return nil
}

// downloadAttempts is how many times a build whose download from the
// mirror failed is started: a mirror or the way to it fails now and then.
const downloadAttempts = 3

// retryDelay is the wait before the second attempt; it grows by as much
// before each next one.
var retryDelay = 5 * time.Second

// downloadFailed reports whether debootstrap failed fetching from the
// mirror, judged by its last lines, rather than for a reason a new attempt
// would meet again (a package that does not exist, a full disk).
func downloadFailed(err error) bool {
	msg := err.Error()
	for _, s := range []string{"Failed getting release", "Couldn't download"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// finishRoot makes a fresh root ready for sandboxes: the working directory,
// and no package caches.
func finishRoot(rootfs string) error {
	if err := os.MkdirAll(filepath.Join(rootfs, "workspace"), 0o755); err != nil {
		return err
	}
	debs, _ := filepath.Glob(filepath.Join(rootfs, "var/cache/apt/archives/*.deb"))
	for _, d := range debs {
		os.Remove(d)
	}
	return nil
}

// addUser makes user in a fresh Debian root, unless it has one: with
// useradd in the root (UID 1000 when free, a home under /home, bash), and
// gives it /workspace.
func addUser(ctx context.Context, rootfs, user string, progress io.Writer) error {
	if checkUserIn(rootfs, user) != nil {
		args := []string{rootfs, "useradd", "--create-home", "--user-group", "--shell", "/bin/bash"}
		passwd, _ := os.ReadFile(filepath.Join(rootfs, "etc/passwd"))
		if !strings.Contains(string(passwd), ":1000:") {
			args = append(args, "--uid", "1000")
		}
		cmd := exec.CommandContext(ctx, "chroot", append(args, user)...)
		if err := runLogged(cmd, progress); err != nil {
			return fmt.Errorf("making the default user %s: %w", user, err)
		}
	}
	uid, gid, err := idsIn(rootfs, user)
	if err != nil {
		return err
	}
	return os.Lchown(filepath.Join(rootfs, "workspace"), uid, gid)
}

// idsIn reads a user's UID and GID from a root's /etc/passwd.
func idsIn(rootfs, user string) (int, int, error) {
	data, err := os.ReadFile(filepath.Join(rootfs, "etc/passwd"))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 4 && f[0] == user {
			uid, err1 := strconv.Atoi(f[2])
			gid, err2 := strconv.Atoi(f[3])
			if err1 == nil && err2 == nil {
				return uid, gid, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("user %s is not in the template's /etc/passwd", user)
}

// runLogged runs cmd with its output sent, line by line, to w.
func runLogged(cmd *exec.Cmd, w io.Writer) error {
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	done := make(chan []string)
	go func() {
		var tail []string
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintln(w, "  "+sc.Text())
			if tail = append(tail, sc.Text()); len(tail) > 5 {
				tail = tail[1:]
			}
		}
		done <- tail
	}()
	err := cmd.Run()
	pw.Close()
	tail := <-done
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.Join(tail, " | "))
	}
	return nil
}

// HostMirror returns the Debian mirror the host's apt uses for suite, read
// from aptDir's sources.list and sources.list.d (one-line and deb822 forms).
func HostMirror(suite, aptDir string) (string, error) {
	files := []string{filepath.Join(aptDir, "sources.list")}
	more, _ := filepath.Glob(filepath.Join(aptDir, "sources.list.d", "*"))
	files = append(files, more...)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var uri string
		if strings.HasSuffix(f, ".sources") {
			uri = deb822Mirror(string(data), suite)
		} else {
			uri = oneLineMirror(string(data), suite)
		}
		if uri != "" {
			return uri, nil
		}
	}
	return "", fmt.Errorf("no apt source for Debian %s in %s; name a mirror with --mirror", suite, aptDir)
}

// oneLineMirror finds "deb [options] URI SUITE component…".
func oneLineMirror(data, suite string) string {
	for _, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") {
			for len(f) > 0 && !strings.HasSuffix(f[0], "]") {
				f = f[1:]
			}
			if len(f) > 0 {
				f = f[1:]
			}
		}
		if len(f) >= 2 && f[1] == suite {
			return f[0]
		}
	}
	return ""
}

// deb822Mirror finds a stanza with Types: deb whose Suites hold suite.
func deb822Mirror(data, suite string) string {
	for _, stanza := range strings.Split(data, "\n\n") {
		fields := map[string]string{}
		for _, line := range strings.Split(stanza, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
				fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
			}
		}
		if !contains(strings.Fields(fields["types"]), "deb") || !contains(strings.Fields(fields["suites"]), suite) {
			continue
		}
		if uris := strings.Fields(fields["uris"]); len(uris) > 0 {
			return uris[0]
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
