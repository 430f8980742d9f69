package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/internal/agenttest"
)

// serve's proxy to a real agent, through the whole stack (agenttest).

// hangGuard bounds what a broken proxy could make a test wait for; nothing
// waits this long when it works.
const hangGuard = time.Minute

func guarded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

// newSandbox serves the stack and makes a running sandbox in it.
func newSandbox(t *testing.T) (*agenttest.Stack, *client.Client, *client.Sandbox) {
	t.Helper()
	s := agenttest.Serve(t)
	c := client.New(client.Options{URL: s.URL, APIKey: s.Key})
	sb, err := c.Create(guarded(t), "base", &client.CreateOptions{WaitReady: true})
	if err != nil {
		t.Fatal(err)
	}
	return s, c, sb
}

// rawConn is a keep-alive HTTP/1.1 connection on which a test writes its
// requests itself: nothing cleans or follows anything.
type rawConn struct {
	t    *testing.T
	addr string
	conn net.Conn
	br   *bufio.Reader
}

func dialRaw(t *testing.T, url string) *rawConn {
	c := &rawConn{t: t, addr: strings.TrimPrefix(url, "http://")}
	c.redial()
	t.Cleanup(func() { c.conn.Close() })
	return c
}

func (c *rawConn) redial() {
	if c.conn != nil {
		c.conn.Close()
	}
	conn, err := net.Dial("tcp", c.addr)
	if err != nil {
		c.t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(hangGuard))
	c.conn, c.br = conn, bufio.NewReader(conn)
}

// do writes a request with the target exactly as given and a body of its
// own length, sent while the answer is read, as clients do; it answers the
// status and the body. A connection the server says it closes (or stopped
// reading) is dialled again for the next request; any other must serve it.
func (c *rawConn) do(method, target, key string, body []byte) (int, http.Header, []byte, error) {
	return c.doAt(c.addr, method, target, http.Header{"Authorization": {"Bearer " + key}}, body)
}

// doAt is do with the Host and headers given.
func (c *rawConn) doAt(host, method, target string, header http.Header, body []byte) (int, http.Header, []byte, error) {
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\n", method, target, host)
	for k, vs := range header {
		for _, v := range vs {
			head += k + ": " + v + "\r\n"
		}
	}
	if body != nil {
		head += fmt.Sprintf("Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	sent := make(chan error, 1)
	go func() {
		_, err := c.conn.Write(append([]byte(head+"\r\n"), body...))
		sent <- err
	}()
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return 0, nil, nil, errors.Join(err, <-sent)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		<-sent
		return 0, nil, nil, fmt.Errorf("reading the answer's body: %w", err)
	}
	if werr := <-sent; werr != nil || resp.Close {
		c.redial() // the server stopped reading the body, or said it would close
	}
	return resp.StatusCode, resp.Header, data, nil
}

// envelope checks that data is the JSON error envelope of status.
func envelope(t *testing.T, what string, status int, data []byte) apiv1.Error {
	t.Helper()
	var e apiv1.Error
	if err := json.Unmarshal(data, &e); err != nil || e.Code != status || e.Detail == "" {
		t.Errorf("%s: answered %d with %q, not the JSON envelope of %d", what, status, data, status)
	}
	return e
}

// Clients that send a body the agent answers before reading it (a resize
// of a PTY that does not exist), then another request on the same
// keep-alive connection, all at once: serve neither panics nor mixes up
// answers. serve's proxy once let the server read the next request while
// the transport was still reading the body ("invalid concurrent Body.Read
// call").
func TestProxyBodiesAnsweredBeforeRead(t *testing.T) {
	s, _, sb := newSandbox(t)
	const clients, rounds = 4, 40
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dialRaw(t, s.URL)
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for round := range rounds {
				body := []byte(`{"cols":80,"rows":24,"pad":"` + strings.Repeat("x", 40<<10+rng.IntN(860<<10)) + `"}`)
				status, _, data, err := c.do("POST", "/api/v1/sandboxes/"+sb.ID()+"/pty/9/resize", s.Key, body)
				if err != nil {
					t.Errorf("client %d round %d: resize: %v", i, round, err)
					return
				}
				if status != http.StatusNotFound {
					t.Errorf("client %d round %d: resize answered %d %s, want 404", i, round, status, data)
				} else {
					envelope(t, "resize", status, data)
				}
				status, _, data, err = c.do("GET", "/api/v1/me", s.Key, nil)
				if err != nil {
					t.Errorf("client %d round %d: me: %v", i, round, err)
					return
				}
				var me apiv1.Me
				if status != http.StatusOK || json.Unmarshal(data, &me) != nil {
					t.Errorf("client %d round %d: me answered %d %s", i, round, status, data)
				}
			}
		}()
	}
	wg.Wait()
	if logged := s.ServerErrors(); strings.Contains(logged, "panic") {
		t.Errorf("serve's HTTP server logged a panic:\n%s", logged)
	}
}

