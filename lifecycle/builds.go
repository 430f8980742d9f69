package lifecycle

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/agentcall"
)

// buildStore: projects' templates, their builds and build logs.
type buildStore interface {
	InsertTemplateBuild(ctx context.Context, t sbx.ProjectTemplate, b sbx.TemplateBuild) error
	GetProjectTemplate(ctx context.Context, orgID, projectID, ref string) (sbx.ProjectTemplate, error)
	ProjectTemplates(ctx context.Context, orgID, projectID string) ([]sbx.ProjectTemplate, error)
	SetTemplateVersion(ctx context.Context, id, version string, now time.Time) error
	DeleteProjectTemplate(ctx context.Context, id string, now time.Time) error
	GetTemplateBuild(ctx context.Context, orgID, id string) (sbx.TemplateBuild, error)
	TemplateBuilds(ctx context.Context, templateID string) ([]sbx.TemplateBuild, error)
	OpenTemplateBuilds(ctx context.Context) ([]sbx.TemplateBuild, error)
	UpdateTemplateBuild(ctx context.Context, id string, fn func(*sbx.TemplateBuild) error) (sbx.TemplateBuild, error)
	AppendBuildLog(ctx context.Context, id string, at time.Time, lines ...string) error
	BuildLog(ctx context.Context, id string, after int64, limit int) ([]sbx.BuildLogLine, error)
}

// Recipe is what builds a project's template, in a sandbox of its base:
// its steps run in order as root, then the sandbox's files become the
// template's new version, with the recipe's env (in /etc/profile.d, which
// the login shells of commands and PTYs read), working directory, default
// user, start command and ports (each, when empty, its base's).
type Recipe struct {
	Base    string            `json:"base,omitempty"`  // a template: public, or the project's own; default "base"
	Image   *sbx.ImageSpec    `json:"-"`               // in place of Base: an OCI image (its credentials used for the pull, never kept)
	ImageOf string            `json:"image,omitempty"` // Image's reference, as kept
	Steps   []Step            `json:"steps,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Workdir string            `json:"workdir,omitempty"`
	User    string            `json:"user,omitempty"`
	Start   string            `json:"start,omitempty"`
	Ports   []int             `json:"ports,omitempty"`
	// Ready, when it has a command or a port, is when the start command has
	// made the template's sandboxes ready: checked in the build's sandbox
	// (the start command started there once the steps are done; a check
	// that does not pass fails the build), then the new version's ready
	// snapshot is made, which creates of the default size restore.
	Ready ReadyRequest `json:"ready,omitzero"`
	// The build's sandbox: its size and how long the whole build may take.
	Resources sbx.Resources `json:"-"`
	Timeout   time.Duration `json:"-"`
}

// Step is one step of a recipe: exactly one of packages to install with
// the base's own package manager (apt-get, apk, dnf or yum), a command line
// to run (bash -l -c), or a file to write.
type Step struct {
	Packages []string `json:"packages,omitempty"`
	Run      string   `json:"run,omitempty"`
	File     *File    `json:"file,omitempty"`
}

// File is a file a recipe writes: its absolute path, content and mode
// (default 0644).
type File struct {
	Path    string      `json:"path"`
	Content []byte      `json:"content"`
	Mode    fs.FileMode `json:"mode,omitempty"`
}

// Bounds of a recipe.
const (
	MaxRecipeSteps    = 100
	DefaultBuildLimit = 30 * time.Minute
	MaxBuildLimit     = 2 * time.Hour
	maxRecipeFiles    = 1 << 20 // the bytes of a recipe's files, together (the API's body bounds them too)
	buildOutputTail   = 2000    // the bytes of a failed step's output its error quotes
)

var packageName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9+._:=~-]{0,127}$`)

// BuildKey is the metadata key of a build's sandbox: the build's ID.
const BuildKey = "sbx.templateBuild"

