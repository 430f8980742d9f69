package agent_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"maps"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
)

// q is a query with a path.
func q(path string, more ...string) string {
	v := url.Values{"path": {path}}
	for i := 0; i+1 < len(more); i += 2 {
		v.Set(more[i], more[i+1])
	}
	return "?" + v.Encode()
}

func TestFilesWriteReadStreamed(t *testing.T) {
	e := newEnv(t)
	const size = 64 << 20
	sent := sha256.New()
	body := io.TeeReader(io.LimitReader(rand.NewChaCha8([32]byte{1}), size), sent)
	var info apiv1.EntryInfo
	e.call(http.MethodPut, "/files"+q("deep/er/big.bin"), body, http.StatusOK, &info)
	if info.Size != size || info.Type != "file" || info.Path != filepath.Join(e.dir, "deep/er/big.bin") || info.Mode != "0644" {
		t.Errorf("written %+v", info)
	}
	resp := e.request(e.ctx, http.MethodGet, "/files"+q(info.Path), nil)
	defer resp.Body.Close()
	got := sha256.New()
	n, err := io.Copy(got, resp.Body)
	if err != nil || n != size || !bytes.Equal(got.Sum(nil), sent.Sum(nil)) {
		t.Errorf("read back %d bytes (%v), sha256 match %v", n, err, bytes.Equal(got.Sum(nil), sent.Sum(nil)))
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	if left, _ := filepath.Glob(filepath.Join(e.dir, "deep/er/.sbx-upload-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestFilesFailedUploadLeavesNothing(t *testing.T) {
	e := newEnv(t)
	os.WriteFile(filepath.Join(e.dir, "keep.txt"), []byte("old"), 0o600)
	req, _ := http.NewRequestWithContext(e.ctx, http.MethodPut, e.url+"/files"+q("keep.txt"), io.MultiReader(strings.NewReader("new"), failing{}))
	req.Header.Set(apiv1.AccessTokenHeader, token)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	e.eventually("the upload to be abandoned", func() bool {
		left, _ := filepath.Glob(filepath.Join(e.dir, ".sbx-upload-*"))
		return len(left) == 0
	})
	if data, _ := os.ReadFile(filepath.Join(e.dir, "keep.txt")); string(data) != "old" {
		t.Errorf("keep.txt holds %q", data)
	}
	var info apiv1.EntryInfo
	e.call(http.MethodPut, "/files"+q("keep.txt"), strings.NewReader("new"), http.StatusOK, &info)
	if info.Mode != "0600" || info.Size != 3 {
		t.Errorf("rewritten %+v, want its mode kept", info)
	}
}

// A write may set the file's mode; a bad mode is refused and writes nothing.
func TestFilesWriteMode(t *testing.T) {
	e := newEnv(t)
	var info apiv1.EntryInfo
	e.call(http.MethodPut, "/files"+q("bin/tool", "mode", "755"), strings.NewReader("#!/bin/sh\n"), http.StatusOK, &info)
	if info.Mode != "0755" {
		t.Errorf("written %+v, want mode 0755", info)
	}
	e.call(http.MethodPut, "/files"+q("bin/tool", "mode", "600"), strings.NewReader("x"), http.StatusOK, &info)
	if info.Mode != "0600" {
		t.Errorf("rewritten %+v, want mode 0600", info)
	}
	e.call(http.MethodPut, "/files"+q("bin/other", "mode", "999"), strings.NewReader("x"), http.StatusBadRequest, nil)
	if _, err := os.Stat(filepath.Join(e.dir, "bin/other")); err == nil {
		t.Errorf("a refused write left bin/other")
	}
}

// failing is a body that breaks mid-way.
type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

func TestFilesMultipart(t *testing.T) {
	e := newEnv(t)
	files := map[string]string{"a.txt": "alpha", "sub/dir/b.txt": "beta", "./c.txt": "gamma"}
	var list apiv1.EntryList
	e.call(http.MethodPost, "/files"+q("up"), multipartBody(t, files), http.StatusOK, &list)
	if len(list.Items) != 3 {
		t.Fatalf("uploaded %+v", list.Items)
	}
	for name, content := range files {
		if data, err := os.ReadFile(filepath.Join(e.dir, "up", name)); err != nil || string(data) != content {
			t.Errorf("%s: %q, %v", name, data, err)
		}
	}
	for _, bad := range []string{"../escape.txt", "/etc/evil", "sub/../../evil"} {
		e.fail(http.MethodPost, "/files"+q("up"), multipartBody(t, map[string]string{bad: "x"}), http.StatusBadRequest)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "escape.txt")); err == nil {
		t.Error("a part escaped its directory")
	}
}

// multipartBody is a multipart/form-data body of files.
func multipartBody(t *testing.T, files map[string]string) io.Reader {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		part, _ := mw.CreateFormFile("file", name)
		io.WriteString(part, files[name])
	}
	mw.Close()
	return &typedBody{Reader: &buf, contentType: mw.FormDataContentType()}
}

func TestFilesEntries(t *testing.T) {
	e := newEnv(t)
	for _, f := range []string{"a/b/c/d.txt", "a/x.txt", "z.txt"} {
		e.call(http.MethodPut, "/files"+q(f), strings.NewReader(f), http.StatusOK, nil)
	}
	os.Symlink("z.txt", filepath.Join(e.dir, "link"))

	paths := func(depth string) []string {
		var list apiv1.EntryList
		query := q(e.dir, "depth", depth)
		if depth == "" {
			query = q(e.dir)
		}
		e.call(http.MethodGet, "/files/list"+query, nil, http.StatusOK, &list)
		var out []string
		for _, it := range list.Items {
			out = append(out, strings.TrimPrefix(it.Path, e.dir+"/")+":"+it.Type)
		}
		return out
	}
	if got, want := paths(""), []string{"a:dir", "link:symlink", "z.txt:file"}; !slices.Equal(got, want) {
		t.Errorf("depth 1: %v, want %v", got, want)
	}
	if got, want := paths("3"), []string{"a:dir", "a/b:dir", "a/b/c:dir", "a/x.txt:file", "link:symlink", "z.txt:file"}; !slices.Equal(got, want) {
		t.Errorf("depth 3: %v, want %v", got, want)
	}

	var info apiv1.EntryInfo
	e.call(http.MethodGet, "/files/stat"+q("link"), nil, http.StatusOK, &info)
	if info.Type != "symlink" || info.Target != "z.txt" || info.Name != "link" {
		t.Errorf("stat link: %+v", info)
	}
	e.call(http.MethodGet, "/files/stat"+q("z.txt"), nil, http.StatusOK, &info)
	if info.Type != "file" || info.Size != 5 {
		t.Errorf("stat z.txt: %+v", info)
	}

	e.call(http.MethodPost, "/files/mkdir", apiv1.PathRequest{Path: "new/dir"}, http.StatusCreated, &info)
	if info.Type != "dir" || info.Path != filepath.Join(e.dir, "new/dir") {
		t.Errorf("mkdir: %+v", info)
	}
	e.call(http.MethodPost, "/files/mkdir", apiv1.PathRequest{Path: "new/dir"}, http.StatusOK, nil)
	e.fail(http.MethodPost, "/files/mkdir", apiv1.PathRequest{Path: "z.txt"}, http.StatusConflict)

	e.call(http.MethodPost, "/files/move", apiv1.MoveRequest{From: "z.txt", To: "new/dir/z2.txt"}, http.StatusOK, &info)
	if info.Path != filepath.Join(e.dir, "new/dir/z2.txt") || info.Size != 5 {
		t.Errorf("move: %+v", info)
	}
	e.fail(http.MethodPost, "/files/move", apiv1.MoveRequest{From: "z.txt", To: "y.txt"}, http.StatusNotFound)
	e.fail(http.MethodPost, "/files/move", apiv1.MoveRequest{From: "a/x.txt", To: "a/b"}, http.StatusConflict) // a directory is there

	e.call(http.MethodDelete, "/files"+q("a"), nil, http.StatusNoContent, nil)
	e.fail(http.MethodGet, "/files/stat"+q("a/b/c/d.txt"), nil, http.StatusNotFound)
	e.fail(http.MethodDelete, "/files"+q("a"), nil, http.StatusNotFound)
}

func TestFilesErrors(t *testing.T) {
	e := newEnv(t)
	e.call(http.MethodPut, "/files"+q("file"), strings.NewReader("x"), http.StatusOK, nil)
	for _, c := range []struct {
		method, path string
		body         io.Reader
		code         int
		detail       string
	}{
		{http.MethodGet, "/files" + q("missing"), nil, 404, e.dir + "/missing: not found"},
		{http.MethodGet, "/files" + q(e.dir), nil, 400, e.dir + ": is a directory"},
		{http.MethodPut, "/files" + q(e.dir), strings.NewReader("x"), 400, "is a directory"},
		{http.MethodPut, "/files" + q("file/sub"), strings.NewReader("x"), 400, "not a directory"},
		{http.MethodGet, "/files/list" + q("file"), nil, 400, "file: not a directory"},
		{http.MethodGet, "/files/list" + q(".", "depth", "-1"), nil, 400, "depth"},
		{http.MethodGet, "/files/stat" + q("missing"), nil, 404, "not found"},
		{http.MethodGet, "/files", nil, 400, "path"},
		{http.MethodPost, "/files" + q("up"), strings.NewReader("not multipart"), 415, "multipart"},
	} {
		got := e.fail(c.method, c.path, c.body, c.code)
		if !strings.Contains(got.Detail, c.detail) {
			t.Errorf("%s %s: %q, want %q in it", c.method, c.path, got.Detail, c.detail)
		}
	}
}

func TestFilesPermissionDenied(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("root is never denied")
	}
	e := newEnv(t)
	secret := filepath.Join(e.dir, "secret")
	os.WriteFile(secret, []byte("x"), 0)
	if got := e.fail(http.MethodGet, "/files"+q(secret), nil, http.StatusForbidden); !strings.Contains(got.Detail, "permission denied") {
		t.Errorf("detail %q", got.Detail)
	}
}