// A path that is not clean (a "." or ".." segment, plain or escaped, an
// empty segment, an escaped "/") is refused with a 400 in the envelope,
// never redirected to its cleaned form: DELETE …/commands/.. once answered
// a redirect to DELETE /api/v1/sandboxes/{id}, which Go's client followed,
// killing the sandbox. Requests written as they are, nothing cleaned.
func TestProxyRefusesUncleanPaths(t *testing.T) {
	s, c, sb := newSandbox(t)
	base := "/api/v1/sandboxes/" + sb.ID()
	conn := dialRaw(t, s.URL)
	for _, tc := range []struct{ method, target string }{
		{"DELETE", base + "/commands/.."},
		{"DELETE", base + "/commands/%2e%2e"},
		{"DELETE", base + "/commands/%2E%2E/"},
		{"DELETE", base + "/commands/."},
		{"GET", base + "/pty/.."},
		{"POST", base + "/pty/../resize"},
		{"POST", base + "/commands/../pause"},
		{"DELETE", base + "/commands/x%2F..%2F.."},
		{"DELETE", base + "/commands/x%2Fstdin"},
		{"GET", "/api/v1/sandboxes/" + sb.ID() + "//commands"},
		{"GET", "/api/v1/me/.."},
	} {
		status, header, data, err := conn.do(tc.method, tc.target, s.Key, nil)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.target, err)
		}
		if status != http.StatusBadRequest || header.Get("Location") != "" {
			t.Errorf("%s %s: %d (Location %q) %s, want a 400", tc.method, tc.target, status, header.Get("Location"), data)
			continue
		}
		envelope(t, tc.method+" "+tc.target, status, data)
	}
	// The same at the runtime URL, which reaches the agent directly.
	runtime := fmt.Sprintf("%d-%s.sbx.localhost", apiv1.AgentPort, sb.SandboxID())
	token := http.Header{apiv1.AccessTokenHeader: {sb.Data().AccessToken}}
	for _, target := range []string{"/commands/..", "/commands/%2e%2e", "/pty/.."} {
		status, header, data, err := conn.doAt(runtime, "DELETE", target, token, nil)
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusBadRequest || header.Get("Location") != "" {
			t.Errorf("runtime URL DELETE %s: %d (Location %q) %s, want a 400", target, status, header.Get("Location"), data)
			continue
		}
		envelope(t, "runtime URL DELETE "+target, status, data)
	}
	// Go's client, which follows redirects, sending the path as it is.
	req, err := http.NewRequest("DELETE", s.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = base + "/commands/.."
	req.Header.Set("Authorization", "Bearer "+s.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("Go's client, DELETE …/commands/..: %d %s, want a 400", resp.StatusCode, data)
	}

	got, err := c.Get(guarded(t), sb.ID())
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "running" {
		t.Fatalf("the sandbox is %s after the refused requests; its timeline: %+v", got.State, got.Timeline)
	}
	if _, err := sb.Commands.Run(guarded(t), "true", nil); err != nil {
		t.Errorf("a command after the refused requests: %v", err)
	}
}

