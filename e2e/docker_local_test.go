package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/docker"
	"github.com/sbxdev/sbx/docker/dockertest"
	"github.com/sbxdev/sbx/internal/testtemplates"
)

// dockerServer starts the real sbx binary with the docker provider as its
// default, over the tests' Docker daemon (dockertest.Host), with an
// instance name of its own (its containers' names and labels) and the base
// template shared by every package's tests, imported into the daemon by
// the first create.
func dockerServer(t *testing.T) (*server, *dockerAPI) {
	t.Helper()
	host := dockertest.Host(t)
	templates, err := testtemplates.Base()
	if err != nil {
		t.Fatal(err)
	}
	name := "e2edk" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	s := startServer(t, serverOpts{bin: sbxBin, args: []string{"--provider", "docker", "--docker-host", host,
		"--templates-dir", templates.Dir, "--name", name, "--hibernate-after", "0"}})
	api := newDockerAPI(t, host, name)
	t.Cleanup(func() { // what a failed test leaves running
		for _, sb := range s.listAll("") {
			if sb.State == "running" || sb.State == "paused" || sb.State == "failed" {
				s.do("DELETE", "/api/v1/sandboxes/"+sb.ID, nil)
			}
		}
		for _, c := range api.containers() {
			api.do("DELETE", "/containers/"+c.ID+"?force=1", nil)
		}
	})
	return s, api
}

// dockerAPI is the test's own look at the daemon, through the docker
// provider's client of the Engine API.
type dockerAPI struct {
	t      *testing.T
	name   string // the serve instance's
	engine *docker.Engine
}

func newDockerAPI(t *testing.T, host, name string) *dockerAPI {
	e, err := docker.NewEngine(host)
	if err != nil {
		t.Fatal(err)
	}
	return &dockerAPI{t: t, name: name, engine: e}
}

