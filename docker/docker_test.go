package docker

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/docker/dockertest"
	"github.com/sbxdev/sbx/internal/agentcall"
	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/internal/testtemplates"
	"github.com/sbxdev/sbx/providertest"
	"github.com/sbxdev/sbx/template"
)

var (
	setupOnce sync.Once
	agentBin  string
	templates template.Store
	setupErr  error
	agentDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if agentDir != "" {
		os.RemoveAll(agentDir)
	}
	os.Exit(code)
}

// newProvider returns a provider over the shared test daemon with an
// instance name of its own, so that it lists only what it made; at cleanup
// every sandbox it holds is removed.
func newProvider(t *testing.T) *Provider { return newAgentProvider(t, true) }

// newAgentProvider is newProvider, its sandboxes running the agent or,
// without, an idle first process (the conformance suite's tokens are too
// short for an agent).
func newAgentProvider(t *testing.T, agent bool) *Provider {
	t.Helper()
	host := dockertest.Host(t)
	setupOnce.Do(func() {
		if agentDir, setupErr = os.MkdirTemp("", "sbx-docker-agent-"); setupErr != nil {
			return
		}
		if agentBin, setupErr = dockertest.Agent(agentDir); setupErr != nil {
			return
		}
		templates, setupErr = testtemplates.Base()
	})
	if setupErr != nil {
		if strings.Contains(setupErr.Error(), "debootstrap") {
			testenv.Missing(t, setupErr.Error())
		}
		t.Fatal(setupErr)
	}
	cfg := Config{Host: host, Name: "sbxtest-" + uuid.NewString()[:8], Templates: templates, WatchEvery: 50 * time.Millisecond}
	if agent {
		cfg.Agent = agentBin
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		list, _ := p.List(context.Background())
		for _, in := range list {
			p.Kill(context.Background(), in.Handle)
		}
	})
	return p
}

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Factory{
		New: func(t *testing.T) sbx.Provider { return newAgentProvider(t, false) },
		Reopen: func(t *testing.T, p sbx.Provider) sbx.Provider {
			q, err := New(p.(*Provider).cfg)
			if err != nil {
				t.Fatal(err)
			}
			return q
		},
		Template: "base",
		Timeout:  5 * time.Minute, // the first create imports base into the daemon
	})
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func create(t *testing.T, p *Provider, spec sbx.Spec) sbx.Instance {
	t.Helper()
	if spec.SandboxID == "" {
		spec.SandboxID = uuid.NewString()
	}
	if spec.ProviderSandboxID == "" {
		spec.ProviderSandboxID = "t" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	}
	if spec.TemplateID == "" {
		spec.TemplateID = "base"
	}
	in, err := p.Create(ctxFor(t), spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { p.Kill(context.Background(), in.Handle) })
	return in
}

