package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/docker"
	"github.com/sbxdev/sbx/internal/agentcall"
)

// The docker contender is the docker provider, set up as serve sets it up
// (the bench's agent and template store, an instance name of the run's
// own so its containers are labelled apart), against `docker run` of the
// same image made through the Engine API as the docker CLI makes it
// (create, start), with the same agent as the first process: both are
// timed until the agent answers /ready, which is what a create with
// waitReady costs. The difference is sbx's own cost: the provider's look
// for the template's image, the attach that hands the agent its token, and
// the inspect after the start.

// DockerResult is the docker provider against the Engine API's `docker run`
// of the same image on the same daemon, measured in the same run.
type DockerResult struct {
	Host    string `json:"host"`
	Image   string `json:"image,omitempty"`
	Skipped string `json:"skipped,omitempty"` // why it was not measured

	Create    Stat  `json:"create"` // Create to the agent answering /ready
	Run       Stat  `json:"run"`    // create and start to the same agent answering
	Pause     *Stat `json:"pause,omitempty"`
	Resume    *Stat `json:"resume,omitempty"`
	RunPause  *Stat `json:"run_pause,omitempty"`  // POST /containers/{id}/pause
	RunResume *Stat `json:"run_resume,omitempty"` // POST /containers/{id}/unpause
}

// benchLabel marks the baseline's containers of a run: its value is the
// run's instance name, as the provider's label its sandboxes'.
const benchLabel = "dev.sbx.bench"

// dockerLab is the docker provider of a run and its baseline's client of
// the same daemon.
type dockerLab struct {
	host, name string // the daemon; the run's instance name
	image      string // the template's image, sbx-template/<name>:<version>
	madeImage  bool   // the run imported it: it removes it at the end
	p          *docker.Provider
	api        *docker.Engine // the baseline's, the provider's own client of the daemon
	agent      string
	token      string // the baseline's agent's, in tokenFile
	tokenFile  string
	args       []string // the agent's flags but its token's, as the provider passes them
}

