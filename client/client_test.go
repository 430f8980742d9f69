package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
)

const testKey = "sbx_test_key"

// request is what the fake server saw of one request.
type request struct {
	Method, Path, Query, Auth, ContentType string
	Body                                   map[string]any // nil when there was no body
}

// fake is an API server that records requests and answers one canned reply.
type fake struct {
	mu       sync.Mutex
	requests []request
	status   int
	reply    string
}

func newFake(t *testing.T, status int, reply string) (*fake, *client.Client) {
	t.Helper()
	f := &fake{status: status, reply: reply}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		req := request{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery,
			Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type")}
		if len(data) > 0 {
			if err := json.Unmarshal(data, &req.Body); err != nil {
				t.Errorf("%s %s: body is not a JSON object: %q", r.Method, r.URL, data)
			}
		}
		f.mu.Lock()
		f.requests = append(f.requests, req)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		io.WriteString(w, f.reply)
	}))
	t.Cleanup(srv.Close)
	return f, client.New(client.Options{URL: srv.URL + "/", APIKey: testKey})
}

// last is the one request the fake saw since the previous call.
func (f *fake) last(t *testing.T) request {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) != 1 {
		t.Fatalf("server saw %d requests, want 1: %+v", len(f.requests), f.requests)
	}
	r := f.requests[0]
	f.requests = nil
	if r.Auth != "Bearer "+testKey {
		t.Errorf("%s %s: Authorization = %q", r.Method, r.Path, r.Auth)
	}
	if (r.Body != nil) != (r.ContentType == "application/json") {
		t.Errorf("%s %s: Content-Type %q with body %v", r.Method, r.Path, r.ContentType, r.Body)
	}
	return r
}

func check(t *testing.T, got request, method, path, query string, body map[string]any) {
	t.Helper()
	if got.Method != method || got.Path != path || got.Query != query {
		t.Errorf("request = %s %s?%s, want %s %s?%s", got.Method, got.Path, got.Query, method, path, query)
	}
	if !reflect.DeepEqual(got.Body, body) {
		t.Errorf("%s %s: body = %#v, want %#v", method, path, got.Body, body)
	}
}

const sandboxJSON = `{"sandboxID":"sbx-abc","id":"0f1e2d3c-uuid","state":"running","templateID":"base"}`

func TestCreate(t *testing.T) {
	f, c := newFake(t, http.StatusCreated, sandboxJSON)
	ctx := context.Background()
	sb, err := c.Create(ctx, "base", &client.CreateOptions{
		Timeout: 90*time.Second + 500*time.Millisecond, WaitReady: true, AutoPause: true,
		EnvVars: map[string]string{"FOO": "bar"}, Metadata: map[string]string{"purpose": "demo"},
		CPU: 1.5, MemoryMB: 1024, GPU: &apiv1.GPU{Type: "h100", Fraction: 50}, Kind: "runtime",
	})
	if err != nil {
		t.Fatal(err)
	}
	check(t, f.last(t), "POST", "/api/v1/sandboxes", "", map[string]any{
		"templateID": "base", "timeout": 91.0, "waitReady": true, "autoPause": true,
		"envVars": map[string]any{"FOO": "bar"}, "metadata": map[string]any{"purpose": "demo"},
		"cpu": 1.5, "memoryMB": 1024.0, "gpu": map[string]any{"type": "h100", "fraction": 50.0}, "kind": "runtime",
	})
	if sb.ID() != "0f1e2d3c-uuid" || sb.SandboxID() != "sbx-abc" || sb.Data().State != "running" {
		t.Errorf("handle = %s %s %+v", sb.ID(), sb.SandboxID(), sb.Data())
	}

	if _, err := c.Create(ctx, "base", nil); err != nil {
		t.Fatal(err)
	}
	check(t, f.last(t), "POST", "/api/v1/sandboxes", "", map[string]any{"templateID": "base"})
}

