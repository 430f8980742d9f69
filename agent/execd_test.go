package agent_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The agent's execd API, driven over HTTP as OpenSandbox's SDKs drive it.

const execdPrefix = "/opensandbox/execd"

// execdEvent is one event of a command's stream.
type execdEvent struct {
	Type          string `json:"type"`
	Text          string `json:"text"`
	ExecutionTime *int64 `json:"execution_time"`
	Timestamp     int64  `json:"timestamp"`
	Error         *struct {
		EName     string   `json:"ename"`
		EValue    string   `json:"evalue"`
		Traceback []string `json:"traceback"`
	} `json:"error"`
}

// execdRun posts a command and reads its stream to its end: one JSON
// event per blank-line-separated block.
func (e *env) execdRun(body map[string]any) []execdEvent {
	e.t.Helper()
	resp := e.request(e.ctx, http.MethodPost, execdPrefix+"/command", body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		data, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("POST /command: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), data)
	}
	var events []execdEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "" {
			continue
		}
		var ev execdEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Timestamp == 0 {
			e.t.Fatalf("event %q: %v", sc.Text(), err)
		}
		events = append(events, ev)
	}
	return events
}

// execdFail sends a request that must fail with status want and names
// what is wrong: execd's {"code", "message"}.
func (e *env) execdFail(method, path string, body any, want int, code, says string) {
	e.t.Helper()
	var out struct{ Code, Message string }
	e.call(method, execdPrefix+path, body, want, &out)
	if out.Code != code || !strings.Contains(out.Message, says) {
		e.t.Errorf("%s %s: %+v, want code %s naming %q", method, path, out, code, says)
	}
}

// A foreground command streams init (its ID), its output line by line,
// and its end: execution_complete, or an error whose evalue is the exit
// code.
func TestExecdCommandStreams(t *testing.T) {
	e := newEnv(t)
	events := e.execdRun(map[string]any{"command": "echo one; echo two >&2; printf 'three\\n\\nfour'; exit 3", "envs": map[string]string{"X": "y"}})
	if events[0].Type != "init" || events[0].Text == "" {
		t.Fatalf("first event %+v, want init with the command's ID", events[0])
	}
	var stdout, stderr []string
	for _, ev := range events[1 : len(events)-1] {
		switch ev.Type {
		case "stdout":
			stdout = append(stdout, ev.Text)
		case "stderr":
			stderr = append(stderr, ev.Text)
		}
	}
	if strings.Join(stdout, "|") != "one|three|\n|four" || strings.Join(stderr, "|") != "two" {
		t.Errorf("stdout %q stderr %q", stdout, stderr)
	}
	last := events[len(events)-1]
	if last.Type != "error" || last.Error == nil || last.Error.EValue != "3" || last.Error.EName != "CommandExecError" {
		t.Errorf("last event %+v, want an error with evalue 3", last)
	}
	events = e.execdRun(map[string]any{"command": "echo $X", "envs": map[string]string{"X": "from envs"}, "cwd": e.dir})
	if last := events[len(events)-1]; last.Type != "execution_complete" || last.ExecutionTime == nil {
		t.Errorf("last event %+v, want execution_complete", last)
	}
	if events[1].Text != "from envs" {
		t.Errorf("events %+v, want the env's value", events)
	}
	// Its status, by the init's ID.
	var st struct {
		ID       string `json:"id"`
		Content  string `json:"content"`
		Running  bool   `json:"running"`
		ExitCode *int   `json:"exit_code"`
	}
	e.call("GET", execdPrefix+"/command/status/"+events[0].Text, nil, http.StatusOK, &st)
	if st.ID != events[0].Text || st.Content != "echo $X" || st.Running || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Errorf("status %+v", st)
	}
}

