package agent_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/agent"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testenv"
)

func TestToken(t *testing.T) {
	e := newEnv(t)
	get := func(path, tok string) (int, apiv1.Error) {
		req, _ := http.NewRequestWithContext(e.ctx, http.MethodGet, e.url+path, nil)
		if tok != "" {
			req.Header.Set(apiv1.AccessTokenHeader, tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var envelope apiv1.Error
		json.NewDecoder(resp.Body).Decode(&envelope)
		return resp.StatusCode, envelope
	}
	if code, _ := get("/health", ""); code != http.StatusOK {
		t.Errorf("/health without a token: %d", code)
	}
	for _, tok := range []string{"", "wrong", token + "x"} {
		if code, env := get("/commands", tok); code != http.StatusUnauthorized || env.Type != "unauthorized" {
			t.Errorf("token %q: %d %+v", tok, code, env)
		}
	}
	var health apiv1.HealthStatus
	e.call(http.MethodGet, "/ready", nil, http.StatusOK, &health)
	if health.Status != "ok" || health.Version == "" {
		t.Errorf("ready: %+v", health)
	}

	// Only serve rotates the token, from outside the sandbox: a request from
	// the agent's own machine (here loopback) is refused with the right
	// token too. (Rotation from serve is tested end to end, in e2e.)
	rotated := strings.Repeat("r", 40)
	if env := e.fail(http.MethodPost, "/token", apiv1.TokenRequest{Token: rotated}, http.StatusForbidden); !strings.Contains(env.Detail, "sbx serve only") {
		t.Errorf("rotation from inside: %+v", env)
	}
	if code, _ := get("/commands", rotated); code != http.StatusUnauthorized {
		t.Errorf("the token from inside works: %d", code)
	}
	if code, _ := get("/commands", token); code != http.StatusOK {
		t.Errorf("the token fails after a refused rotation: %d", code)
	}
	if code, env := get("/nowhere", token); code != http.StatusNotFound || env.Type != "not_found" {
		t.Errorf("unknown route: %d %+v", code, env)
	}
}

func TestNewNeedsToken(t *testing.T) {
	if _, err := agent.New(agent.Config{Token: "short", Workdir: t.TempDir()}); err == nil {
		t.Error("New took a short token")
	}
}

func TestStartCommand(t *testing.T) {
	dir := t.TempDir()
	a, err := agent.New(agent.Config{Token: token, Workdir: dir, Start: "echo 42; sleep 1000", Env: testenv.AgentEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	e := serve(t, a, dir)
	var info apiv1.CommandInfo
	e.call(http.MethodGet, "/commands/"+agent.StartTag, nil, http.StatusOK, &info)
	if !info.Running || info.Tag != agent.StartTag {
		t.Errorf("start command %+v", info)
	}
	if line := e.firstLine(agent.StartTag); line != 42 {
		t.Errorf("start command's output: %d", line)
	}
}

func TestCloseKillsCommands(t *testing.T) {
	dir := t.TempDir()
	a, err := agent.New(agent.Config{Token: token, Workdir: dir, Env: testenv.AgentEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	e := serve(t, a, dir)
	var info apiv1.CommandInfo
	e.call(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "sleep 1000 & echo $!; wait", Background: true}, http.StatusCreated, &info)
	sleeper := e.firstLine(strconv.Itoa(info.PID))
	a.Close()
	e.eventually("the command's child to die", func() bool { return gone(sleeper) })
	e.fail(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "true"}, http.StatusServiceUnavailable)
}

// serve's POST /token: a next token is taken beside the token until its
// first use makes it the only one; env and unset replace the environment
// commands start from.
func TestTokenNextAndEnv(t *testing.T) {
	dir := t.TempDir()
	a, err := agent.New(agent.Config{Token: token, Workdir: dir, Env: append(testenv.AgentEnv(t), "OLD=1"),
		Rotator: func(*http.Request) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	e := serve(t, a, dir)
	next := strings.Repeat("n", 40)
	status := func(tok string) int {
		req, _ := http.NewRequest(http.MethodGet, e.url+"/commands", nil)
		req.Header.Set(apiv1.AccessTokenHeader, tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	e.fail(http.MethodPost, "/token", apiv1.TokenRequest{Token: token, Next: "short"}, http.StatusBadRequest)
	e.call(http.MethodPost, "/token", apiv1.TokenRequest{Token: token, Next: next}, http.StatusNoContent, nil)
	if status(token) != http.StatusOK {
		t.Fatal("the token stopped working when a next one was offered")
	}
	if status(next) != http.StatusOK {
		t.Fatal("the next token is refused")
	}
	if status(token) != http.StatusUnauthorized {
		t.Error("the old token works after the next one's first use")
	}
	req, _ := json.Marshal(apiv1.TokenRequest{Token: next, Env: map[string]string{"NEW": "2"}, Unset: []string{"OLD"}})
	r, _ := http.NewRequest(http.MethodPost, e.url+"/token", bytes.NewReader(req))
	r.Header.Set(apiv1.AccessTokenHeader, next)
	r.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(r)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("env through /token: %v %v", resp, err)
	}
	resp.Body.Close()
	if status(next) != http.StatusOK {
		t.Fatal("the token after an env change")
	}
}
