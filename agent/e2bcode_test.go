package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testenv"
)

// newCodeEnv is an agent whose python contexts run this host's Debian
// ipykernel (python3-ipykernel): /usr/bin comes first in PATH, which the
// agent finds python3 in.
func newCodeEnv(t *testing.T) *env {
	t.Helper()
	if exec.Command("/usr/bin/python3", "-c", "import ipykernel").Run() != nil {
		testenv.Missing(t, "python3-ipykernel (apt-get install python3-ipykernel)")
	}
	t.Setenv("PATH", "/usr/bin:"+os.Getenv("PATH"))
	return newEnv(t)
}

// e2bLine is a line of an E2B execution's stream.
type e2bLine map[string]any

func (l e2bLine) str(k string) string { s, _ := l[k].(string); return s }

// e2bExecution is an E2B execution's stream, read to its end.
type e2bExecution struct {
	lines          []e2bLine
	stdout, stderr string
	results        []e2bLine
	err            e2bLine // the error line, if any
	count          float64 // number_of_executions
}

// main is the main result's line.
func (x *e2bExecution) main() e2bLine {
	for _, r := range x.results {
		if r["is_main_result"] == true {
			return r
		}
	}
	return nil
}

// e2bRun runs an execution through the E2B route and reads its stream,
// checking each line: whole, not blank, ASCII, JSON; the last
// end_of_execution.
func (e *env) e2bRun(body any) *e2bExecution {
	e.t.Helper()
	resp := e.request(e.ctx, http.MethodPost, "/e2b/code/execute", body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("execute %v: %d %s", body, resp.StatusCode, data)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		e.t.Fatalf("the stream does not end with a whole line: %q", data)
	}
	x := &e2bExecution{}
	for _, raw := range strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n") {
		raw = strings.TrimSuffix(raw, "\n")
		for _, b := range []byte(raw) {
			if b >= 0x80 {
				e.t.Fatalf("a line is not ASCII: %q", raw)
			}
		}
		var l e2bLine
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			e.t.Fatalf("line %q: %v", raw, err)
		}
		x.lines = append(x.lines, l)
		switch l.str("type") {
		case "stdout", "stderr":
			if l.str("timestamp") == "" {
				e.t.Errorf("an output line without its timestamp: %q", raw)
			}
			if l.str("type") == "stdout" {
				x.stdout += l.str("text")
			} else {
				x.stderr += l.str("text")
			}
		case "result":
			x.results = append(x.results, l)
		case "error":
			x.err = l
		case "number_of_executions":
			x.count, _ = l["execution_count"].(float64)
		}
	}
	if last := x.lines[len(x.lines)-1]; last.str("type") != "end_of_execution" {
		e.t.Fatalf("the last line is not end_of_execution: %v", x.lines)
	}
	return x
}

// e2bFail sends a request that must fail with status want, and answers
// its text/plain body.
func (e *env) e2bFail(method, path string, body any, want int) string {
	e.t.Helper()
	resp := e.request(e.ctx, method, path, body)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		e.t.Fatalf("%s %s: %d %s %s, want %d text/plain", method, path, resp.StatusCode, resp.Header.Get("Content-Type"), data, want)
	}
	return string(data)
}

// The default python context through E2B's /execute: state kept between
// executions, output streamed, results under E2B's field names, an error
// in one string, the count of executions, and nulls and unknown fields
// taken as E2B's server takes them. The context is /code's.
func TestE2BCodeExecute(t *testing.T) {
	e := newCodeEnv(t)
	x := e.e2bRun(map[string]any{"code": "x = 41", "context_id": nil, "language": nil, "env_vars": nil})
	if len(x.results) != 0 || x.err != nil || x.count != 1 {
		t.Fatalf("x = 41: %v", x.lines)
	}
	x = e.e2bRun(map[string]any{"code": "print('hi')\nx + 1", "unknown": true})
	if m := x.main(); m == nil || m.str("text") != "42" || x.stdout != "hi\n" || x.count != 2 {
		t.Errorf("x + 1: %v", x.lines)
	}
	if m := e.e2bRun(map[string]any{"code": "'hello'", "language": "Python"}).main(); m.str("text") != "hello" {
		t.Errorf("a string's text keeps its quotes: %v", m)
	}
	x = e.e2bRun(map[string]any{"code": "from IPython.display import display, HTML\n" +
		"display(HTML('<b>é ☃ 😀</b>'))\n" +
		"display({'application/json': {'a': 1}, 'application/x-thing': 'v', 'text/plain': 'p'}, raw=True)"})
	if len(x.results) != 2 {
		t.Fatalf("two displays: %v", x.lines)
	}
	if r := x.results[0]; r.str("html") != "<b>é ☃ 😀</b>" || r["is_main_result"] != false {
		t.Errorf("the HTML display: %v", r)
	}
	r := x.results[1]
	if j, _ := r["json"].(map[string]any); j["a"] != float64(1) || r.str("text") != "p" {
		t.Errorf("the JSON display: %v", r)
	}
	if extra, _ := r["extra"].(map[string]any); len(extra) != 1 || extra["application/x-thing"] != "v" {
		t.Errorf("an unknown MIME type is not in extra: %v", r)
	}

	// Last: ipykernel aborts an execution that comes right after an error
	// (agent/kernel sets stop_on_error).
	x = e.e2bRun(map[string]any{"code": "import sys\nsys.stderr.write('oops\\n')\n1 / 0"})
	if x.err == nil || x.err.str("name") != "ZeroDivisionError" || x.err.str("value") != "division by zero" ||
		!strings.Contains(x.err.str("traceback"), "ZeroDivisionError") || x.stderr != "oops\n" {
		t.Errorf("1 / 0: %v", x.lines)
	}

	var l apiv1.CodeContextList
	e.call(http.MethodGet, "/code/contexts", nil, http.StatusOK, &l)
	if len(l.Items) != 1 || !l.Items[0].Default || l.Items[0].Language != "python" {
		t.Errorf("the default context through /code: %+v", l)
	}
	var list []map[string]any
	e.call(http.MethodGet, "/e2b/code/contexts", nil, http.StatusOK, &list)
	if len(list) != 1 || list[0]["id"] != l.Items[0].ID || list[0]["language"] != "python" || list[0]["cwd"] != e.dir {
		t.Errorf("GET /e2b/code/contexts: %v", list)
	}
}

