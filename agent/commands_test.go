package agent_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/agent"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testenv"
)

func TestCommandExitCodeAndStreams(t *testing.T) {
	e := newEnv(t)
	res := e.run(apiv1.StartCommandRequest{Cmd: "echo out; echo err >&2; exit 3"})
	if res.stdout != "out\n" || res.stderr != "err\n" {
		t.Errorf("stdout %q, stderr %q", res.stdout, res.stderr)
	}
	if res.end.ExitCode == nil || *res.end.ExitCode != 3 || res.end.Signal != "" || res.end.Error != "" {
		t.Errorf("end %+v, want exit 3", res.end)
	}
}

func TestCommandArgsEnvCwd(t *testing.T) {
	t.Setenv(agent.TokenEnv, "must-not-leak")
	t.Setenv("FROM_AGENT", "inherited")
	e := newEnv(t)
	e.call(http.MethodPost, "/files/mkdir", apiv1.PathRequest{Path: "sub"}, http.StatusCreated, nil)
	res := e.run(apiv1.StartCommandRequest{
		Args: []string{"sh", "-c", `echo "$FOO $FROM_AGENT"; pwd; echo "token=$SBX_ACCESS_TOKEN"`},
		Env:  map[string]string{"FOO": "bar"}, Cwd: "sub",
	})
	if want := "bar inherited\n" + e.dir + "/sub\ntoken=\n"; res.stdout != want {
		t.Errorf("stdout %q, want %q", res.stdout, want)
	}
	e.fail(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "true", Cwd: "missing"}, http.StatusBadRequest)
	e.fail(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "true", Args: []string{"true"}}, http.StatusBadRequest)
	e.fail(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "true", Tag: "bad tag"}, http.StatusBadRequest)
	e.fail(http.MethodPost, "/commands", map[string]any{"cmd": "true", "timeoutMs": 5}, http.StatusBadRequest)
}

func TestCommandUser(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.Missing(t, "root, to switch users")
	}
	e := newEnv(t)
	res := e.run(apiv1.StartCommandRequest{Cmd: "id -u; echo $USER $HOME", User: "nobody", Cwd: "/"})
	if res.stdout != "65534\nnobody /nonexistent\n" {
		t.Errorf("stdout %q", res.stdout)
	}
	res = e.run(apiv1.StartCommandRequest{Args: []string{"id", "-u"}, User: "65534", Cwd: "/"})
	if res.stdout != "65534\n" {
		t.Errorf("stdout %q", res.stdout)
	}
	e.fail(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "true", User: "no-such-user"}, http.StatusBadRequest)
}

// A command run as the agent's own user keeps the agent's HOME, and its login
// shell reads the profile there.
func TestCommandHome(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(home+"/.profile", []byte("export FROM_PROFILE=yes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Token: token, Workdir: dir, Env: append(os.Environ(), "HOME="+home)})
	if err != nil {
		t.Fatal(err)
	}
	e := serve(t, a, dir)
	if res := e.run(apiv1.StartCommandRequest{Cmd: "echo $HOME $FROM_PROFILE"}); res.stdout != home+" yes\n" {
		t.Errorf("stdout %q, want %q", res.stdout, home+" yes\n")
	}
}

func TestCommandStdin(t *testing.T) {
	e := newEnv(t)
	if res := e.run(apiv1.StartCommandRequest{Cmd: "cat; echo done"}); res.stdout != "done\n" {
		t.Errorf("without stdin: %q", res.stdout)
	}
	var info apiv1.CommandInfo
	e.call(http.MethodPost, "/commands", apiv1.StartCommandRequest{Args: []string{"cat"}, Stdin: true, Background: true}, http.StatusCreated, &info)
	ref := strconv.Itoa(info.PID)
	e.call(http.MethodPost, "/commands/"+ref+"/stdin", strings.NewReader("hello "), http.StatusNoContent, nil)
	e.call(http.MethodPost, "/commands/"+ref+"/stdin", strings.NewReader("world"), http.StatusNoContent, nil)
	e.call(http.MethodDelete, "/commands/"+ref+"/stdin", nil, http.StatusNoContent, nil)
	res := e.follow(ref)
	if res.stdout != "hello world" || *res.end.ExitCode != 0 {
		t.Errorf("stdout %q, end %+v", res.stdout, res.end)
	}
	e.fail(http.MethodPost, "/commands/"+ref+"/stdin", strings.NewReader("late"), http.StatusConflict)
}

func TestCommandKillReachesGrandchild(t *testing.T) {
	e := newEnv(t)
	var info apiv1.CommandInfo
	e.call(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "sleep 1000 & echo $!; wait", Background: true}, http.StatusCreated, &info)
	sleeper := e.firstLine(strconv.Itoa(info.PID))
	e.call(http.MethodDelete, "/commands/"+strconv.Itoa(info.PID), nil, http.StatusOK, &info)
	if info.Running || info.ExitCode == nil || *info.ExitCode != -1 || info.Signal != "KILL" {
		t.Errorf("after kill: %+v", info)
	}
	e.eventually("the grandchild to die", func() bool { return gone(sleeper) })
	res := e.follow(strconv.Itoa(info.PID))
	if res.end.Signal != "KILL" || res.end.Error != "killed" {
		t.Errorf("end %+v", res.end)
	}
}

// firstLine reads a command's stream until its first line of stdout, a number.
func (e *env) firstLine(ref string) int {
	e.t.Helper()
	resp := e.request(e.ctx, http.MethodGet, "/commands/"+ref+"/stream", nil)
	defer resp.Body.Close()
	var line string
	eachEvent(resp.Body, func(ev apiv1.CommandEvent) bool {
		line += string(ev.Data)
		return !strings.Contains(line, "\n")
	})
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		e.t.Fatalf("first line %q: %v", line, err)
	}
	return n
}