// A background command's stream ends after its init; its output is read
// by line cursor, its status polled, and an interrupt kills it.
func TestExecdBackgroundCommand(t *testing.T) {
	e := newEnv(t)
	events := e.execdRun(map[string]any{"command": "printf 'a\\nb\\n'", "background": true})
	if len(events) != 1 || events[0].Type != "init" {
		t.Fatalf("events %+v, want only init", events)
	}
	id := events[0].Text
	var st struct {
		Running  bool `json:"running"`
		ExitCode *int `json:"exit_code"`
	}
	e.eventually("the command's end", func() bool {
		e.call("GET", execdPrefix+"/command/status/"+id, nil, http.StatusOK, &st)
		return !st.Running
	})
	logs := func(query string) (string, string) {
		resp := e.request(e.ctx, "GET", execdPrefix+"/command/"+id+"/logs"+query, nil)
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return string(data), resp.Header.Get("EXECD-COMMANDS-TAIL-CURSOR")
	}
	if text, cursor := logs(""); text != "a\nb\n" || cursor != "2" {
		t.Errorf("logs %q cursor %s", text, cursor)
	}
	if text, cursor := logs("?cursor=1"); text != "b\n" || cursor != "2" {
		t.Errorf("logs from 1: %q cursor %s", text, cursor)
	}
	events = e.execdRun(map[string]any{"command": "sleep 1000", "background": true})
	id = events[0].Text
	e.call("DELETE", execdPrefix+"/command?id="+id, nil, http.StatusOK, nil)
	e.eventually("the interrupted command's end", func() bool {
		e.call("GET", execdPrefix+"/command/status/"+id, nil, http.StatusOK, &st)
		return !st.Running
	})
	if st.ExitCode == nil || *st.ExitCode != -1 {
		t.Errorf("interrupted: %+v, want exit code -1 (a signal)", st)
	}
}