// openDocker returns the docker contender when a daemon answers at host,
// else why not.
func (l *lab) openDocker() (*dockerLab, string) {
	host := l.cfg.DockerHost
	name := l.cfg.Name + "-" + l.tag
	p, err := docker.New(docker.Config{Host: host, Name: name, Agent: l.cfg.Agent, Templates: l.cfg.Templates})
	if err != nil {
		return nil, err.Error()
	}
	api, err := docker.NewEngine(host)
	if err != nil {
		return nil, err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Check(ctx); err != nil {
		return nil, fmt.Sprintf("no Docker daemon answers at %s", host)
	}
	d := &dockerLab{host: host, name: name, p: p, api: api, agent: l.cfg.Agent,
		image: docker.ImageRepo + "/" + l.tmpl.Name + ":" + l.tmpl.Version, token: rand.Text() + rand.Text(),
		tokenFile: filepath.Join(l.dir, "docker-token")}
	d.args = []string{docker.AgentMount, "agent", "--port", strconv.Itoa(apiv1.AgentPort)}
	for _, f := range [][2]string{{"--user", l.tmpl.User}, {"--workdir", l.tmpl.Workdir}, {"--start", l.tmpl.StartCmd}} {
		if f[1] != "" {
			d.args = append(d.args, f[0], f[1])
		}
	}
	if err := os.WriteFile(d.tokenFile, []byte(d.token), 0o600); err != nil {
		return nil, err.Error()
	}
	return d, ""
}

// warm imports the template as the provider's image (unless the daemon
// has it) and starts and removes one sandbox and one baseline container,
// untimed, as the first create of every contender warms its caches.
func (d *dockerLab) warm(ctx context.Context, l *lab) error {
	err := d.api.Call(ctx, "GET", "/images/"+url.PathEscape(d.image)+"/json", nil, nil, nil)
	if docker.IsStatus(err, 404) {
		d.madeImage = true
	} else if err != nil {
		return err
	}
	for _, c := range d.contenders(l) {
		id := l.id(c.name)
		if _, err := c.create(ctx, id); err != nil {
			return fmt.Errorf("%s warm-up create %s: %w", c.name, id, err)
		}
		if err := c.remove(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// contenders are the provider's create and the baseline's, for the create phase.
func (d *dockerLab) contenders(l *lab) []*contender {
	return []*contender{
		{name: "sbx docker", create: func(ctx context.Context, id string) (time.Duration, error) {
			_, dur, err := d.create(ctx, l.cfg.Template, id)
			return dur, err
		}, remove: func(ctx context.Context, id string) error { return d.p.Kill(ctx, sbx.IDHandle(id)) }},
		{name: "docker run", create: d.run, remove: d.remove},
	}
}

// create creates a sandbox through the provider and times it to its
// agent's answer.
func (d *dockerLab) create(ctx context.Context, tmpl, id string) (sbx.Handle, time.Duration, error) {
	spec := sbx.Spec{SandboxID: uuid.NewString(), ProviderSandboxID: id, TemplateID: tmpl,
		Resources: sbx.Resources{MilliCPU: milliCPU, MemoryMB: memoryMB}, AccessToken: rand.Text() + rand.Text()}
	start := time.Now()
	in, err := d.p.Create(ctx, spec)
	if err != nil {
		return in.Handle, 0, err
	}
	addr, err := d.p.AgentAddr(ctx, in.Handle)
	if err == nil {
		err = ready(ctx, addr, spec.AccessToken)
	}
	return in.Handle, time.Since(start), err
}

// run is the baseline: `docker run -d` of the provider's image as the
// docker CLI makes it (POST /containers/create, then /start), with the
// provider's limits, network, capabilities and agent, which reads its
// token from a bind-mounted file (through `sh -c exec … 3<file`) rather
// than from an attach; then the inspect that finds its address, and the
// same wait for the agent.
func (d *dockerLab) run(ctx context.Context, id string) (time.Duration, error) {
	var args []string
	for _, a := range append(d.args, "--token-fd", "3") {
		args = append(args, shellQuote(a))
	}
	memory := int64(memoryMB) << 20
	body := map[string]any{
		"Hostname": id, "User": "0", "Image": d.image, "Cmd": []string{},
		"Env":        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "TERM=xterm"},
		"Entrypoint": []string{"/bin/sh", "-c", "exec " + strings.Join(args, " ") + " 3</.sbx/token"},
		"Labels":     map[string]string{benchLabel: d.name},
		"HostConfig": map[string]any{
			"NanoCpus": milliCPU * 1_000_000, "Memory": memory, "MemorySwap": memory, "PidsLimit": 2048,
			"Mounts": []map[string]any{
				{"Type": "bind", "Source": d.agent, "Target": docker.AgentMount, "ReadOnly": true},
				{"Type": "bind", "Source": d.tokenFile, "Target": "/.sbx/token", "ReadOnly": true},
			},
			"CapDrop": []string{"ALL"}, "CapAdd": []string{"CAP_AUDIT_WRITE", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER",
				"CAP_FSETID", "CAP_KILL", "CAP_NET_BIND_SERVICE", "CAP_SETGID", "CAP_SETUID"},
			"SecurityOpt": []string{"no-new-privileges"}, "NetworkMode": "bridge",
			"LogConfig": map[string]any{"Type": "json-file", "Config": map[string]string{"max-size": "10m", "max-file": "2"}},
		},
	}
	start := time.Now()
	var created struct {
		ID string `json:"Id"`
	}
	if err := d.api.Call(ctx, "POST", "/containers/create", url.Values{"name": {id}}, body, &created); err != nil {
		return 0, err
	}
	if err := d.api.Call(ctx, "POST", "/containers/"+created.ID+"/start", nil, nil, nil); err != nil {
		return 0, err
	}
	var c struct {
		NetworkSettings struct{ IPAddress string }
	}
	if err := d.api.Call(ctx, "GET", "/containers/"+created.ID+"/json", nil, nil, &c); err != nil {
		return 0, err
	}
	if c.NetworkSettings.IPAddress == "" {
		return 0, fmt.Errorf("container %s has no address on the bridge", id)
	}
	err := ready(ctx, net.JoinHostPort(c.NetworkSettings.IPAddress, strconv.Itoa(apiv1.AgentPort)), d.token)
	took := time.Since(start)
	if err != nil {
		var c struct{ State struct{ Status string } }
		d.api.Call(context.WithoutCancel(ctx), "GET", "/containers/"+created.ID+"/json", nil, nil, &c)
		var logs []byte
		if resp, lerr := d.api.Request(context.WithoutCancel(ctx), "GET", "/containers/"+created.ID+"/logs", url.Values{"stdout": {"1"}, "stderr": {"1"}, "tail": {"3"}}, nil, nil); lerr == nil {
			logs, _ = io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
		}
		err = fmt.Errorf("%w (the container is %s; its output ends %q)", err, c.State.Status, logs)
	}
	return took, err
}

// ready waits, at most a minute, for the agent at addr to answer /ready,
// as a create with waitReady does.
func ready(ctx context.Context, addr, token string) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return agentcall.Ready(ctx, addr, token)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// remove removes a baseline container.
func (d *dockerLab) remove(ctx context.Context, id string) error {
	err := d.api.Call(ctx, "DELETE", "/containers/"+url.PathEscape(id), url.Values{"force": {"1"}, "v": {"1"}}, nil, nil)
	if docker.IsStatus(err, 404) {
		return nil
	}
	return err
}

// dockerPause is the docker contender of the pause phase: Pause and
// Resume of a sandbox against POST pause and unpause of a baseline
// container, each one's times.
type dockerPause struct {
	d                                  *dockerLab
	h                                  sbx.Handle
	id, rid                            string
	pause, resume, runPause, runResume []time.Duration
}

// startPause starts the pause phase's sandbox and baseline container; its
// close removes them.
func (d *dockerLab) startPause(ctx context.Context, l *lab) (*dockerPause, error) {
	dp := &dockerPause{d: d, id: l.id("p"), rid: l.id("q")}
	var err error
	if dp.h, _, err = d.create(ctx, l.cfg.Template, dp.id); err != nil {
		return dp, fmt.Errorf("sbx docker create %s: %w", dp.id, err)
	}
	if _, err := d.run(ctx, dp.rid); err != nil {
		return dp, fmt.Errorf("docker run %s: %w", dp.rid, err)
	}
	return dp, nil
}

func (dp *dockerPause) close(ctx context.Context) {
	dp.d.p.Kill(ctx, sbx.IDHandle(dp.id))
	dp.d.remove(ctx, dp.rid)
}

// steps are the phase's two turns: the provider's, then the baseline's.
func (dp *dockerPause) steps(ctx context.Context) []func() error {
	path := "/containers/" + url.PathEscape(dp.rid)
	call := func(action string) func() error {
		return func() error { return dp.d.api.Call(ctx, "POST", path+"/"+action, nil, nil, nil) }
	}
	return []func() error{
		func() error {
			return both(&dp.pause, func() error { return dp.d.p.Pause(ctx, dp.h) },
				&dp.resume, func() error { _, err := dp.d.p.Resume(ctx, dp.h); return err })
		},
		func() error { return both(&dp.runPause, call("pause"), &dp.runResume, call("unpause")) },
	}
}

// both times f into fs, then, unless it failed, g into gs.
func both(fs *[]time.Duration, f func() error, gs *[]time.Duration, g func() error) error {
	for _, s := range []struct {
		to *[]time.Duration
		f  func() error
	}{{fs, f}, {gs, g}} {
		start := time.Now()
		err := s.f()
		*s.to = append(*s.to, time.Since(start))
		if err != nil {
			return err
		}
	}
	return nil
}

// last is the latest round's times, for the progress line.
func (dp *dockerPause) last() string {
	n := len(dp.runResume) - 1
	return fmt.Sprintf("sbx docker pause %s resume %s, docker pause %s unpause %s",
		round(dp.pause[n]), round(dp.resume[n]), round(dp.runPause[n]), round(dp.runResume[n]))
}

// fill puts the times into res.
func (dp *dockerPause) fill(res *DockerResult) {
	stat := func(s []time.Duration) *Stat { st := NewStat(s); return &st }
	res.Pause, res.Resume, res.RunPause, res.RunResume = stat(dp.pause), stat(dp.resume), stat(dp.runPause), stat(dp.runResume)
}

// removeAll removes the provider's sandboxes and the baseline's containers
// of the run, and the template's image when the run imported it.
func (d *dockerLab) removeAll(ctx context.Context) error {
	var errs []error
	list, err := d.p.List(ctx)
	errs = append(errs, err)
	for _, in := range list {
		errs = append(errs, d.p.Kill(ctx, in.Handle))
	}
	var cs []struct {
		ID string `json:"Id"`
	}
	f := `{"label":["` + benchLabel + "=" + d.name + `"]}`
	err = d.api.Call(ctx, "GET", "/containers/json", url.Values{"all": {"1"}, "filters": {f}}, nil, &cs)
	errs = append(errs, err)
	for _, c := range cs {
		errs = append(errs, d.remove(ctx, c.ID))
	}
	if d.madeImage {
		err := d.api.Call(ctx, "DELETE", "/images/"+url.PathEscape(d.image), nil, nil, nil)
		if docker.IsStatus(err, 409) {
			err = fmt.Errorf("the run's image %s is left: another container uses it: %w", d.image, err)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// rows are the docker contender's lines of the table, against the goal:
// a create ≤ 1.1× `docker run` of the same image.
func (d *DockerResult) rows() []Row {
	if d.Skipped != "" {
		return []Row{{"sbx docker create→ready p50", "-", "docker: " + d.Skipped, 0, "", nil}}
	}
	if d.Create.N == 0 {
		return nil // the run stopped before
	}
	t, met := maxRatio(Ratio(d.Create.P50, d.Run.P50), 1.1)
	rows := []Row{
		{"sbx docker create→ready p50", msText(d.Create.P50), "docker run (API) " + msText(d.Run.P50), Ratio(d.Create.P50, d.Run.P50), t + " docker run", met},
		{"sbx docker create→ready p95", msText(d.Create.P95), "docker run (API) " + msText(d.Run.P95), Ratio(d.Create.P95, d.Run.P95), "", nil},
	}
	if d.Pause != nil && d.RunPause != nil {
		rows = append(rows, Row{"sbx docker pause p50", msText(d.Pause.P50), "docker pause (API) " + msText(d.RunPause.P50), Ratio(d.Pause.P50, d.RunPause.P50), "", nil})
	}
	if d.Resume != nil && d.RunResume != nil {
		rows = append(rows, Row{"sbx docker resume p50", msText(d.Resume.P50), "docker unpause (API) " + msText(d.RunResume.P50), Ratio(d.Resume.P50, d.RunResume.P50), "", nil})
	}
	return rows
}