func TestFilesWatch(t *testing.T) {
	e := newEnv(t)
	resp := e.request(e.ctx, http.MethodGet, "/files/watch"+q(e.dir, "recursive", "true"), nil)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != apiv1.NDJSON {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	// The headers came: the watch is in place.
	f := filepath.Join(e.dir, "f.txt")
	sub := filepath.Join(e.dir, "sub")
	steps := []struct {
		do   func()
		want apiv1.FileEvent
	}{
		{func() { os.WriteFile(f, nil, 0o644) }, apiv1.FileEvent{Type: "create", Path: f}},
		{func() { os.WriteFile(f, []byte("data"), 0o644) }, apiv1.FileEvent{Type: "write", Path: f}},
		{func() { os.Mkdir(sub, 0o755) }, apiv1.FileEvent{Type: "create", Path: sub}},
		{func() { os.Rename(f, filepath.Join(e.dir, "g.txt")) }, apiv1.FileEvent{Type: "rename", Path: f}},
		{func() { os.Remove(filepath.Join(e.dir, "g.txt")) }, apiv1.FileEvent{Type: "remove", Path: filepath.Join(e.dir, "g.txt")}},
	}
	events := make(chan apiv1.FileEvent)
	go eachEvent(resp.Body, func(ev apiv1.FileEvent) bool {
		events <- ev
		return true
	})
	for _, s := range steps {
		s.do()
		waitEvent(t, e, events, s.want)
	}
	// The new subdirectory is watched too, once its create was seen.
	inSub := filepath.Join(sub, "h.txt")
	os.WriteFile(inSub, nil, 0o644)
	waitEvent(t, e, events, apiv1.FileEvent{Type: "create", Path: inSub})
}

func waitEvent(t *testing.T, e *env, events <-chan apiv1.FileEvent, want apiv1.FileEvent) {
	t.Helper()
	for {
		select {
		case ev := <-events:
			if ev.Type == want.Type && ev.Path == want.Path && !ev.At.IsZero() {
				return
			}
		case <-e.ctx.Done():
			t.Fatalf("no %s event for %s", want.Type, want.Path)
		}
	}
}