// check names the recipe's problems.
func (r *Recipe) check(p *sbx.Problems) {
	if r.Image != nil && r.Base != "" {
		p.Add("base", "a recipe starts from a base template or an image, not both")
	}
	if len(r.Steps) > MaxRecipeSteps {
		p.Add("steps", "a recipe has at most %d steps", MaxRecipeSteps)
	}
	files := 0
	for i, s := range r.Steps {
		field := fmt.Sprintf("steps[%d]", i)
		n := 0
		if len(s.Packages) > 0 {
			n++
			for _, pkg := range s.Packages {
				if !packageName.MatchString(pkg) {
					p.Add(field+".packages", "%q is not a package name", pkg)
				}
			}
		}
		if s.Run != "" {
			n++
		}
		if s.File != nil {
			n++
			files += len(s.File.Content)
			if !path.IsAbs(s.File.Path) || path.Clean(s.File.Path) != s.File.Path || s.File.Path == "/" {
				p.Add(field+".file.path", "%q is not a clean absolute path of a file", s.File.Path)
			}
			if s.File.Mode&^fs.ModePerm != 0 {
				p.Add(field+".file.mode", "mode %o has bits other than permissions", s.File.Mode)
			}
		}
		if n != 1 {
			p.Add(field, "a step is exactly one of packages, run and file")
		}
	}
	if files > maxRecipeFiles {
		p.Add("steps", "the recipe's files are %d bytes together, more than %d", files, maxRecipeFiles)
	}
	for k, v := range r.Env {
		if problem := sbx.EnvProblem(k, v); problem != "" {
			p.Add("env."+k, "%s", problem)
		}
	}
	if r.Workdir != "" && (!path.IsAbs(r.Workdir) || path.Clean(r.Workdir) != r.Workdir) {
		p.Add("workdir", "%q is not a clean absolute path", r.Workdir)
	}
	if strings.ContainsAny(r.User, " \t\n\x00") {
		p.Add("user", "%q is not a user name or UID", r.User)
	}
	if strings.ContainsRune(r.Start, 0) {
		p.Add("start", "the start command holds a NUL byte")
	}
	sbx.CheckPorts(p, "ports", r.Ports)
	if r.Ready.Command != "" || r.Ready.Port != 0 {
		if r.Start == "" {
			p.Add("ready", "a readiness check needs a start command to wait for")
		}
		if (r.Ready.Command == "") == (r.Ready.Port == 0) {
			p.Add("ready", "give a readiness check: command or port, one of them")
		}
		if r.Ready.Port < 0 || r.Ready.Port > 65535 {
			p.Add("ready.port", "port must be between 1 and 65535")
		}
		if r.Ready.Timeout < 0 || r.Ready.Timeout > 30*time.Minute {
			p.Add("ready.timeout", "timeout must be between 1 and 1800 seconds")
		}
		checkWarmCode(p, "ready.warmCode", r.Ready.WarmCode)
	}
	if r.Timeout < 0 || r.Timeout > MaxBuildLimit {
		p.Add("timeout", "a build takes at most %s", MaxBuildLimit)
	}
}