// The agent is the container's first process, answers only its token,
// which is in no environ, argv or file of the sandbox, nor in the
// container's configuration; the sandbox has its resources and env; the
// daemon's logs and stats reach sbx.
func TestAgentTokenResources(t *testing.T) {
	p := newProvider(t)
	ctx := ctxFor(t)
	const token = "docker-test-token-0123456789abcdef0123456789"
	in := create(t, p, sbx.Spec{Resources: sbx.Resources{MilliCPU: 500, MemoryMB: 256}, Env: map[string]string{"GREETING": "hello"}, AccessToken: token})
	addr, err := p.AgentAddr(ctx, in.Handle)
	if err != nil {
		t.Fatal(err)
	}
	if err := agentcall.Ready(ctx, addr, token); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := agentcall.Ready(rctx, addr, "wrong-token-0123456789abcdef0123456789"); err == nil {
		t.Fatal("the agent answered a wrong token")
	}
	script := `set -e
echo "pid1=$(cat /proc/1/comm)"
echo "env=$GREETING"
cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max
cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max
! grep -rl "$TOKEN" /proc/1/environ /proc/1/cmdline /etc /workspace /root 2>/dev/null
`
	code, out, err := agentcall.Run(ctx, addr, token, strings.ReplaceAll(script, "$TOKEN", token), nil, time.Minute)
	if err != nil || code != 0 {
		t.Fatalf("in the sandbox: %d %v\n%s", code, err, out)
	}
	for _, want := range []string{"pid1=sbx\n", "env=hello", "268435456", "2048"} {
		if !strings.Contains(out, want) {
			t.Errorf("the sandbox's answer lacks %q:\n%s", want, out)
		}
	}
	var c struct {
		Config struct {
			Env, Entrypoint, Cmd []string
		}
		HostConfig struct{ NanoCpus int64 }
	}
	if err := p.api.Call(ctx, "GET", "/containers/"+url.PathEscape(p.container(in.ProviderSandboxID))+"/json", nil, nil, &c); err != nil {
		t.Fatal(err)
	}
	if c.HostConfig.NanoCpus != 500_000_000 {
		t.Errorf("NanoCpus = %d", c.HostConfig.NanoCpus)
	}
	if strings.Contains(strings.Join(append(append(c.Config.Env, c.Config.Entrypoint...), c.Config.Cmd...), " "), token) {
		t.Error("the container's configuration holds the token")
	}

	m, err := p.Metrics(ctx, in.Handle)
	if err != nil {
		t.Fatal(err)
	}
	if m.CPUSeconds <= 0 || m.MemoryBytes <= 0 || m.Processes < 1 {
		t.Errorf("metrics: %+v", m)
	}
	if _, _, err := agentcall.Run(ctx, addr, token, "echo to-the-log > /proc/1/fd/1", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	// The daemon's log driver writes a line a moment after the process
	// does: the log is read until it has the line (a hang guard, not a
	// timing assertion).
	var lines []sbx.LogLine
	found := false
	for deadline := time.Now().Add(30 * time.Second); !found && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if lines, err = p.Logs(ctx, in.Handle); err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			found = found || (l.Source == "stdout" && l.Line == "to-the-log" && !l.At.IsZero())
		}
	}
	for _, l := range lines {
		if strings.Contains(l.Line, token) {
			t.Errorf("the log holds the token: %q", l.Line)
		}
	}
	if !found {
		t.Errorf("the logs lack the line written to stdout: %+v", lines)
	}

	// Following: a read from a cursor answers only what came after it.
	marks := func(lines []sbx.LogLine) (out []string) {
		for _, l := range lines {
			if strings.HasPrefix(l.Line, "mark-") {
				out = append(out, l.Line)
			}
		}
		return out
	}
	write := func(from, to int) {
		t.Helper()
		if _, _, err := agentcall.Run(ctx, addr, token, fmt.Sprintf("for i in $(seq %d %d); do echo mark-$i > /proc/1/fd/1; done", from, to), nil, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	// follow reads from cursor on until n marks came, each read going on
	// from where the last stopped, as lifecycle's FollowLogs does; what it
	// answers holds every mark once.
	follow := func(cursor sbx.LogCursor, n int) ([]string, sbx.LogCursor) {
		t.Helper()
		var got []string
		for deadline := time.Now().Add(30 * time.Second); len(got) < n && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			fresh, next, err := p.LogsFrom(ctx, in.Handle, cursor)
			if err != nil {
				t.Fatal(err)
			}
			got, cursor = append(got, marks(fresh)...), next
		}
		return got, cursor
	}
	write(1, 3)
	first, cursor := follow(sbx.LogCursor{}, 3)
	if !slices.Equal(first, []string{"mark-1", "mark-2", "mark-3"}) {
		t.Fatalf("the log from its start: %v", first)
	}
	if again, _, err := p.LogsFrom(ctx, in.Handle, cursor); err != nil || len(marks(again)) != 0 {
		t.Errorf("a read with nothing new answered %+v %v", again, err)
	}
	write(4, 6)
	if next, _ := follow(cursor, 3); !slices.Equal(next, []string{"mark-4", "mark-5", "mark-6"}) {
		t.Errorf("the log after the cursor: %v", next)
	}
}

