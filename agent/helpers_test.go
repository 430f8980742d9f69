package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/agent"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testenv"
)

// token is the access token of the agents under test.
const token = "test-token-0123456789abcdef0123456789"

// hangGuard bounds every wait of a test; no test should come near it.
const hangGuard = 2 * time.Minute

// env is an agent served in-process, working in a temporary directory.
type env struct {
	t   *testing.T
	ctx context.Context
	url string
	dir string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	a, err := agent.New(agent.Config{Token: token, Workdir: dir, Env: testenv.AgentEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, a, dir)
}

// serve serves a in-process until the test ends, then closes it.
func serve(t *testing.T, a *agent.Agent, dir string) *env {
	t.Helper()
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(func() { a.Close() }) // first: ends the commands, so their streams end
	ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
	t.Cleanup(cancel)
	return &env{t: t, ctx: ctx, url: srv.URL, dir: dir}
}

// request sends a request with the token; body is JSON unless it is an
// io.Reader. The caller closes the answer.
func (e *env) request(ctx context.Context, method, path string, body any) *http.Response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case io.Reader:
		rd = b
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set(apiv1.AccessTokenHeader, token)
	switch b := body.(type) {
	case *typedBody:
		req.Header.Set("Content-Type", b.contentType)
	case nil, io.Reader:
	default:
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// typedBody is a request body with its content type.
type typedBody struct {
	io.Reader
	contentType string
}

// call sends a request, checks the status and decodes the answer into out
// (unless out is nil).
func (e *env) call(method, path string, body any, want int, out any) {
	e.t.Helper()
	resp := e.request(e.ctx, method, path, body)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		e.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, data, want)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

// fail sends a request that must fail with status want, and answers its envelope.
func (e *env) fail(method, path string, body any, want int) apiv1.Error {
	e.t.Helper()
	var out apiv1.Error
	e.call(method, path, body, want, &out)
	if out.Code != want || out.Type == "" || out.Detail == "" {
		e.t.Fatalf("%s %s: envelope %+v", method, path, out)
	}
	return out
}

// result is a command stream read to its end.
type result struct {
	events         []apiv1.CommandEvent
	stdout, stderr string
	end            apiv1.CommandEvent
}

// run runs a command in the foreground and reads its whole stream.
func (e *env) run(req apiv1.StartCommandRequest) result {
	e.t.Helper()
	resp := e.request(e.ctx, http.MethodPost, "/commands", req)
	defer resp.Body.Close()
	return e.readStream(resp)
}

// follow reads the stream of a command by ref to its end.
func (e *env) follow(ref string) result {
	e.t.Helper()
	resp := e.request(e.ctx, http.MethodGet, "/commands/"+ref+"/stream", nil)
	defer resp.Body.Close()
	return e.readStream(resp)
}

func (e *env) readStream(resp *http.Response) result {
	e.t.Helper()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != apiv1.NDJSON {
		data, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("stream: %d %s", resp.StatusCode, data)
	}
	var res result
	var out, errs strings.Builder
	err := eachEvent(resp.Body, func(ev apiv1.CommandEvent) bool {
		res.events = append(res.events, ev)
		switch ev.Type {
		case "stdout":
			out.Write(ev.Data)
		case "stderr":
			errs.Write(ev.Data)
		}
		return true
	})
	if err != nil {
		e.t.Fatal(err)
	}
	res.stdout, res.stderr = out.String(), errs.String()
	checkFraming(e.t, res.events)
	res.end = res.events[len(res.events)-1]
	return res
}

// checkFraming checks that a whole stream opens with start and closes with end.
func checkFraming(t *testing.T, events []apiv1.CommandEvent) {
	t.Helper()
	if len(events) < 2 || events[0].Type != "start" || events[0].PID == 0 || events[len(events)-1].Type != "end" {
		t.Fatalf("stream not framed by start and end: %+v", events)
	}
}

// eachEvent decodes NDJSON events until fn answers false or the body ends.
func eachEvent[T any](body io.Reader, fn func(T) bool) error {
	br := bufio.NewReaderSize(body, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			var ev T
			if jerr := json.Unmarshal(line, &ev); jerr != nil {
				return jerr
			}
			if !fn(ev) {
				return nil
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// eventually polls cond until it holds, failing after the hang guard.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	for !cond() {
		select {
		case <-e.ctx.Done():
			e.t.Fatalf("waited in vain for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// gone reports whether a process no longer runs (or is a zombie).
func gone(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(data), ") ")
	return strings.HasPrefix(rest, "Z")
}