// At the runtime URL, a sandbox that does not exist and a token that is not
// the sandbox's get the same answer: a caller without the token learns
// nothing of which sandboxes exist.
func TestRuntimeURLSaysNothingWithoutTheToken(t *testing.T) {
	s, _, sb := newSandbox(t)
	conn := dialRaw(t, s.URL)
	ask := func(id, token string) (int, string) {
		t.Helper()
		host := fmt.Sprintf("%d-%s.sbx.localhost", apiv1.AgentPort, id)
		status, _, data, err := conn.doAt(host, "GET", "/commands", http.Header{apiv1.AccessTokenHeader: {token}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return status, string(data)
	}
	wrong := strings.Repeat("w", 40)
	status, body := ask(sb.SandboxID(), wrong)
	if status != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d %s, want a 401", status, body)
	}
	envelope(t, "a wrong token", status, []byte(body))
	for _, id := range []string{"sbx-nosuchsandbox0000", strings.ToLower(sb.SandboxID()[:len(sb.SandboxID())-1]) + "x", "7c5e1d2a-0000-4000-8000-0000000000ff"} {
		if s2, b2 := ask(id, wrong); s2 != status || b2 != body {
			t.Errorf("sandbox %s, which does not exist: %d %s; a wrong token for one that does: %d %s", id, s2, b2, status, body)
		}
	}
	if status, body := ask(sb.SandboxID(), sb.Data().AccessToken); status != http.StatusOK {
		t.Errorf("the right token: %d %s", status, body)
	}
}

// Every stream open to a sandbox ends as soon as the sandbox stops running,
// with why: a command's output (run in the foreground, and followed in the
// background), a terminal and a watch. The agenttest provider leaves a
// stopped sandbox's connections open, as a killed gVisor sandbox does (its
// network goes without a FIN), so only serve can end them: it once left
// them to time out, a minute or more after an OOM kill or a delete.
func TestStreamsEndWhenTheSandboxStops(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stop   func(ctx context.Context, s *agenttest.Stack, sb *client.Sandbox) error
		reason string
	}{
		{"deleted", func(ctx context.Context, _ *agenttest.Stack, sb *client.Sandbox) error { return sb.Delete(ctx) }, "was deleted"},
		{"out of memory", func(_ context.Context, s *agenttest.Stack, sb *client.Sandbox) error {
			return s.Provider.Crash(sb.SandboxID(), "out of memory: the sandbox used more than its 512 MB memory limit and the kernel killed it")
		}, "failed: out of memory: the sandbox used more than its 512 MB memory limit"},
		{"paused", func(ctx context.Context, _ *agenttest.Stack, sb *client.Sandbox) error { return sb.Pause(ctx) }, "was paused"},
		{"hibernated", func(ctx context.Context, _ *agenttest.Stack, sb *client.Sandbox) error { return sb.Hibernate(ctx) }, "was hibernated"},
		{"timed out", func(ctx context.Context, _ *agenttest.Stack, sb *client.Sandbox) error {
			return sb.SetTimeout(ctx, time.Second)
		},
			"was killed: it reached its timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, sb := newSandbox(t)
			ctx := guarded(t)
			started := make(chan struct{})
			var once sync.Once
			ran := make(chan error, 1)
			go func() {
				_, err := sb.Commands.Run(ctx, "echo started; sleep 600", &client.CommandOptions{
					OnStdout: func([]byte) { once.Do(func() { close(started) }) }})
				ran <- err
			}()
			select {
			case <-started:
			case err := <-ran:
				t.Fatalf("the foreground command ended before the sandbox stopped: %v", err)
			}
			cmd, err := sb.Commands.Start(ctx, "sleep 600", nil)
			if err != nil {
				t.Fatal(err)
			}
			term, err := sb.Pty.Create(ctx, client.PtyOptions{Cmd: "sleep 600"})
			if err != nil {
				t.Fatal(err)
			}
			watch, err := sb.Files.Watch(ctx, ".", true, func(apiv1.FileEvent) {})
			if err != nil {
				t.Fatal(err)
			}

			if err := tc.stop(ctx, s, sb); err != nil {
				t.Fatal(err)
			}
			check := func(what string, err error) {
				t.Helper()
				var stopped *client.SandboxStoppedError
				if !errors.As(err, &stopped) || !strings.Contains(stopped.Reason, tc.reason) || !strings.Contains(stopped.Reason, sb.SandboxID()) {
					t.Errorf("%s ended with %v, want the sandbox's stop saying %q", what, err, tc.reason)
				}
			}
			check("the foreground command", <-ran)
			_, err = cmd.Wait(ctx)
			check("the followed command", err)
			_, err = term.Wait(ctx)
			check("the terminal", err)
			check("the watch", watch.Wait())
			if logged := s.ServerErrors(); logged != "" {
				t.Errorf("serve's HTTP server logged:\n%s", logged)
			}
		})
	}
}