// upload writes files as the SDK does: a metadata part, then a file part.
func (e *env) upload(files map[string]string, mode int) {
	e.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for path, content := range files {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="metadata"; filename="metadata"`)
		h.Set("Content-Type", "application/json")
		pw, _ := mw.CreatePart(h)
		json.NewEncoder(pw).Encode(map[string]any{"path": path, "mode": mode})
		fw, _ := mw.CreateFormFile("file", filepath.Base(path))
		io.WriteString(fw, content)
	}
	mw.Close()
	resp := e.request(e.ctx, "POST", execdPrefix+"/files/upload", &typedBody{Reader: &body, contentType: mw.FormDataContentType()})
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("upload: %d %s", resp.StatusCode, data)
	}
}

// execd's files: upload, download, info, list, search, move, replace,
// directories, permissions and removal.
func TestExecdFiles(t *testing.T) {
	e := newEnv(t)
	dir := e.dir + "/d"
	e.upload(map[string]string{dir + "/a.txt": "hello world", dir + "/sub/b.md": "bee"}, 600)
	resp := e.request(e.ctx, "GET", execdPrefix+"/files/download?path="+dir+"/a.txt", nil)
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(data) != "hello world" {
		t.Errorf("download: %q", data)
	}
	resp = e.request(e.ctx, "GET", execdPrefix+"/files/download?path="+dir+"/a.txt&offset=6&limit=3", nil)
	data, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(data) != "wor" {
		t.Errorf("a range: %q", data)
	}
	type info struct {
		Path string `json:"path"`
		Type string `json:"type"`
		Size int64  `json:"size"`
		Mode int    `json:"mode"`
	}
	var infos map[string]info
	e.call("GET", execdPrefix+"/files/info?path="+dir+"/a.txt&path="+dir+"/sub", nil, http.StatusOK, &infos)
	if a := infos[dir+"/a.txt"]; a.Type != "file" || a.Size != 11 || a.Mode != 600 || infos[dir+"/sub"].Type != "directory" {
		t.Errorf("info %+v", infos)
	}
	var list []info
	e.call("GET", execdPrefix+"/directories/list?path="+dir+"&depth=2", nil, http.StatusOK, &list)
	if len(list) != 3 || list[0].Path != dir+"/a.txt" || list[1].Path != dir+"/sub" || list[2].Path != dir+"/sub/b.md" {
		t.Errorf("list %+v", list)
	}
	e.call("GET", execdPrefix+"/files/search?path="+dir+"&pattern=*.md", nil, http.StatusOK, &list)
	if len(list) != 1 || list[0].Path != dir+"/sub/b.md" {
		t.Errorf("search *.md: %+v", list)
	}
	e.call("POST", execdPrefix+"/files/mv", []map[string]string{{"src": dir + "/a.txt", "dest": dir + "/c.txt"}}, http.StatusOK, nil)
	var counts map[string]struct {
		ReplacedCount int `json:"replacedCount"`
	}
	e.call("POST", execdPrefix+"/files/replace?verbose=true", map[string]any{dir + "/c.txt": map[string]string{"old": "o", "new": "0"}}, http.StatusOK, &counts)
	if got, _ := os.ReadFile(dir + "/c.txt"); string(got) != "hell0 w0rld" || counts[dir+"/c.txt"].ReplacedCount != 2 {
		t.Errorf("replaced: %q %+v", got, counts)
	}
	e.call("POST", execdPrefix+"/directories", map[string]any{dir + "/x/y": map[string]any{"mode": 700}}, http.StatusOK, nil)
	e.call("POST", execdPrefix+"/files/permissions", map[string]any{dir + "/c.txt": map[string]any{"mode": 640}}, http.StatusOK, nil)
	if fi, err := os.Stat(dir + "/x/y"); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("made directory: %v %v", fi, err)
	}
	if fi, err := os.Stat(dir + "/c.txt"); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("chmod: %v %v", fi, err)
	}
	e.execdFail("DELETE", "/files?path="+dir+"/x", nil, http.StatusBadRequest, "INVALID_REQUEST", "DELETE /directories")
	e.call("DELETE", execdPrefix+"/files?path="+dir+"/c.txt", nil, http.StatusOK, nil)
	e.call("DELETE", execdPrefix+"/directories?path="+dir+"/x", nil, http.StatusOK, nil)
	for _, p := range []string{dir + "/c.txt", dir + "/x"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}
}

// What execd is given wrong is a 4xx in its error shape naming the problem.
func TestExecdRefusesBadInput(t *testing.T) {
	e := newEnv(t)
	e.execdFail("POST", "/command", map[string]any{"command": " "}, http.StatusBadRequest, "INVALID_REQUEST", "command")
	e.execdFail("POST", "/command", map[string]any{"command": "true", "gid": 0}, http.StatusBadRequest, "INVALID_REQUEST", "gid")
	e.execdFail("POST", "/command", map[string]any{"command": "true", "shell": "zsh"}, http.StatusBadRequest, "INVALID_REQUEST", "shell")
	e.execdFail("POST", "/command", map[string]any{"command": "true", "cwd": "/nowhere"}, http.StatusBadRequest, "INVALID_REQUEST", "cwd")
	e.execdFail("GET", "/command/status/999999", nil, http.StatusNotFound, "NOT_FOUND", "999999")
	e.execdFail("GET", "/command/status/nope", nil, http.StatusBadRequest, "INVALID_REQUEST", "nope")
	e.execdFail("GET", "/files/info?path=/nowhere/x", nil, http.StatusNotFound, "NOT_FOUND", "/nowhere/x")
	e.execdFail("GET", "/files/info", nil, http.StatusBadRequest, "INVALID_REQUEST", "path")
	e.execdFail("POST", "/directories", map[string]any{e.dir + "/m": map[string]any{"mode": 789}}, http.StatusBadRequest, "INVALID_REQUEST", "mode")
	e.execdFail("POST", "/files/replace", map[string]any{e.dir + "/m": map[string]any{"old": "", "new": "x"}}, http.StatusBadRequest, "INVALID_REQUEST", "old")
	e.execdFail("GET", "/files/search?pattern=*", nil, http.StatusBadRequest, "INVALID_REQUEST", "path")
	e.execdFail("POST", "/code/context", map[string]any{"language": "python"}, http.StatusNotFound, "NOT_FOUND", "code contexts")
	e.execdFail("GET", "/directories/list?path="+e.dir+"&depth="+strconv.Itoa(-1), nil, http.StatusBadRequest, "INVALID_REQUEST", "depth")
}