func TestCommandTimeout(t *testing.T) {
	e := newEnv(t)
	res := e.run(apiv1.StartCommandRequest{Cmd: "echo started; sleep 1000", Timeout: 1})
	if res.stdout != "started\n" || res.end.Signal != "KILL" || !strings.Contains(res.end.Error, "timed out") {
		t.Errorf("stdout %q, end %+v", res.stdout, res.end)
	}
}

func TestCommandBackgroundReconnectByTag(t *testing.T) {
	e := newEnv(t)
	req := apiv1.StartCommandRequest{Cmd: `echo one; read line; echo "got $line"`, Tag: "job", Stdin: true, Background: true}
	var info apiv1.CommandInfo
	e.call(http.MethodPost, "/commands", req, http.StatusCreated, &info)
	if info.Tag != "job" || !info.Running || info.Cwd != e.dir {
		t.Errorf("started %+v", info)
	}
	e.fail(http.MethodPost, "/commands", req, http.StatusConflict) // the tag is taken

	// A first client reads the first line and goes away.
	resp := e.request(e.ctx, http.MethodGet, "/commands/job/stream", nil)
	var first string
	eachEvent(resp.Body, func(ev apiv1.CommandEvent) bool {
		first += string(ev.Data)
		return first != "one\n"
	})
	resp.Body.Close()

	// A second one gets the output so far, then live, then the end.
	resp = e.request(e.ctx, http.MethodGet, "/commands/job/stream", nil)
	defer resp.Body.Close()
	var out string
	var end apiv1.CommandEvent
	eachEvent(resp.Body, func(ev apiv1.CommandEvent) bool {
		out += string(ev.Data)
		if out == "one\n" && ev.Type == "stdout" {
			e.call(http.MethodPost, "/commands/job/stdin", strings.NewReader("two\n"), http.StatusNoContent, nil)
		}
		end = ev
		return true
	})
	if out != "one\ngot two\n" || end.Type != "end" || *end.ExitCode != 0 {
		t.Errorf("reconnected: %q, %+v", out, end)
	}
	e.call(http.MethodGet, "/commands/job", nil, http.StatusOK, &info)
	if info.Running || info.ExitCode == nil || *info.ExitCode != 0 || info.EndedAt == nil {
		t.Errorf("ended: %+v", info)
	}
	e.call(http.MethodPost, "/commands", req, http.StatusCreated, &info) // the tag is free again
	e.call(http.MethodDelete, "/commands/job", nil, http.StatusOK, nil)
}

