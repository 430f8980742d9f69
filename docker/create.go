package docker

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"sort"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/template"
)

// AgentMount is where the agent binary appears inside every sandbox, as
// on the local provider.
const AgentMount = "/.sbx/sbx"

// The agent, the container's first process, reads its access token on its
// stdin (--token-fd 0), which Create attaches to, writes the token and a
// newline to, and closes (StdinOnce); the agent then puts /dev/null in its
// place. The token is in no environment, argv, file or log of the
// container (the daemon keeps no stdin), nor in its configuration, and the
// image needs no shell.

// caps are what a sandbox's root may do: the local provider's set (what the
// agent needs to run commands as any user of the image and give new files
// to them); no-new-privileges keeps a command started as another user from
// getting any back.
var caps = []string{"CAP_AUDIT_WRITE", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
	"CAP_NET_BIND_SERVICE", "CAP_SETGID", "CAP_SETUID"}

// maxPids bounds the processes of one sandbox, as the local provider's
// RLIMIT_NPROC does, so a fork bomb stops at the limit.
const maxPids = 2048

// agentTokenTimeout bounds the wait for the daemon to take the token.
const agentTokenTimeout = 30 * time.Second

// Create implements sbx.Provider: the template's image (imported once), a
// container with the agent as its first process, its stdin attached,
// started, the token written to it. A failure removes the container.
func (p *Provider) Create(ctx context.Context, spec sbx.Spec) (_ sbx.Instance, err error) {
	if err := ctx.Err(); err != nil {
		return sbx.Instance{}, err
	}
	id := spec.ProviderSandboxID
	if !idPattern.MatchString(id) {
		return sbx.Instance{}, fmt.Errorf("sandbox ID %q is not one the docker provider accepts", id)
	}
	if err := unsupported(spec); err != nil {
		return sbx.Instance{}, err
	}
	from, err := p.source(ctx, spec, true)
	if err != nil {
		return sbx.Instance{}, err
	}
	end, err := p.begin(ctx, id)
	if err != nil {
		return sbx.Instance{}, err
	}
	defer end()
	ok := false
	defer func() {
		if !ok {
			p.remove(context.WithoutCancel(ctx), id)
		}
	}()
	var created struct {
		ID string `json:"Id"`
	}
	body := p.containerSpec(spec, from)
	if err := p.api.Call(ctx, "POST", "/containers/create", url.Values{"name": {p.container(id)}}, body, &created); err != nil {
		if IsStatus(err, 409) {
			return sbx.Instance{}, sbx.Errorf(sbx.EConflict, "sandbox %s already has a container (%s)", id, p.container(id))
		}
		return sbx.Instance{}, err
	}
	var stdin io.WriteCloser
	if p.cfg.Agent != "" {
		if stdin, err = p.api.attachStdin(ctx, created.ID); err != nil {
			return sbx.Instance{}, err
		}
		defer stdin.Close()
	}
	if err := p.api.Call(ctx, "POST", "/containers/"+created.ID+"/start", nil, nil, nil); err != nil {
		return sbx.Instance{}, err
	}
	if stdin != nil {
		if err := writeToken(stdin, spec.AccessToken); err != nil {
			return sbx.Instance{}, fmt.Errorf("handing the agent its token: %w", err)
		}
	}
	c, err := p.inspect(ctx, id)
	if err != nil {
		return sbx.Instance{}, err
	}
	if !c.State.Running {
		return sbx.Instance{}, fmt.Errorf("the sandbox's container is %s (exit code %d) after its start%s", c.State.Status, c.State.ExitCode, p.lastLines(ctx, id))
	}
	if ip := p.ipOf(c); ip != "" {
		p.addrs.Store(id, ip)
	}
	ok = true
	return sbx.Instance{SandboxID: spec.SandboxID, ProviderSandboxID: id, Status: sbx.InstanceRunning, Handle: sbx.IDHandle(id)}, nil
}

// writeToken writes the token and a newline to the container's stdin and
// closes it: the agent reads it to the newline, and the daemon closes the
// container's stdin once its one attach ends (StdinOnce).
func writeToken(w io.WriteCloser, token string) error {
	done := make(chan error, 1)
	go func() {
		_, err := io.WriteString(w, token+"\n")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return err
		}
		return w.Close()
	case <-time.After(agentTokenTimeout):
		w.Close()
		return fmt.Errorf("the daemon did not take the token within %s", agentTokenTimeout)
	}
}

// containerConfig is the body of POST /containers/create.
type containerConfig struct {
	Hostname     string
	User         string
	Env          []string
	Image        string
	Entrypoint   []string
	Cmd          []string
	WorkingDir   string
	Labels       map[string]string
	OpenStdin    bool
	StdinOnce    bool
	AttachStdin  bool
	AttachStdout bool
	AttachStderr bool
	Tty          bool
	HostConfig   hostConfig
}

type hostConfig struct {
	NanoCPUs    int64 `json:"NanoCpus,omitempty"`
	Memory      int64 `json:",omitempty"`
	MemorySwap  int64 `json:",omitempty"`
	PidsLimit   int64 `json:",omitempty"`
	Mounts      []mount
	CapDrop     []string
	CapAdd      []string
	SecurityOpt []string
	NetworkMode string
	Runtime     string `json:",omitempty"`
	LogConfig   logConfig
	Init        bool
}

type mount struct {
	Type     string
	Source   string
	Target   string
	ReadOnly bool
}

type logConfig struct {
	Type   string
	Config map[string]string
}

// containerSpec is the container of a sandbox: the agent first, as root
// (it runs commands as the template's user), the resources, env and labels.
func (p *Provider) containerSpec(spec sbx.Spec, from origin) containerConfig {
	var env []string
	if from.imported {
		env = append(env, template.BaseEnv...)
	}
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+spec.Env[k])
	}
	args := []string{AgentMount, "agent", "--port", fmt.Sprint(apiv1.AgentPort), "--token-fd", "0"}
	for _, f := range [][2]string{{"--user", from.user}, {"--workdir", from.workdir}, {"--start", from.start}} {
		if f[1] != "" {
			args = append(args, f[0], f[1])
		}
	}
	var mounts []mount
	if p.cfg.Agent != "" {
		mounts = []mount{{Type: "bind", Source: p.cfg.Agent, Target: AgentMount, ReadOnly: true}}
	} else {
		args = p.cfg.Init
	}
	memory := spec.Resources.MemoryMB << 20
	c := containerConfig{
		Hostname: spec.ProviderSandboxID, User: "0", Env: env, Image: from.ref,
		Entrypoint: args, Cmd: []string{},
		Labels:    map[string]string{LabelSandbox: spec.SandboxID, LabelID: spec.ProviderSandboxID, LabelInstance: p.cfg.Name},
		OpenStdin: p.cfg.Agent != "", StdinOnce: p.cfg.Agent != "", AttachStdin: p.cfg.Agent != "",
		HostConfig: hostConfig{
			NanoCPUs: spec.Resources.MilliCPU * 1_000_000, Memory: memory, MemorySwap: memory, PidsLimit: maxPids,
			Mounts:  mounts,
			CapDrop: []string{"ALL"}, CapAdd: caps, SecurityOpt: []string{"no-new-privileges"},
			NetworkMode: p.cfg.Network, Runtime: p.cfg.Runtime,
			LogConfig: logConfig{Type: "json-file", Config: map[string]string{"max-size": "10m", "max-file": "2"}},
		},
	}
	return c
}