// do sends method target (a path and query) with body as JSON, decodes a
// 2xx answer into out[0] when given, and answers the status.
func (d *dockerAPI) do(method, target string, body any, out ...any) int {
	d.t.Helper()
	path, query, _ := strings.Cut(target, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		d.t.Fatal(err)
	}
	var in io.Reader
	hdr := http.Header{}
	if body != nil {
		data, _ := json.Marshal(body)
		in = bytes.NewReader(data)
		hdr.Set("Content-Type", "application/json")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := d.engine.Request(ctx, method, path, q, in, hdr)
	if e, ok := errors.AsType[*docker.APIError](err); ok {
		return e.Status
	}
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	if len(out) > 0 {
		if err := json.NewDecoder(resp.Body).Decode(out[0]); err != nil {
			d.t.Fatal(err)
		}
	}
	return resp.StatusCode
}

type dockerContainer struct {
	ID     string `json:"Id"`
	State  string
	Labels map[string]string
}

// containers lists the instance's containers, of every state.
func (d *dockerAPI) containers() []dockerContainer {
	d.t.Helper()
	f, _ := json.Marshal(map[string][]string{"label": {docker.LabelInstance + "=" + d.name}})
	var out []dockerContainer
	if code := d.do("GET", "/containers/json?all=1&filters="+url.QueryEscape(string(f)), nil, &out); code != 200 {
		d.t.Fatalf("listing containers: %d", code)
	}
	return out
}

// state is the state of the container of provider sandbox id ("": none).
func (d *dockerAPI) state(id string) string {
	for _, c := range d.containers() {
		if c.Labels[docker.LabelID] == id {
			return c.State
		}
	}
	return ""
}

// The docker provider end to end: a sandbox is a container of the daemon
// whose agent serves commands and files through serve; pause freezes it
// with its processes; what docker cannot do is a 501 naming it; the CLI
// drives it as any; after serve is SIGKILLed and restarted, the running
// sandbox is adopted and usable and a container of the instance no row
// owns is removed; deletes leave no container behind.
func TestDockerSandboxes(t *testing.T) {
	s, d := dockerServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard
	defer cancel()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	sb, err := c.Create(ctx, "base", &client.CreateOptions{WaitReady: true, Timeout: time.Hour, MemoryMB: 256, EnvVars: map[string]string{"GREETING": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Data().Provider != "docker" {
		t.Errorf("provider = %q", sb.Data().Provider)
	}
	if st := d.state(sb.SandboxID()); st != "running" {
		t.Fatalf("the sandbox's container is %q", st)
	}

	// Commands and files through the agent, the container's first process.
	res, err := sb.Commands.Run(ctx, `echo out $GREETING; echo err >&2; tr '\0' ' ' < /proc/1/cmdline; id -un; exit 3`, nil)
	if err != nil || res.ExitCode != 3 || !strings.HasPrefix(res.Stdout, "out hello\n") || res.Stderr != "err\n" ||
		!strings.Contains(res.Stdout, "/.sbx/sbx agent") || !strings.HasSuffix(res.Stdout, "user\n") {
		t.Fatalf("run: %+v %v", res, err)
	}
	if _, err := sb.Files.Write(ctx, "/workspace/hello.txt", strings.NewReader("kept\n")); err != nil {
		t.Fatal(err)
	}
	if data, err := sb.Files.ReadBytes(ctx, "/workspace/hello.txt"); err != nil || string(data) != "kept\n" {
		t.Fatalf("read back: %q %v", data, err)
	}

	// Pause freezes the container and keeps a running process.
	sleeper, err := sb.Commands.Start(ctx, "sleep 100000", &client.CommandOptions{Tag: "sleeper"})
	if err != nil {
		t.Fatal(err)
	}
	var p apiv1.Sandbox
	s.call("POST", "/api/v1/sandboxes/"+sb.ID()+"/pause", map[string]any{}, http.StatusOK, &p)
	if p.State != "paused" || d.state(sb.SandboxID()) != "paused" {
		t.Fatalf("paused: %s, container %s", p.State, d.state(sb.SandboxID()))
	}
	s.call("POST", "/api/v1/sandboxes/"+sb.ID()+"/resume", map[string]any{}, http.StatusOK, &p)
	if p.State != "running" || d.state(sb.SandboxID()) != "running" {
		t.Fatalf("resumed: %s, container %s", p.State, d.state(sb.SandboxID()))
	}
	alive := fmt.Sprintf("kill -0 %d && cat /workspace/hello.txt", sleeper.PID())
	if res, err := sb.Commands.Run(ctx, alive, nil); err != nil || res.ExitCode != 0 || res.Stdout != "kept\n" {
		t.Fatalf("after resume: %+v %v", res, err)
	}

	// What docker cannot do is a 501 naming it.
	s.fail("POST", "/api/v1/sandboxes/"+sb.ID()+"/pause", map[string]any{"hibernate": true}, http.StatusNotImplemented, "provider docker cannot hibernate")
	s.fail("POST", "/api/v1/sandboxes/"+sb.ID()+"/snapshots", map[string]any{}, http.StatusNotImplemented, "provider docker")
	s.fail("POST", "/api/v1/sandboxes/"+sb.ID()+"/fork", map[string]any{"count": 1}, http.StatusNotImplemented, "provider docker")

	// The daemon's logs and stats.
	var m apiv1.Metrics
	s.call("GET", "/api/v1/sandboxes/"+sb.ID()+"/metrics", nil, http.StatusOK, &m)
	if m.CPUSeconds <= 0 || m.MemoryBytes <= 0 || m.Processes < 2 {
		t.Errorf("metrics: %+v", m)
	}
	var logs apiv1.LogPage
	s.call("GET", "/api/v1/sandboxes/"+sb.ID()+"/logs", nil, http.StatusOK, &logs)
	found := false
	for _, l := range logs.Items { // the agent's own, on the container's stderr
		found = found || (l.Source == "stderr" && strings.Contains(l.Line, "agent serving"))
	}
	if !found {
		t.Errorf("the logs lack the agent's line: %+v", logs.Items)
	}

	// The CLI.
	id := strings.SplitN(s.ok("sandbox", "create", "base", "--wait"), "\n", 2)[0]
	if out := s.ok("exec", id, "--", "sh", "-c", "echo cli > /workspace/cli.txt; hostname"); strings.TrimSpace(out) != id {
		t.Errorf("sbx exec: hostname %q, want %q", out, id)
	}
	local := filepath.Join(t.TempDir(), "up.txt")
	os.WriteFile(local, []byte("uploaded\n"), 0o644)
	s.ok("files", "put", id, "/workspace/up.txt", local)
	if out := s.ok("files", "cat", id, "/workspace/up.txt"); out != "uploaded\n" {
		t.Errorf("files cat: %q", out)
	}
	s.ok("sandbox", "pause", id)
	if st := d.state(id); st != "paused" {
		t.Errorf("after sbx sandbox pause the container is %q", st)
	}
	s.ok("sandbox", "resume", id)
	if out := s.ok("exec", id, "--", "cat", "/workspace/cli.txt"); out != "cli\n" {
		t.Errorf("after resume: %q", out)
	}
	s.ok("sandbox", "delete", id, "--yes")
	if st := d.state(id); st != "" {
		t.Errorf("after sbx sandbox delete the container is %q", st)
	}

	// A container of this instance that no row owns, as a crash between
	// the daemon's create and the ledger's would leave.
	orphan := "orphan" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	var images []struct{ RepoTags []string }
	d.do("GET", "/images/json", nil, &images)
	image := ""
	for _, img := range images {
		for _, tag := range img.RepoTags {
			if strings.HasPrefix(tag, docker.ImageRepo+"/base:") {
				image = tag
			}
		}
	}
	if image == "" {
		t.Fatalf("the daemon has no imported base: %+v", images)
	}
	var made struct {
		ID string `json:"Id"`
	}
	if code := d.do("POST", "/containers/create?name="+d.name+"-"+orphan, map[string]any{"Image": image, "Entrypoint": []string{"/bin/sleep", "infinity"},
		"Labels": map[string]string{docker.LabelInstance: d.name, docker.LabelID: orphan, docker.LabelSandbox: uuid.NewString()}}, &made); code != 201 {
		t.Fatalf("creating the orphan: %d", code)
	}
	d.do("POST", "/containers/"+made.ID+"/start", nil)

	// serve dies; the running sandbox stays and is adopted by the next serve.
	s.stop(syscall.SIGKILL)
	s.restart(serverOpts{bin: sbxBin, args: s.opts.args})
	if got := s.get(sb.ID()); got.State != "running" {
		t.Fatalf("after restart the sandbox is %s", got.State)
	}
	if st := d.state(orphan); st != "" {
		t.Errorf("reconcile left the orphan container (%s)", st)
	}
	again, err := c.Connect(ctx, sb.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := again.Commands.Run(ctx, alive, nil); err != nil || res.ExitCode != 0 || res.Stdout != "kept\n" {
		t.Fatalf("the adopted sandbox: %+v %v", res, err)
	}
	s.call("POST", "/api/v1/sandboxes/"+sb.ID()+"/pause", map[string]any{}, http.StatusOK, &p)
	s.call("POST", "/api/v1/sandboxes/"+sb.ID()+"/resume", map[string]any{}, http.StatusOK, &p)

	var k apiv1.Sandbox
	s.call("DELETE", "/api/v1/sandboxes/"+sb.ID(), nil, http.StatusOK, &k)
	if k.State != "killed" {
		t.Errorf("deleted: %s", k.State)
	}
	if left := d.containers(); len(left) != 0 {
		t.Errorf("containers left after the deletes: %+v", left)
	}
}