func TestCommandList(t *testing.T) {
	e := newEnv(t)
	var a, b apiv1.CommandInfo
	e.call(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "sleep 1000", Tag: "a", Background: true}, http.StatusCreated, &a)
	e.call(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "sleep 1000", Tag: "b", Background: true}, http.StatusCreated, &b)
	e.call(http.MethodDelete, "/commands/b", nil, http.StatusOK, nil)
	var list apiv1.CommandList
	e.call(http.MethodGet, "/commands", nil, http.StatusOK, &list)
	byTag := map[string]apiv1.CommandInfo{}
	for _, c := range list.Items {
		byTag[c.Tag] = c
	}
	if c := byTag["a"]; !c.Running || c.PID != a.PID || c.Cmd != "sleep 1000" {
		t.Errorf("a: %+v", c)
	}
	if c := byTag["b"]; c.Running || c.ExitCode == nil || *c.ExitCode != -1 || c.Signal != "KILL" {
		t.Errorf("b: %+v", c)
	}
	e.fail(http.MethodGet, "/commands/nope", nil, http.StatusNotFound)
	e.fail(http.MethodGet, "/commands/999999999", nil, http.StatusNotFound)
}

func TestCommandSignal(t *testing.T) {
	e := newEnv(t)
	var info apiv1.CommandInfo
	script := `trap 'echo got TERM; exit 7' TERM; echo 1; while :; do sleep 0.05; done`
	e.call(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: script, Tag: "trap", Background: true}, http.StatusCreated, &info)
	e.firstLine("trap") // the trap is set
	e.fail(http.MethodPost, "/commands/trap/signal", apiv1.SignalRequest{Signal: "NOPE"}, http.StatusBadRequest)
	e.call(http.MethodPost, "/commands/trap/signal", apiv1.SignalRequest{Signal: "TERM"}, http.StatusOK, nil)
	res := e.follow("trap")
	if !strings.HasSuffix(res.stdout, "got TERM\n") || *res.end.ExitCode != 7 {
		t.Errorf("stdout %q, end %+v", res.stdout, res.end)
	}
	e.fail(http.MethodPost, "/commands/trap/signal", apiv1.SignalRequest{Signal: "15"}, http.StatusConflict)
}

func TestCommandLateReaderSeesStart(t *testing.T) {
	e := newEnv(t)
	var info apiv1.CommandInfo
	e.call(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "echo hi", Tag: "late", Background: true}, http.StatusCreated, &info)
	e.eventually("the command to end", func() bool {
		e.call(http.MethodGet, "/commands/late", nil, http.StatusOK, &info)
		return !info.Running
	})
	res := e.follow("late")
	if res.events[0].PID != info.PID || res.events[0].Tag != "late" || res.stdout != "hi\n" || *res.end.ExitCode != 0 {
		t.Errorf("late stream %+v", res.events)
	}
}

func TestCommandAttachedReaderGetsEveryByte(t *testing.T) {
	e := newEnv(t)
	const n = 100_000_000
	start := time.Now()
	resp := e.request(e.ctx, http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "head -c 100000000 /dev/zero"})
	defer resp.Body.Close()
	var got, zeros int
	var end apiv1.CommandEvent
	err := eachEvent(resp.Body, func(ev apiv1.CommandEvent) bool {
		got += len(ev.Data)
		zeros += bytes.Count(ev.Data, []byte{0})
		end = ev
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != n || zeros != n || end.Type != "end" || *end.ExitCode != 0 {
		t.Fatalf("got %d bytes (%d zeros), end %+v; want %d", got, zeros, end, n)
	}
	t.Logf("%d MB in %v: %.0f MB/s", n/1_000_000, time.Since(start), n/1e6/time.Since(start).Seconds())
}

func TestCommandOutlivesItsClient(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(e.ctx)
	req := apiv1.StartCommandRequest{Cmd: `read line; echo "got $line"`, Tag: "fg", Stdin: true}
	resp := e.request(ctx, http.MethodPost, "/commands", req)
	eachEvent(resp.Body, func(ev apiv1.CommandEvent) bool { return ev.Type != "start" })
	cancel() // the foreground client goes away mid-command
	resp.Body.Close()
	e.call(http.MethodPost, "/commands/fg/stdin", strings.NewReader("x\n"), http.StatusNoContent, nil)
	if res := e.follow("fg"); res.stdout != "got x\n" || *res.end.ExitCode != 0 {
		t.Errorf("after its client left: %q, %+v", res.stdout, res.end)
	}
}