// BuildTemplate builds template name of c's project from r, in the
// background: the template (made if new; a name of the server's own
// templates, or another of the project's being built, is a 409) and its
// build, queued, come back at once; BuildOf and BuildLog follow it. The
// build is a sandbox of c's project, admitted, billed and bounded like any
// (r's size and timeout), which is killed when the build ends.
func (m *Manager) BuildTemplate(ctx context.Context, c sbx.Caller, name string, r Recipe) (sbx.ProjectTemplate, sbx.TemplateBuild, error) {
	var p sbx.Problems
	if !sbx.ValidTemplateName(name) || strings.HasPrefix(name, sbx.TemplateIDPrefix) {
		p.Add("name", "template name %q must be 1-64 lowercase letters, digits, '.', '_' or '-', not beginning %q", name, sbx.TemplateIDPrefix)
	}
	r.check(&p)
	if err := p.Err(); err != nil {
		return sbx.ProjectTemplate{}, sbx.TemplateBuild{}, err
	}
	if r.Base == "" && r.Image == nil {
		r.Base = "base"
	}
	if r.Timeout == 0 {
		r.Timeout = DefaultBuildLimit
	}
	if r.Ready.Timeout == 0 {
		r.Ready.Timeout = DefaultReadyWait
	}
	prov, err := m.provider(m.cfg.DefaultProvider)
	if err != nil {
		return sbx.ProjectTemplate{}, sbx.TemplateBuild{}, err
	}
	if r.Image != nil { // the registry answers now: a refusal is the request's
		if r.Image, err = resolveImage(ctx, prov, *r.Image); err != nil {
			return sbx.ProjectTemplate{}, sbx.TemplateBuild{}, err
		}
		r.ImageOf = r.Image.Ref
	}
	if _, ok := prov.(sbx.TemplatePublisher); !ok {
		return sbx.ProjectTemplate{}, sbx.TemplateBuild{}, sbx.Errorf(sbx.EUnsupported, "provider %s cannot build templates: it cannot make a sandbox's files a template", prov.Name())
	}
	if d, ok := prov.(sbx.TemplateDefaulter); ok {
		if _, err := d.TemplateDefaults(ctx, name, ""); err == nil {
			return sbx.ProjectTemplate{}, sbx.TemplateBuild{}, sbx.Errorf(sbx.EConflict, "template %s is one of the server's own: choose another name", name)
		}
	}
	if err := m.verified(c); err != nil { // its build is a sandbox: refused now, not in the background
		return sbx.ProjectTemplate{}, sbx.TemplateBuild{}, err
	}
	if err := m.checkFunded(ctx, c.Org.ID, "build a template"); err != nil {
		return sbx.ProjectTemplate{}, sbx.TemplateBuild{}, err
	}
	now := m.clock.Now()
	t, err := m.store.GetProjectTemplate(ctx, c.Org.ID, c.Project.ID, name)
	if sbx.ErrorCode(err) == sbx.ENotFound {
		t, err = sbx.ProjectTemplate{ID: newTemplateID(), OrgID: c.Org.ID, WorkspaceID: c.Workspace.ID, ProjectID: c.Project.ID, Name: name, CreatedAt: now}, nil
	}
	if err != nil {
		return t, sbx.TemplateBuild{}, err
	}
	t.UpdatedAt = now
	if t.Recipe, err = json.Marshal(r); err != nil {
		return t, sbx.TemplateBuild{}, err
	}
	b := sbx.TemplateBuild{ID: uuid.NewString(), TemplateID: t.ID, OrgID: c.Org.ID, State: sbx.BuildQueued, Steps: len(r.Steps), CreatedAt: now}
	if err := m.store.InsertTemplateBuild(ctx, t, b); err != nil {
		return t, b, err
	}
	m.wg.Go(func() { m.runBuild(context.Background(), c, t, b, r) })
	return t, b, nil
}

func newTemplateID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return sbx.TemplateIDPrefix + hex.EncodeToString(b)
}

// buildLog writes a build's log lines to the ledger as they come, a line
// at a time; a partial line waits for its end (or flush).
type buildLog struct {
	m    *Manager
	id   string
	mu   sync.Mutex
	part []byte
	tail []byte // the last buildOutputTail bytes of a step's output
}

func (l *buildLog) line(format string, args ...any) {
	l.flush()
	l.m.store.AppendBuildLog(context.Background(), l.id, l.m.clock.Now(), fmt.Sprintf(format, args...))
}

func (l *buildLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tail = append(l.tail, p...)
	if len(l.tail) > buildOutputTail {
		l.tail = l.tail[len(l.tail)-buildOutputTail:]
	}
	l.part = append(l.part, p...)
	i := bytes.LastIndexByte(l.part, '\n')
	if i < 0 {
		return len(p), nil
	}
	lines := strings.Split(string(l.part[:i]), "\n")
	l.part = l.part[i+1:]
	return len(p), l.m.store.AppendBuildLog(context.Background(), l.id, l.m.clock.Now(), lines...)
}

func (l *buildLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.part) > 0 {
		l.m.store.AppendBuildLog(context.Background(), l.id, l.m.clock.Now(), string(l.part))
		l.part = nil
	}
}

