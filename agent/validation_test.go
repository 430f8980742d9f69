package agent_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
)

// raw sends a request with the token and a body of the given content type
// ("" for none) and answers its status, headers and body.
func (e *env) raw(method, path, contentType, body string) (int, http.Header, string) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set(apiv1.AccessTokenHeader, token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data)
}

// refused checks that a request is answered with status want and the
// JSON error envelope, and answers the envelope.
func (e *env) refused(method, path, contentType, body string, want int) apiv1.Error {
	e.t.Helper()
	code, h, data := e.raw(method, path, contentType, body)
	var env apiv1.Error
	if code != want || h.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(data), &env) != nil || env.Code != want || env.Detail == "" {
		e.t.Errorf("%s %.80s: %d %s %.300q, want %d with the JSON envelope", method, path, code, h.Get("Content-Type"), data, want)
	}
	return env
}

// Every file route answers a path it cannot serve with a 4xx and the JSON
// envelope naming the path and why: never a 500, text, a hang or a
// replaced device.
func TestFilesUnservablePaths(t *testing.T) {
	e := newEnv(t)
	long := strings.Repeat("n", 300) // over NAME_MAX
	os.WriteFile(filepath.Join(e.dir, "file"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(e.dir, "dir"), 0o755)
	os.Symlink("loop", filepath.Join(e.dir, "loop"))
	if err := syscall.Mkfifo(filepath.Join(e.dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	mkdir := func(p string) string { b, _ := json.Marshal(apiv1.PathRequest{Path: p}); return string(b) }
	move := func(from, to string) string {
		b, _ := json.Marshal(apiv1.MoveRequest{From: from, To: to})
		return string(b)
	}
	const multipart = "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x\"\r\n\r\nx\r\n--b--\r\n"
	for _, c := range []struct {
		method, path, contentType, body string
		want                            int
		reason                          string
	}{
		// A component over 255 bytes.
		{"GET", "/files" + q(long), "", "", 400, "file name too long"},
		{"PUT", "/files" + q(long), "", "x", 400, "file name too long"},
		{"PUT", "/files" + q(long+"/x"), "", "x", 400, "file name too long"},
		{"POST", "/files" + q(long), "multipart/form-data; boundary=b", multipart, 400, "file name too long"},
		{"GET", "/files/stat" + q(long), "", "", 400, "file name too long"},
		{"GET", "/files/list" + q(long), "", "", 400, "file name too long"},
		{"GET", "/files/watch" + q(long), "", "", 400, "file name too long"},
		{"DELETE", "/files" + q(long), "", "", 400, "file name too long"},
		{"POST", "/files/mkdir", "application/json", mkdir(long), 400, "file name too long"},
		{"POST", "/files/move", "application/json", move("file", long), 400, "file name too long"},
		{"POST", "/files/move", "application/json", move(long, "file2"), 400, "file name too long"},
		// A whole path over PATH_MAX.
		{"GET", "/files/stat" + q(strings.Repeat("d/", 2100)), "", "", 400, "file name too long"},
		// A symlink loop.
		{"GET", "/files" + q("loop"), "", "", 400, "symbolic links"},
		{"GET", "/files/stat" + q("loop/x"), "", "", 400, "symbolic links"},
		{"GET", "/files/list" + q("loop"), "", "", 400, "symbolic links"},
		{"PUT", "/files" + q("loop/x"), "", "x", 400, "symbolic links"},
		{"GET", "/files/watch" + q("loop"), "", "", 400, "symbolic links"},
		// Not a directory, is a directory.
		{"GET", "/files" + q("file/x"), "", "", 400, "not a directory"},
		{"GET", "/files/stat" + q("file/x"), "", "", 400, "not a directory"},
		{"GET", "/files/watch" + q("file/x"), "", "", 400, "not a directory"},
		{"POST", "/files/mkdir", "application/json", mkdir("file/x"), 400, "not a directory"},
		{"POST", "/files", "multipart/form-data; boundary=b", multipart, 400, ""}, // no path
		{"POST", "/files" + q("file"), "multipart/form-data; boundary=b", multipart, 400, "not a directory"},
		{"DELETE", "/files" + q("file/x"), "", "", 400, "not a directory"},
		{"GET", "/files" + q("dir"), "", "", 400, "is a directory"},
		// What is not a regular file: read, or replaced by a write.
		{"GET", "/files" + q("fifo"), "", "", 400, "not a regular file"},
		{"PUT", "/files" + q("fifo"), "", "x", 400, "not a regular file"},
		{"GET", "/files" + q("/dev/null"), "", "", 400, "not a regular file"},
		// Memory that cannot be read.
		{"GET", "/files" + q("/proc/self/mem"), "", "", 400, "/proc/self/mem"},
		// A NUL in a path.
		{"GET", "/files/stat" + q("a\x00b"), "", "", 400, "invalid argument"},
	} {
		env := e.refused(c.method, c.path, c.contentType, c.body, c.want)
		if !strings.Contains(env.Detail, c.reason) {
			t.Errorf("%s %.60s: %q, want %q in it", c.method, c.path, env.Detail, c.reason)
		}
		if strings.Contains(env.Detail, strings.Repeat("n", 65)) || strings.Contains(env.Detail, strings.Repeat("d/", 33)) {
			t.Errorf("%s %.60s: the detail echoes the whole path: %.200q", c.method, c.path, env.Detail)
		}
	}
	if fi, err := os.Lstat(filepath.Join(e.dir, "fifo")); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("the named pipe was replaced: %v %v", fi.Mode(), err)
	}

	// A bad Range is a 416 in the envelope, not ServeContent's text.
	req, _ := http.NewRequestWithContext(e.ctx, "GET", e.url+"/files"+q("file"), nil)
	req.Header.Set(apiv1.AccessTokenHeader, token)
	req.Header.Set("Range", "bytes=10-20")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(data), `"code":416`) {
		t.Errorf("a bad range: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), data)
	}
}

// Files of /proc and /sys, whose size is 0 or a page whatever they hold,
// and which cannot seek to their end, are read whole.
func TestFilesReadProc(t *testing.T) {
	e := newEnv(t)
	want, err := os.ReadFile("/proc/self/cmdline") // the same process: the agent is served in-process
	if err != nil {
		t.Fatal(err)
	}
	code, _, body := e.raw("GET", "/files"+q("/proc/self/cmdline"), "", "")
	if code != http.StatusOK || body != string(want) {
		t.Errorf("/proc/self/cmdline: %d %.200q, want %.200q", code, body, want)
	}
	code, _, body = e.raw("GET", "/files"+q("/proc/self/status"), "", "")
	if code != http.StatusOK || !strings.HasPrefix(body, "Name:") || !strings.Contains(body, "\nPid:\t"+strconv.Itoa(os.Getpid())+"\n") {
		t.Errorf("/proc/self/status: %d %.200q", code, body)
	}
	if want, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err == nil { // 4096 bytes by stat
		code, _, body = e.raw("GET", "/files"+q("/sys/kernel/mm/transparent_hugepage/enabled"), "", "")
		if code != http.StatusOK || body != string(want) {
			t.Errorf("a sysfs file: %d %q, want %q", code, body, want)
		}
	}
}

// JSON bodies are decoded as strictly as serve's API decodes them.
func TestStrictJSONBodies(t *testing.T) {
	e := newEnv(t)
	e.call(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "sleep 600", Tag: "s", Background: true}, http.StatusCreated, nil)
	e.call(http.MethodPost, "/pty", apiv1.StartPtyRequest{Cols: 80, Rows: 24, Cmd: "sleep 600", Tag: "p"}, http.StatusCreated, nil)
	const js = "application/json"
	for _, c := range []struct {
		method, path, contentType, body string
		want                            int
		field, detail                   string
	}{
		{"POST", "/commands", js, `{"CMD":"true"}`, 400, "CMD", `unknown field "CMD"`},
		{"POST", "/commands", js, `{"Cmd":"true"}`, 400, "Cmd", `unknown field "Cmd"`},
		{"POST", "/commands", js, `{"cmd":"true","nope":1}`, 400, "nope", `unknown field "nope"`},
		{"POST", "/commands", js, `{"cmd":"true","timeoutMs":5}`, 400, "timeoutMs", "unknown field"},
		{"POST", "/commands", js, `{"cmd":"true"} {"cmd":"true"}`, 400, "", "nothing after it"},
		{"POST", "/commands", js, `{"cmd":"true"}}`, 400, "", "nothing after it"},
		{"POST", "/commands", js, `null`, 400, "", "not null"},
		{"POST", "/commands", js, `[]`, 400, "", "not an array"},
		{"POST", "/commands", js, ``, 400, "", "empty"},
		{"POST", "/commands", js, `{"cmd":"true","timeout":"5"}`, 400, "timeout", `field "timeout" must be an integer`},
		{"POST", "/commands", js, `{"args":"true"}`, 400, "args", `field "args" must be an array`},
		{"POST", "/commands", js, `{"cmd":"true","env":{"A":1}}`, 400, "env", "must be a string"},
		{"POST", "/commands", "", `{"cmd":"true"}`, 415, "", "Content-Type: application/json"},
		{"POST", "/commands", "text/plain", `{"cmd":"true"}`, 415, "", "Content-Type: application/json"},
		{"POST", "/commands", "application/x-www-form-urlencoded", `cmd=true`, 415, "", "Content-Type: application/json"},
		{"POST", "/commands", js, `{"cmd":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "", "larger than"},
		{"POST", "/pty", js, `{"Cols":80,"rows":24}`, 400, "Cols", "unknown field"},
		{"POST", "/pty", js, `{"cols":80000,"rows":24}`, 400, "cols", "from 0 to 65535"},
		{"POST", "/pty", js, `null`, 400, "", "not null"},
		{"POST", "/pty/p/resize", js, `null`, 400, "", "not null"},
		{"POST", "/pty/p/resize", js, `{"COLS":80,"rows":24}`, 400, "COLS", "unknown field"},
		{"POST", "/pty/p/resize", "", `{"cols":80,"rows":24}`, 415, "", "application/json"},
		{"POST", "/commands/s/signal", js, `{"SIGNAL":"TERM"}`, 400, "SIGNAL", "unknown field"},
		{"POST", "/commands/s/signal", js, `null`, 400, "", "not null"},
		{"POST", "/files/mkdir", js, `{"Path":"x"}`, 400, "Path", "unknown field"},
		{"POST", "/files/mkdir", js, `null`, 400, "", "not null"},
		{"POST", "/files/mkdir", "text/plain", `{"path":"x"}`, 415, "", "application/json"},
		{"POST", "/files/move", js, `{"from":"a","TO":"b"}`, 400, "TO", "unknown field"},
	} {
		env := e.refused(c.method, c.path, c.contentType, c.body, c.want)
		if !strings.Contains(env.Detail, c.detail) {
			t.Errorf("%s %s %.40q: %q, want %q in it", c.method, c.path, c.body, env.Detail, c.detail)
		}
		if c.field != "" && (len(env.Errors) == 0 || env.Errors[0].Field != c.field) {
			t.Errorf("%s %s %.40q: errors %+v, want field %q", c.method, c.path, c.body, env.Errors, c.field)
		}
	}
	if _, err := os.Stat(filepath.Join(e.dir, "x")); err == nil {
		t.Error("a refused mkdir made its directory")
	}
	// A charset is no reason to refuse.
	if code, _, body := e.raw("POST", "/files/mkdir", "application/json; charset=utf-8", `{"path":"y"}`); code != http.StatusCreated {
		t.Errorf("mkdir with a charset: %d %s", code, body)
	}
}

// Query parameters are checked: unknown ones, repeated ones, empty and
// malformed values are 400s naming the parameter.
func TestQueryValidation(t *testing.T) {
	e := newEnv(t)
	os.WriteFile(filepath.Join(e.dir, "file"), []byte("x"), 0o644)
	for _, c := range []struct {
		method, path, field, detail string
	}{
		{"GET", "/files/stat?path=file&nope=1", "nope", `unknown query parameter "nope"`},
		{"GET", "/files/stat?path=file&PATH=file", "PATH", `unknown query parameter "PATH"`},
		{"GET", "/files?path=file&path=other", "path", "2 times"},
		{"GET", "/files/stat?path=%zz", "", "does not parse"},
		{"GET", "/commands?limit=5", "limit", "takes none"},
		{"GET", "/commands?pid=nope", "pid", "takes none"},
		{"GET", "/health?x", "x", "unknown query parameter"},
		{"GET", "/files/list?path=.&depth=", "depth", "empty"},
		{"GET", "/files/list?path=.&depth=two", "depth", "depth must be a number"},
		{"GET", "/files/watch?path=.&recursive=maybe", "recursive", "true or false"},
		{"GET", "/files/watch?path=.&recursive=", "recursive", "empty"},
		{"PUT", "/files?path=new&mode=", "mode", "empty"},
		{"PUT", "/files?path=new&mode=999", "mode", "octal"},
		{"PUT", "/files?path=new&user=", "user", "empty"},
		{"GET", "/files/stat?path=", "path", "needs a path"},
	} {
		env := e.refused(c.method, c.path, "", "", 400)
		if !strings.Contains(env.Detail, c.detail) {
			t.Errorf("%s %s: %q, want %q in it", c.method, c.path, env.Detail, c.detail)
		}
		if c.field != "" && (len(env.Errors) == 0 || env.Errors[0].Field != c.field) {
			t.Errorf("%s %s: errors %+v, want field %q", c.method, c.path, env.Errors, c.field)
		}
	}
	if _, err := os.Stat(filepath.Join(e.dir, "new")); err == nil {
		t.Error("a refused write wrote")
	}
	e.call(http.MethodGet, "/files/list"+q(".", "depth", "0"), nil, http.StatusOK, nil) // 0: the default
	e.call(http.MethodPut, "/files"+q("new", "mode", "600"), strings.NewReader("x"), http.StatusOK, nil)
}

// A path no route has is a 404, a method a path does not take a 405 with
// Allow, both in the envelope; a path that is not clean is never
// redirected to its clean form.
func TestRoutingErrors(t *testing.T) {
	e := newEnv(t)
	env := e.refused("PATCH", "/files?path=x", "", "", 405)
	if !strings.Contains(env.Detail, "DELETE, GET, HEAD, POST, PUT") {
		t.Errorf("405 detail %q", env.Detail)
	}
	if _, h, _ := e.raw("PATCH", "/files?path=x", "", ""); h.Get("Allow") != "DELETE, GET, HEAD, POST, PUT" {
		t.Errorf("Allow %q", h.Get("Allow"))
	}
	if _, h, _ := e.raw("POST", "/commands/7", "", ""); h.Get("Allow") != "DELETE, GET, HEAD" {
		t.Errorf("Allow %q", h.Get("Allow"))
	}
	e.refused("PUT", "/health", "", "", 405)
	e.refused("GET", "/nope", "", "", 404)
	e.refused("GET", "/files/", "", "", 404)
	for _, p := range []string{"/commands/..", "/commands/.", "/commands/%2e%2e", "/commands//7", "/files/../health", "/commands/7/"} {
		e.refused("DELETE", p, "", "", 404)
		e.refused("GET", p, "", "", 404)
	}
}

// No error quotes more than a short prefix of what the caller sent.
func TestErrorsEchoAShortPrefix(t *testing.T) {
	e := newEnv(t)
	e.call(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "sleep 600", Tag: "s", Background: true}, http.StatusCreated, nil)
	long := strings.Repeat("Z", 5000)
	name := strings.Repeat("Z", 250) // a file name the system takes
	jsonOf := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	const js = "application/json"
	for _, c := range []struct{ method, path, contentType, body string }{
		{"GET", "/files" + q(long), "", ""},
		{"GET", "/files/stat" + q(long), "", ""},
		{"GET", "/files/stat" + q(name+"/"+name+"/"+name), "", ""},
		{"GET", "/files/list" + q(name), "", ""},
		{"GET", "/files/list" + q(".", "depth", long), "", ""},
		{"GET", "/files/watch" + q(".", "recursive", long), "", ""},
		{"PUT", "/files" + q("x", "mode", long), "", "x"},
		{"DELETE", "/files" + q(name), "", ""},
		{"GET", "/files/stat" + q("x", long, "1"), "", ""},
		{"GET", "/commands/" + long, "", ""},
		{"DELETE", "/commands/" + long, "", ""},
		{"GET", "/" + long, "", ""},
		{long[:200], "/files", "", ""},
		{"POST", "/commands", js, jsonOf(apiv1.StartCommandRequest{Cmd: "true", Tag: long})},
		{"POST", "/commands", js, jsonOf(apiv1.StartCommandRequest{Cmd: "true", Cwd: long})},
		{"POST", "/commands", js, jsonOf(apiv1.StartCommandRequest{Cmd: "true", User: long})},
		{"POST", "/commands", js, jsonOf(apiv1.StartCommandRequest{Cmd: "true", User: "root:" + long})},
		{"PUT", "/files" + q("x", "user", long), "", "x"},
		{"POST", "/commands", js, jsonOf(apiv1.StartCommandRequest{Cmd: "true", Env: map[string]string{long + "=": "v"}})},
		{"POST", "/commands", js, `{"cmd":"true","` + long + `":1}`},
		{"POST", "/commands", js, `{"cmd":"true","timeout":1` + strings.Repeat("0", 5000) + `}`},
		{"POST", "/commands", js, `{"cmd":"true",` + long + `}`},
		{"POST", "/commands", long, `{}`},
		{"POST", "/commands/s/signal", js, jsonOf(apiv1.SignalRequest{Signal: long})},
		{"POST", "/files/mkdir", js, jsonOf(apiv1.PathRequest{Path: long})},
		{"POST", "/files/move", js, jsonOf(apiv1.MoveRequest{From: long, To: long + "2"})},
		{"POST", "/files" + q("up"), "multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"../" + long + "\"\r\n\r\nx\r\n--b--\r\n"},
		{"POST", "/files" + q("up"), "multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"" + long + "\"\r\n\r\nx\r\n--b--\r\n"},
		{"POST", "/files" + q("up"), long, "x"},
	} {
		code, _, body := e.raw(c.method, c.path, c.contentType, c.body)
		if code < 400 || code >= 500 {
			t.Errorf("%.20s %.60s: %d, want a 4xx", c.method, c.path, code)
		}
		if strings.Contains(body, strings.Repeat("Z", 65)) || strings.Contains(body, strings.Repeat("0", 65)) {
			t.Errorf("%.20s %.60s: %d echoes more than 64 bytes of the input: %.300q", c.method, c.path, code, body)
		}
	}
}

// A program that is not there exits 127 and one that cannot be executed
// 126, as in a shell, whether a shell runs it or the agent does.
func TestCommandNotFoundOrNotExecutable(t *testing.T) {
	e := newEnv(t)
	os.WriteFile(filepath.Join(e.dir, "noexec"), []byte("#!/bin/sh\necho ran\n"), 0o644)
	os.WriteFile(filepath.Join(e.dir, "badinterp"), []byte("#!/no/such/interpreter\n"), 0o755)
	os.Mkdir(filepath.Join(e.dir, "dir"), 0o755)
	for _, c := range []struct {
		req    apiv1.StartCommandRequest
		code   int
		stderr string
	}{
		{apiv1.StartCommandRequest{Args: []string{"no-such-program", "arg"}}, 127, "no-such-program: command not found"},
		{apiv1.StartCommandRequest{Args: []string{"./missing"}}, 127, "./missing: No such file or directory"},
		{apiv1.StartCommandRequest{Args: []string{"/no/such/dir/prog"}}, 127, "No such file or directory"},
		{apiv1.StartCommandRequest{Args: []string{"./noexec"}}, 126, "./noexec: Permission denied"},
		{apiv1.StartCommandRequest{Args: []string{filepath.Join(e.dir, "dir")}}, 126, "Is a directory"},
		{apiv1.StartCommandRequest{Args: []string{"./badinterp"}}, 126, "bad interpreter"},
		{apiv1.StartCommandRequest{Cmd: "no-such-program"}, 127, "not found"},
		{apiv1.StartCommandRequest{Cmd: "./noexec"}, 126, "Permission denied"},
	} {
		res := e.run(c.req)
		if res.end.ExitCode == nil || *res.end.ExitCode != c.code || !strings.Contains(res.stderr, c.stderr) || res.stdout != "" {
			t.Errorf("%+v: exit %v, stderr %q, stdout %q; want %d and %q", c.req, res.end.ExitCode, res.stderr, res.stdout, c.code, c.stderr)
		}
	}
	// In the background too: a command that ran and ended, found by its tag.
	var info apiv1.CommandInfo
	e.call(http.MethodPost, "/commands", apiv1.StartCommandRequest{Args: []string{"no-such-program"}, Tag: "nf", Background: true}, http.StatusCreated, &info)
	if info.PID == 0 || len(info.Args) != 1 || info.Args[0] != "no-such-program" {
		t.Errorf("started %+v", info)
	}
	res := e.follow("nf")
	if res.end.ExitCode == nil || *res.end.ExitCode != 127 || !strings.Contains(res.stderr, "command not found") {
		t.Errorf("background: %+v, stderr %q", res.end, res.stderr)
	}
}

// "." and ".." are no tags: a path with them is cleaned into another route.
func TestTagsRefuseDots(t *testing.T) {
	e := newEnv(t)
	for _, tag := range []string{".", ".."} {
		env := e.fail(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "true", Tag: tag, Background: true}, http.StatusBadRequest)
		if len(env.Errors) == 0 || env.Errors[0].Field != "tag" {
			t.Errorf("tag %q: %+v", tag, env)
		}
		e.fail(http.MethodPost, "/pty", apiv1.StartPtyRequest{Cols: 80, Rows: 24, Cmd: "true", Tag: tag}, http.StatusBadRequest)
	}
	for _, tag := range []string{"...", ".a", "a..b"} {
		e.call(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "true", Tag: tag, Background: true}, http.StatusCreated, nil)
	}
}