// Contexts through E2B's routes: made (nulls taken), listed, used (a bash
// context keeps its state), restarted (which forgets), deleted; and the
// errors: an unknown context (404 with E2B's text), context_id with
// language, env_vars, a language there is no interpreter for.
func TestE2BCodeContexts(t *testing.T) {
	e := newCodeEnv(t)
	var sh, py map[string]string
	e.call(http.MethodPost, "/e2b/code/contexts", map[string]any{"language": "bash", "cwd": "/"}, http.StatusOK, &sh)
	if sh["id"] == "" || sh["language"] != "bash" || sh["cwd"] != "/" {
		t.Fatalf("a bash context: %v", sh)
	}
	e.call(http.MethodPost, "/e2b/code/contexts", map[string]any{"language": nil, "cwd": nil}, http.StatusOK, &py)
	if py["language"] != "python" || py["cwd"] != e.dir {
		t.Fatalf("a context of nulls: %v", py)
	}
	var list []map[string]string
	e.call(http.MethodGet, "/e2b/code/contexts", nil, http.StatusOK, &list)
	if len(list) != 2 {
		t.Errorf("two contexts: %v", list)
	}

	e.e2bRun(map[string]any{"code": "cd /tmp && GREETING=hi", "context_id": sh["id"]})
	if x := e.e2bRun(map[string]any{"code": "echo \"$GREETING from $(pwd)\"", "context_id": sh["id"], "language": nil}); x.stdout != "hi from /tmp\n" || x.count != 2 {
		t.Errorf("bash's state: %v", x.lines)
	}

	e.e2bRun(map[string]any{"code": "y = 1", "context_id": py["id"]})
	resp := e.request(e.ctx, http.MethodPost, "/e2b/code/contexts/"+py["id"]+"/restart", nil)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "null" {
		t.Errorf("restart: %d %s", resp.StatusCode, body)
	}
	if x := e.e2bRun(map[string]any{"code": "y", "context_id": py["id"]}); x.err == nil || x.err.str("name") != "NameError" || x.count != 1 {
		t.Errorf("y after a restart: %v", x.lines)
	}
	e.call(http.MethodDelete, "/e2b/code/contexts/"+py["id"], nil, http.StatusNoContent, nil)
	e.call(http.MethodGet, "/e2b/code/contexts", nil, http.StatusOK, &list)
	if len(list) != 1 || list[0]["id"] != sh["id"] {
		t.Errorf("after a delete: %v", list)
	}

	if got := e.e2bFail(http.MethodPost, "/e2b/code/execute", map[string]any{"code": "1", "context_id": py["id"]}, http.StatusNotFound); got != "Context "+py["id"]+" not found" {
		t.Errorf("an unknown context: %q", got)
	}
	e.e2bFail(http.MethodPost, "/e2b/code/contexts/"+py["id"]+"/restart", nil, http.StatusNotFound)
	e.e2bFail(http.MethodDelete, "/e2b/code/contexts/"+py["id"], nil, http.StatusNotFound)
	e.e2bFail(http.MethodPost, "/e2b/code/execute", map[string]any{"code": "1", "context_id": sh["id"], "language": "bash"}, http.StatusBadRequest)
	e.e2bFail(http.MethodPost, "/e2b/code/execute", map[string]any{"code": "1", "env_vars": map[string]string{"A": "b"}}, http.StatusBadRequest)
	e.e2bFail(http.MethodPost, "/e2b/code/execute", map[string]any{"code": "1", "language": "cobol"}, http.StatusBadRequest)
	e.e2bFail(http.MethodPost, "/e2b/code/execute", map[string]any{"language": "python"}, http.StatusBadRequest)
	e.e2bFail(http.MethodPost, "/e2b/code/contexts", map[string]any{"language": "cobol"}, http.StatusBadRequest)
	if x := e.e2bRun(map[string]any{"code": "echo ok", "language": "bash", "env_vars": map[string]string{}}); x.stdout != "ok\n" {
		t.Errorf("empty env_vars: %v", x.lines)
	}
}

// A client that goes away mid-execution interrupts it: the context is
// free for the next execution, its state kept.
func TestE2BCodeClientLeaves(t *testing.T) {
	e := newCodeEnv(t)
	e.e2bRun(map[string]any{"code": "x = 41"})
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	resp := e.request(ctx, http.MethodPost, "/e2b/code/execute", map[string]any{"code": "import time\nprint('started', flush=True)\ntime.sleep(3600)"})
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if strings.Contains(line, `"started`) {
			break
		}
		if err != nil {
			t.Fatalf("the stream ended before the output: %v", err)
		}
	}
	cancel()
	resp.Body.Close()
	// The next execution runs once the kernel is interrupted.
	x := e.e2bRun(map[string]any{"code": "x + 1"})
	if m := x.main(); m.str("text") != "42" {
		t.Errorf("after the client left: %v", x.lines)
	}
}