// runBuild runs build b of template t: a sandbox of the recipe's base, its
// steps, the sandbox's files published as the template's new version; the
// build ends ready with it, or failed naming the step that failed and its
// output's tail. The sandbox is killed either way.
func (m *Manager) runBuild(ctx context.Context, c sbx.Caller, t sbx.ProjectTemplate, b sbx.TemplateBuild, r Recipe) {
	log := &buildLog{m: m, id: b.ID}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	var sandbox string // the build's sandbox, until it is killed
	stop := func() {
		if sandbox != "" {
			m.kill(context.WithoutCancel(ctx), sandbox, sbx.EndDeleted)
			sandbox = ""
		}
	}
	fail := func(step int, err error) {
		stop()
		log.flush()
		msg := providerMessage(err)
		if ctx.Err() == context.DeadlineExceeded {
			msg = fmt.Sprintf("the build ran past its limit of %s", r.Timeout)
		}
		if step > 0 {
			msg = fmt.Sprintf("step %d (%s) failed: %s", step, r.Steps[step-1].describe(), msg)
			if tail := strings.TrimSpace(string(log.tail)); tail != "" {
				msg += "; its output ended:\n" + tail
			}
		}
		log.line("build failed: %s", msg)
		m.store.UpdateTemplateBuild(context.Background(), b.ID, func(b *sbx.TemplateBuild) error {
			b.State, b.Error, b.FinishedAt = sbx.BuildFailed, msg, m.clock.Now()
			return nil
		})
	}
	base := r.Base
	if r.Image != nil {
		log.line("build %s of template %s: from image %s", b.ID, t.Name, r.Image.Ref)
	} else {
		log.line("build %s of template %s: from template %s", b.ID, t.Name, base)
	}
	sb, err := m.Create(ctx, c, CreateRequest{TemplateID: base, Image: r.Image, WaitReady: true, Timeout: r.Timeout + time.Minute,
		Resources: r.Resources, Metadata: map[string]string{BuildKey: b.ID}, cold: true})
	sandbox = sb.ID
	if err != nil {
		fail(0, fmt.Errorf("its sandbox could not start: %w", err))
		return
	}
	if _, err := m.store.UpdateTemplateBuild(ctx, b.ID, func(b *sbx.TemplateBuild) error {
		b.State, b.SandboxID, b.StartedAt = sbx.BuildBuilding, sb.ID, m.clock.Now()
		return nil
	}); err != nil {
		fail(0, err)
		return
	}
	log.line("sandbox %s started", sb.ProviderSandboxID)
	addr, err := m.agentAddr(ctx, sb)
	if err != nil {
		fail(0, err)
		return
	}
	agent := agentcall.For(sb, addr)
	for i, s := range r.Steps {
		m.store.UpdateTemplateBuild(ctx, b.ID, func(b *sbx.TemplateBuild) error { b.Step = i + 1; return nil })
		log.line("step %d/%d: %s", i+1, len(r.Steps), s.describe())
		log.tail = nil
		if err := runStep(ctx, agent, s, log); err != nil {
			fail(i+1, err)
			return
		}
	}
	if len(r.Env) > 0 { // the env, where login shells read it
		env := Step{File: &File{Path: "/etc/profile.d/sbx-template.sh", Content: profile(r.Env), Mode: 0o644}}
		if err := runStep(ctx, agent, env, log); err != nil {
			fail(0, fmt.Errorf("writing the env: %w", err))
			return
		}
	}
	if r.Ready.Command != "" || r.Ready.Port != 0 {
		if err := m.checkBuildReady(ctx, agent, sb, r, log); err != nil {
			fail(0, err)
			return
		}
	}
	log.flush()
	log.line("publishing the sandbox's files as template %s", t.Name)
	pub := m.providers[sb.Provider].(sbx.TemplatePublisher)
	source := "recipe on template " + base
	if r.Image != nil {
		source = "recipe on image " + r.Image.Ref
	}
	version, err := pub.PublishTemplate(ctx, sb.Handle, t.ID, sbx.TemplateMeta{Source: source, StartCmd: r.Start, User: r.User, Workdir: r.Workdir, Ports: r.Ports})
	if err != nil {
		fail(0, fmt.Errorf("publishing its files: %w", err))
		return
	}
	if err := m.store.SetTemplateVersion(ctx, t.ID, version, m.clock.Now()); err != nil {
		fail(0, err)
		return
	}
	stop()
	if r.Ready.Command != "" || r.Ready.Port != 0 {
		log.line("capturing version %s started and ready as the template's ready snapshot", version)
		ready := r.Ready
		ready.Resources, err = m.Size(nil, nil, nil) // what a create that names no size gets
		var sn sbx.Snapshot
		if err == nil {
			sn, err = m.prepare(ctx, c, t.ID, ready)
		}
		if err != nil {
			log.line("warning: no ready snapshot (creates boot and run the start command): %s", providerMessage(err))
		} else {
			log.line("ready snapshot %s made", sn.ID)
		}
	}
	log.line("template %s version %s is ready", t.Name, version)
	m.store.UpdateTemplateBuild(context.Background(), b.ID, func(b *sbx.TemplateBuild) error {
		b.State, b.Version, b.FinishedAt = sbx.BuildReady, version, m.clock.Now()
		return nil
	})
}