// Pause keeps a running process and its memory; another instance on the
// same daemon sees none of these sandboxes; a sandbox whose container
// ends is reported dead with a diagnostic.
func TestPauseInstancesWatch(t *testing.T) {
	p, other := newProvider(t), newProvider(t)
	ctx := ctxFor(t)
	const token = "docker-test-token-0123456789abcdef0123456789"
	in := create(t, p, sbx.Spec{Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 256}, AccessToken: token})
	addr, err := p.AgentAddr(ctx, in.Handle)
	if err != nil {
		t.Fatal(err)
	}
	if err := agentcall.Ready(ctx, addr, token); err != nil {
		t.Fatal(err)
	}
	if code, out, err := agentcall.Run(ctx, addr, token, "nohup sleep 100000 >/dev/null 2>&1 & echo $! > /tmp/sleeper", nil, time.Minute); err != nil || code != 0 {
		t.Fatalf("%d %v %s", code, err, out)
	}
	if err := p.Pause(ctx, in.Handle); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Resume(ctx, in.Handle); err != nil {
		t.Fatal(err)
	}
	if code, out, err := agentcall.Run(ctx, addr, token, `kill -0 "$(cat /tmp/sleeper)"`, nil, time.Minute); err != nil || code != 0 {
		t.Fatalf("the process did not outlive the pause: %d %v %s", code, err, out)
	}
	if list, err := other.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("another instance lists %v (%v)", list, err)
	}
	if err := other.Kill(ctx, in.Handle); err != nil {
		t.Fatal(err)
	}
	if _, err := p.inspect(ctx, in.ProviderSandboxID); err != nil {
		t.Fatalf("another instance's kill removed the container: %v", err)
	}

	died := make(chan sbx.Died, 1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go p.Watch(wctx, func(d sbx.Died) { died <- d })
	if err := p.api.Call(ctx, "POST", "/containers/"+p.container(in.ProviderSandboxID)+"/kill", nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	d := <-died
	if d.ProviderSandboxID != in.ProviderSandboxID || !strings.Contains(d.Diagnostic, "stopped running") {
		t.Errorf("died: %+v", d)
	}
}

// A template the daemon has as an image is used as it is; one neither has
// is refused before anything is made, naming it.
func TestTemplates(t *testing.T) {
	p := newProvider(t)
	ctx := ctxFor(t)
	if err := p.Admit(ctx, sbx.Spec{TemplateID: "no-such-template"}); sbx.ErrorCode(err) != sbx.ENotFound || !strings.Contains(err.Error(), "no-such-template") {
		t.Fatalf("Admit of a missing template: %v", err)
	}
	// A project's template and an image sbx imported are no caller's to
	// start by name on docker: lifecycle authorizes a project's templates.
	for _, name := range []string{"tpl-0123456789ab", ImageRepo + "/base:v1"} {
		if err := p.Admit(ctx, sbx.Spec{TemplateID: name}); sbx.ErrorCode(err) != sbx.ENotFound {
			t.Errorf("Admit of %s: %v", name, err)
		}
	}
	base, err := templates.Current("base")
	if err != nil {
		t.Fatal(err)
	}
	in := create(t, p, sbx.Spec{AccessToken: "token-0123456789abcdef0123456789abcdef"}) // imports base
	p.Kill(ctx, in.Handle)
	name := "sbx-docker-test-" + strings.ToLower(uuid.NewString()[:8])
	ref := ImageRepo + "/base:" + base.Version
	if err := p.api.Call(ctx, "POST", "/images/"+url.PathEscape(ref)+"/tag", url.Values{"repo": {name}, "tag": {"latest"}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.api.Call(context.Background(), "DELETE", "/images/"+name, nil, nil, nil) })
	o, err := p.source(ctx, sbx.Spec{TemplateID: name}, false)
	if err != nil || o.imported || o.ref != name {
		t.Fatalf("source of an image of the daemon: %+v %v", o, err)
	}
	const token = "docker-test-token-0123456789abcdef0123456789"
	in = create(t, p, sbx.Spec{TemplateID: name, AccessToken: token})
	addr, err := p.AgentAddr(ctx, in.Handle)
	if err != nil {
		t.Fatal(err)
	}
	if err := agentcall.Ready(ctx, addr, token); err != nil {
		t.Fatal(err)
	}
}
