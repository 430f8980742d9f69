package bench

import (
	"context"
	"errors"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sbxdev/sbx/docker"
	"github.com/sbxdev/sbx/docker/dockertest"
	"github.com/sbxdev/sbx/internal/agenttest"
	"github.com/sbxdev/sbx/internal/k8stest"
	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/internal/testtemplates"
	"github.com/sbxdev/sbx/template"
)

// testConfig is a short lifecycle run with its own table, cgroup parent and
// pool, apart from other packages' tests and from a real `sbx bench`.
func testConfig(t *testing.T) Config {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root")
	}
	runscPath := os.Getenv("SBX_RUNSC")
	if runscPath == "" {
		testenv.Missing(t, "$SBX_RUNSC (scripts/test.sh builds runsc and sets it)")
	}
	for _, cmd := range []string{"debootstrap", "nft", "ip"} {
		if _, err := exec.LookPath(cmd); err != nil {
			testenv.Missing(t, cmd)
		}
	}
	in := testenv.NewInstance(t) // a name and pool apart from any serve's or other test's on this host
	return Config{Templates: baseTemplate(t), Runsc: runscPath, Agent: agentBinary(t), N: 2, Rounds: 1, SizesMB: []int{64}, SkipIdle: true,
		Name: in.Name, Pool: in.Pool, Progress: testWriter{t}}
}

// baseTemplate is the base template shared by the tests of every package.
func baseTemplate(t *testing.T) template.Store {
	s, err := testtemplates.Base()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sbxBinary builds the sbx binary once, for the sandboxes' agent.
var sbxBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "sbx-bench-test-bin-")
	if err != nil {
		return "", err
	}
	return testenv.BuildSbx(dir)
})