// runStep runs one step as root in the build's sandbox, its output to log.
func runStep(ctx context.Context, agent agentcall.Agent, s Step, log *buildLog) error {
	if s.File != nil {
		mode := s.File.Mode
		if mode == 0 {
			mode = 0o644
		}
		script := fmt.Sprintf("mkdir -p %s && cat > %s && chmod %o %s", shellQuote(path.Dir(s.File.Path)), shellQuote(s.File.Path), mode, shellQuote(s.File.Path))
		return runScript(ctx, agent, script, bytes.NewReader(s.File.Content), log)
	}
	script := s.Run
	if len(s.Packages) > 0 {
		script = installScript(s.Packages)
	}
	return runScript(ctx, agent, script, nil, log)
}

func runScript(ctx context.Context, agent agentcall.Agent, script string, stdin *bytes.Reader, log *buildLog) error {
	req := apiv1.StartCommandRequest{Cmd: script, User: "root", Cwd: "/"}
	streams := agentcall.Streams{Stdout: log, Stderr: log}
	if stdin != nil {
		req.Stdin, streams.Stdin = true, stdin
	}
	end, err := agent.Run(ctx, req, streams)
	if err != nil {
		return err
	}
	if end.ExitCode == nil || *end.ExitCode != 0 {
		code := -1
		if end.ExitCode != nil {
			code = *end.ExitCode
		}
		if why := end.Error + end.Signal; why != "" {
			return fmt.Errorf("exit %d (%s)", code, why)
		}
		return fmt.Errorf("exit %d", code)
	}
	return nil
}

// installScript installs packages with the package manager the sandbox has.
func installScript(pkgs []string) string {
	list := strings.Join(pkgs, " ")
	return `set -e
if command -v apt-get >/dev/null; then export DEBIAN_FRONTEND=noninteractive; apt-get update -q && apt-get install -y -q --no-install-recommends ` + list + ` && rm -rf /var/lib/apt/lists/*
elif command -v apk >/dev/null; then apk add --no-cache ` + list + `
elif command -v dnf >/dev/null; then dnf install -y ` + list + `
elif command -v yum >/dev/null; then yum install -y ` + list + `
else echo "no package manager (apt-get, apk, dnf or yum) in this base" >&2; exit 127; fi`
}

// describe names a step in the log and in a failed build's error.
func (s Step) describe() string {
	switch {
	case len(s.Packages) > 0:
		return "packages " + strings.Join(s.Packages, " ")
	case s.File != nil:
		return "file " + s.File.Path
	}
	line, _, more := strings.Cut(s.Run, "\n")
	if more || len(line) > 80 {
		line = strings.TrimSpace(line[:min(len(line), 80)]) + " …"
	}
	return "run " + line
}

// profile is the env as /etc/profile.d reads it.
func profile(env map[string]string) []byte {
	var b strings.Builder
	for _, k := range sortedKeys(env) {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(env[k]))
	}
	return []byte(b.String())
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Builds lists the builds of a project's template c sees, newest first.
func (m *Manager) Builds(ctx context.Context, c sbx.Caller, ref string) (sbx.ProjectTemplate, []sbx.TemplateBuild, error) {
	t, err := m.projectTemplate(ctx, c, ref)
	if err != nil {
		return t, nil, err
	}
	builds, err := m.store.TemplateBuilds(ctx, t.ID)
	return t, builds, err
}