func TestSandboxActions(t *testing.T) {
	f, c := newFake(t, http.StatusOK, sandboxJSON)
	ctx := context.Background()
	sb, err := c.Connect(ctx, "sbx-abc", &client.ConnectOptions{Timeout: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	check(t, f.last(t), "POST", "/api/v1/sandboxes/sbx-abc/connect", "", map[string]any{"timeout": 1800.0})

	base := "/api/v1/sandboxes/0f1e2d3c-uuid"
	steps := []struct {
		name string
		call func() error
		want request
	}{
		{"pause", func() error { return sb.Pause(ctx) }, request{Method: "POST", Path: base + "/pause", Body: map[string]any{}}},
		{"hibernate", func() error { return sb.Hibernate(ctx) }, request{Method: "POST", Path: base + "/pause", Body: map[string]any{"hibernate": true}}},
		{"resume keeps", func() error { return sb.Resume(ctx, 0) }, request{Method: "POST", Path: base + "/resume", Body: map[string]any{}}},
		{"resume", func() error { return sb.Resume(ctx, 5*time.Minute) }, request{Method: "POST", Path: base + "/resume", Body: map[string]any{"timeout": 300.0}}},
		{"refresh default", func() error { return sb.Refresh(ctx, 0) }, request{Method: "POST", Path: base + "/refreshes", Body: map[string]any{}}},
		{"refresh", func() error { return sb.Refresh(ctx, 10*time.Minute) }, request{Method: "POST", Path: base + "/refreshes", Body: map[string]any{"duration": 600.0}}},
		{"timeout", func() error { return sb.SetTimeout(ctx, time.Hour) }, request{Method: "POST", Path: base + "/timeout", Body: map[string]any{"timeout": 3600.0}}},
		{"connect", func() error { return sb.Connect(ctx, nil) }, request{Method: "POST", Path: base + "/connect", Body: map[string]any{}}},
		{"info", func() error { _, err := sb.Info(ctx); return err }, request{Method: "GET", Path: base}},
		{"logs", func() error { _, err := sb.Logs(ctx, "c9", 20); return err }, request{Method: "GET", Path: base + "/logs", Query: "cursor=c9&limit=20"}},
		{"metrics", func() error { _, err := sb.Metrics(ctx); return err }, request{Method: "GET", Path: base + "/metrics"}},
		{"delete", func() error { return sb.Delete(ctx) }, request{Method: "DELETE", Path: base}},
	}
	for _, s := range steps {
		f.reply = `{"sandboxID":"sbx-abc","id":"0f1e2d3c-uuid","state":"` + s.name + `"}`
		if err := s.call(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		check(t, f.last(t), s.want.Method, s.want.Path, s.want.Query, s.want.Body)
		answersSandbox := s.name != "logs" && s.name != "metrics"
		if got := sb.Data().State; answersSandbox && got != s.name {
			t.Errorf("%s: Data().State = %q, want the answer's", s.name, got)
		}
	}
}

func TestListAndGet(t *testing.T) {
	f, c := newFake(t, http.StatusOK, `{"items":[{"sandboxID":"a"},{"sandboxID":"b"}],"next_cursor":"n2"}`)
	ctx := context.Background()
	list, err := c.List(ctx, client.ListOptions{
		States: []string{"running", "paused"}, Template: "base",
		Metadata: map[string]string{"b": "2", "a": "1"}, Limit: 5, Cursor: "n1",
	})
	if err != nil {
		t.Fatal(err)
	}
	check(t, f.last(t), "GET", "/api/v1/sandboxes", "cursor=n1&limit=5&metadata=a%3D1&metadata=b%3D2&state=running&state=paused&template=base", nil)
	if len(list.Items) != 2 || list.NextCursor != "n2" {
		t.Errorf("list = %+v", list)
	}

	if _, err := c.List(ctx, client.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	check(t, f.last(t), "GET", "/api/v1/sandboxes", "", nil)

	f.reply = sandboxJSON
	if _, err := c.Get(ctx, "a/b c"); err != nil {
		t.Fatal(err)
	}
	check(t, f.last(t), "GET", "/api/v1/sandboxes/a%2Fb%20c", "", nil)
}

func TestOrg(t *testing.T) {
	f, c := newFake(t, http.StatusOK, `{"items":[]}`)
	ctx := context.Background()
	if _, err := c.OrgSandboxes(ctx, "default", client.OrgListOptions{States: []string{"killed"}, ProjectID: "p1", Limit: 2}); err != nil {
		t.Fatal(err)
	}
	check(t, f.last(t), "GET", "/api/v1/org/default/sandboxes", "limit=2&project_id=p1&state=killed", nil)

	calls := []struct {
		call         func() error
		method, path string
	}{
		{func() error { _, err := c.OrgUsage(ctx, "default"); return err }, "GET", "/api/v1/org/default/sandboxes/usage"},
		{func() error { _, err := c.OrgSandbox(ctx, "default", "sbx-1"); return err }, "GET", "/api/v1/org/default/sandboxes/sbx-1"},
		{func() error { _, err := c.OrgDeleteSandbox(ctx, "default", "sbx-1"); return err }, "DELETE", "/api/v1/org/default/sandboxes/sbx-1"},
		{func() error { _, err := c.OrgLogs(ctx, "default", "sbx-1", "", 0); return err }, "GET", "/api/v1/org/default/sandboxes/sbx-1/logs"},
		{func() error { _, err := c.Me(ctx); return err }, "GET", "/api/v1/me"},
		{func() error { _, err := c.Summary(ctx); return err }, "GET", "/api/v1/observability/summary"},
	}
	f.reply = `{}`
	for _, cl := range calls {
		if err := cl.call(); err != nil {
			t.Fatalf("%s %s: %v", cl.method, cl.path, err)
		}
		check(t, f.last(t), cl.method, cl.path, "", nil)
	}
}

func TestErrorEnvelope(t *testing.T) {
	f, c := newFake(t, http.StatusConflict, `{"code":409,"type":"conflict","detail":"cannot pause sandbox sbx-abc: it is killed","errors":[{"field":"state","message":"is killed"}]}`)
	_, err := c.Pause(context.Background(), "sbx-abc")
	f.last(t)
	var apiErr *apiv1.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %T %v, want *apiv1.Error", err, err)
	}
	want := apiv1.Error{Code: 409, Type: "conflict", Detail: "cannot pause sandbox sbx-abc: it is killed",
		Errors: []apiv1.FieldError{{Field: "state", Message: "is killed"}}}
	if !reflect.DeepEqual(*apiErr, want) {
		t.Errorf("error = %+v, want %+v", *apiErr, want)
	}
	if err.Error() != want.Detail {
		t.Errorf("Error() = %q", err.Error())
	}
}

func TestErrorWithoutEnvelope(t *testing.T) {
	f, c := newFake(t, http.StatusBadGateway, "upstream went away\n")
	_, err := c.Get(context.Background(), "sbx-abc")
	f.last(t)
	var apiErr *apiv1.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %T %v, want *apiv1.Error", err, err)
	}
	if apiErr.Code != 502 || apiErr.Type != "provider_error" || apiErr.Detail != "502 Bad Gateway: upstream went away" {
		t.Errorf("error = %+v", *apiErr)
	}
}

func TestDefaultURL(t *testing.T) {
	if got := client.New(client.Options{}).URL(); got != "http://127.0.0.1:7070" {
		t.Errorf("URL() = %q", got)
	}
}