func agentBinary(t *testing.T) string {
	bin, err := sbxBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func TestMain(m *testing.M) {
	code := k8stest.Around(m.Run) // the kubernetes part's tests may start a cluster: it is stopped
	if bin, err := sbxBinary(); err == nil {
		os.RemoveAll(filepath.Dir(bin))
	}
	os.Exit(code)
}

// The exec bench runs a real serve whose sandbox's agent it drives through
// the API, against runsc exec of the same work, and leaves nothing behind.
func TestExecMeasuresAndLeavesNothing(t *testing.T) {
	cfg := testConfig(t)
	cfg.Calls, cfg.OutputMB, cfg.FileMB = 5, 4, 4
	r, err := Exec(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	x := r.Exec
	if x == nil || x.RoundTrip.Local.N != 5 || x.RoundTrip.Local.P50 <= 0 || x.RoundTrip.Runsc.P50 <= 0 {
		t.Fatalf("round trip: %+v", x)
	}
	if x.Spawn.N != 5 || x.Spawn.P50 <= 0 {
		t.Errorf("true run inside the sandbox: %+v", x.Spawn)
	}
	for _, tr := range []Transfer{x.Output, x.Upload, x.Download} {
		if tr.MB != 4 || tr.Local.N != 1 || tr.Local.P50 <= 0 || tr.Runsc.P50 <= 0 {
			t.Errorf("transfer: %+v", tr)
		}
	}
	if len(r.Rows) != 6 || r.Rows[0].Met == nil || r.Rows[3].Met == nil {
		t.Errorf("rows: %+v", r.Rows)
	}
	checkNothingLeft(t, cfg.Name)
}

func TestLifecycleMeasuresAndLeavesNothing(t *testing.T) {
	cfg := testConfig(t)
	cfg.DockerHost = dockertest.Host(t) // the docker provider against docker run
	e2bAPI := agenttest.Serve(t)        // the e2b provider against direct calls of an E2B API
	cfg.E2B = E2BConfig{APIURL: e2bAPI.URL + "/e2b", APIKey: e2bAPI.Key, SandboxURL: e2bAPI.URL}
	r, err := Lifecycle(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Create == nil || r.Create.Local.N != 2 || r.Create.Local.P50 <= 0 || r.Create.Runsc.P50 <= 0 {
		t.Errorf("create: %+v", r.Create)
	}
	if r.Pause == nil || r.Pause.Pause.P50 <= 0 || r.Pause.Resume.P50 <= 0 {
		t.Errorf("pause: %+v", r.Pause)
	}
	if len(r.Hibernate) != 1 || r.Hibernate[0].Wake.P50 <= 0 || r.Hibernate[0].CgroupMB < 64 {
		t.Errorf("hibernate: %+v", r.Hibernate)
	}
	if d := r.Docker; d == nil || d.Skipped != "" || d.Create.N != 2 || d.Create.P50 <= 0 || d.Run.P50 <= 0 ||
		d.Pause == nil || d.Pause.P50 <= 0 || d.RunResume == nil || d.RunResume.P50 <= 0 {
		t.Errorf("docker: %+v", r.Docker)
	}
	if e := r.E2BProvider; e == nil || e.Skipped != "" || e.Create.N != 2 || e.Create.P50 <= 0 || e.Direct.P50 <= 0 ||
		e.Pause == nil || e.Pause.P50 <= 0 || e.DirectResume == nil || e.DirectResume.P50 <= 0 {
		t.Errorf("e2b: %+v", r.E2BProvider)
	}
	if len(r.Idle) != 0 || len(r.Rows) == 0 {
		t.Errorf("idle %+v, rows %+v", r.Idle, r.Rows)
	}
	checkNothingLeft(t, cfg.Name)
	checkNoContainersLeft(t, cfg.DockerHost, cfg.Name)
	if left, err := e2bAPI.Provider.List(context.Background()); err != nil || len(left) != 0 {
		t.Errorf("left on the E2B API: %+v %v", left, err)
	}
}

// checkNoContainersLeft fails when the daemon at host holds a container of
// a run named name: the provider's or the baseline's.
func checkNoContainersLeft(t *testing.T, host, name string) {
	t.Helper()
	api, err := docker.NewEngine(host)
	if err != nil {
		t.Fatal(err)
	}
	var cs []struct {
		Names  []string
		Labels map[string]string
	}
	if err := api.Call(context.Background(), "GET", "/containers/json", url.Values{"all": {"1"}}, nil, &cs); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if strings.HasPrefix(c.Labels[docker.LabelInstance], name+"-") || strings.HasPrefix(c.Labels[benchLabel], name+"-") {
			t.Errorf("container left: %v %v", c.Names, c.Labels)
		}
	}
}

// A cancelled run (Ctrl-C) stops and still removes what it made.
func TestLifecycleCancelledCleansUp(t *testing.T) {
	cfg := testConfig(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg.Progress = cancelOn{"pause 1/", cancel, testWriter{t}}
	_, err := Lifecycle(ctx, cfg)
	if err == nil {
		t.Fatal("a cancelled run reported no error")
	}
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "\n") {
		t.Errorf("a cancelled run: %v; want only the cancellation", err)
	}
	checkNothingLeft(t, cfg.Name)
}

// cancelOn cancels when a progress line contains s.
type cancelOn struct {
	s      string
	cancel func()
	w      io.Writer
}

func (c cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.s) {
		c.cancel()
	}
	return c.w.Write(p)
}

// checkNothingLeft fails when a run named name left a cgroup, a network
// namespace, an nftables table or a runsc process behind.
func checkNothingLeft(t *testing.T, name string) {
	t.Helper()
	for _, pattern := range []string{"/sys/fs/cgroup/*/" + name, "/sys/fs/cgroup/*/" + name + "raw", "/run/netns/" + name + "-*"} {
		if left, _ := filepath.Glob(pattern); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	}
	if out, _ := exec.Command("nft", "list", "table", "inet", name).CombinedOutput(); !strings.Contains(string(out), "No such file") {
		t.Errorf("the nftables table %s is left: %s", name, out)
	}
	if pids := pidsNaming(os.TempDir() + "/sbx-bench-"); len(pids) > 0 {
		t.Errorf("processes left: %v", pids)
	}
}