// Build is build id of a project's template c sees, and the template.
func (m *Manager) Build(ctx context.Context, c sbx.Caller, ref, id string) (sbx.ProjectTemplate, sbx.TemplateBuild, error) {
	t, err := m.projectTemplate(ctx, c, ref)
	if err != nil {
		return t, sbx.TemplateBuild{}, err
	}
	b, err := m.store.GetTemplateBuild(ctx, c.Org.ID, id)
	if err == nil && b.TemplateID != t.ID {
		err = sbx.Errorf(sbx.ENotFound, "build %s not found", id)
	}
	return t, b, err
}

// buildLogPage is how many lines of a build's log one read takes.
const buildLogPage = 500

// BuildLog gives fn the lines of build b's log (one Build answered c) after
// line after; with follow, then each line as it comes, until the build ends
// (its last line says how) or ctx does.
func (m *Manager) BuildLog(ctx context.Context, c sbx.Caller, b sbx.TemplateBuild, after int64, follow bool, fn func(sbx.BuildLogLine) error) error {
	var err error
	for err == nil {
		ended := b.State == sbx.BuildReady || b.State == sbx.BuildFailed // read before the lines: none comes after
		var lines []sbx.BuildLogLine
		if lines, err = m.store.BuildLog(ctx, b.ID, after, buildLogPage); err != nil {
			return err
		}
		for _, l := range lines {
			if err := fn(l); err != nil {
				return err
			}
			after = l.Seq
		}
		if len(lines) == buildLogPage {
			continue
		}
		if !follow || ended {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-m.clock.After(200 * time.Millisecond):
		}
		b, err = m.store.GetTemplateBuild(ctx, c.Org.ID, b.ID)
	}
	return err
}

// reconcileBuilds ends the builds a stop of serve cut short: failed, saying
// so, their sandboxes killed.
func (m *Manager) reconcileBuilds(ctx context.Context) error {
	open, err := m.store.OpenTemplateBuilds(ctx)
	if err != nil {
		return err
	}
	for _, b := range open {
		const why = "serve stopped during the build; build the template again"
		m.store.AppendBuildLog(ctx, b.ID, m.clock.Now(), "build failed: "+why)
		if _, err := m.store.UpdateTemplateBuild(ctx, b.ID, func(b *sbx.TemplateBuild) error {
			b.State, b.Error, b.FinishedAt = sbx.BuildFailed, why, m.clock.Now()
			return nil
		}); err != nil && sbx.ErrorCode(err) != sbx.EConflict {
			return err
		}
		if b.SandboxID != "" {
			if _, err := m.kill(ctx, b.SandboxID, sbx.EndDeleted); err != nil && sbx.ErrorCode(err) != sbx.EConflict {
				m.log.Warn("reconcile: killing an interrupted build's sandbox", "build", b.ID, "sandbox", b.SandboxID, "err", err)
			}
		}
	}
	return nil
}

// checkBuildReady starts the recipe's start command in the build's
// sandbox, as a sandbox of the template will at boot, and waits for its
// readiness check to pass.
func (m *Manager) checkBuildReady(ctx context.Context, agent agentcall.Agent, sb sbx.Sandbox, r Recipe, log *buildLog) error {
	log.line("starting the start command and waiting for readiness (%s)", readyText(r.Ready))
	if _, err := agent.Start(ctx, apiv1.StartCommandRequest{Cmd: r.Start, User: r.User, Cwd: r.Workdir, Tag: "start"}); err != nil {
		return fmt.Errorf("starting the start command: %w", err)
	}
	if err := m.awaitReady(ctx, sb, r.Ready); err != nil {
		return sbx.Errorf(sbx.ErrorCode(err), "the readiness check did not pass in the build's sandbox: %s", sbx.ErrorMessage(err))
	}
	log.line("ready")
	return nil
}

func readyText(r ReadyRequest) string {
	if r.Port != 0 {
		return fmt.Sprintf("a listener on port %d", r.Port)
	}
	return "command " + r.Command
}
