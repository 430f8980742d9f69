package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/seal"
	"github.com/sbxdev/sbx/ledger"
)

// Every kind of bad request gets a 4xx envelope naming the problem, and
// changes nothing.
func TestBadRequests(t *testing.T) {
	s := startServer(t, serverOpts{})
	sb := s.create(map[string]any{"waitReady": true})
	cases := []struct {
		name, method, path string
		body               any
		status             int
		detail, field      string
	}{
		{"unknown field", "POST", "/api/v1/sandboxes", `{"templateID":"base","colour":"red"}`, 400, `unknown field "colour"`, "colour"},
		{"case matters", "POST", "/api/v1/sandboxes", `{"templateId":"base"}`, 400, `unknown field "templateId"`, "templateId"},
		{"unknown nested field", "POST", "/api/v1/sandboxes", `{"templateID":"base","gpu":{"type":"h100","vram":8}}`, 400, `unknown field "gpu.vram"`, "gpu.vram"},
		{"missing template", "POST", "/api/v1/sandboxes", `{}`, 400, "templateID is required", "templateID"},
		{"bad template", "POST", "/api/v1/sandboxes", `{"templateID":"../etc"}`, 400, "templateID", "templateID"},
		{"string timeout", "POST", "/api/v1/sandboxes", `{"templateID":"base","timeout":"1h"}`, 400, `"timeout" must be an integer`, "timeout"},
		{"fractional timeout", "POST", "/api/v1/sandboxes", `{"templateID":"base","timeout":1.5}`, 400, `"timeout" must be an integer`, "timeout"},
		{"timeout over max", "POST", "/api/v1/sandboxes", `{"templateID":"base","timeout":86401}`, 400, "between 1 and 86400 seconds", "timeout"},
		{"zero timeout", "POST", "/api/v1/sandboxes", `{"templateID":"base","timeout":0}`, 400, "positive", "timeout"},
		{"bad kind", "POST", "/api/v1/sandboxes", `{"templateID":"base","kind":"pet"}`, 400, "kind", "kind"},
		{"bad gpu fraction", "POST", "/api/v1/sandboxes", `{"templateID":"base","gpu":{"type":"h100","fraction":30}}`, 400, "25, 50, 75 or 100", "gpu.fraction"},
		{"shared multi gpu", "POST", "/api/v1/sandboxes", `{"templateID":"base","gpu":{"type":"h100","count":2,"fraction":50}}`, 400, "gpu.count 1", "gpu.fraction"},
		{"bad cpu", "POST", "/api/v1/sandboxes", `{"templateID":"base","cpu":0}`, 400, "cpu must be", "cpu"},
		{"bad memory", "POST", "/api/v1/sandboxes", `{"templateID":"base","memoryMB":1}`, 400, "memoryMB", "memoryMB"},
		{"bad env name", "POST", "/api/v1/sandboxes", `{"templateID":"base","envVars":{"1X":"y"}}`, 400, "environment variable name", "envVars.1X"},
		{"NUL in env", "POST", "/api/v1/sandboxes", `{"templateID":"base","envVars":{"X":"a\u0000b"}}`, 400, "environment variable X holds a NUL byte", "envVars.X"},
		{"not json", "POST", "/api/v1/sandboxes", `{"templateID":`, 400, "not valid JSON", ""},
		{"not an object", "POST", "/api/v1/sandboxes", `["base"]`, 400, "must be a JSON object", ""},
		{"two objects", "POST", "/api/v1/sandboxes", `{"templateID":"base"}{}`, 400, "must hold one JSON object and nothing after it", ""},
		{"bad state filter", "GET", "/api/v1/sandboxes?state=sleeping", nil, 400, `state "sleeping"`, "state"},
		{"bad limit", "GET", "/api/v1/sandboxes?limit=0", nil, 400, "limit", "limit"},
		{"unknown query", "GET", "/api/v1/sandboxes?colour=red", nil, 400, `unknown query parameter "colour"`, "colour"},
		{"unknown query on get", "GET", "/api/v1/sandboxes/" + sb.ID + "?verbose=1", nil, 400, `unknown query parameter "verbose"; this endpoint takes none`, "verbose"},
		{"unknown query on metrics", "GET", "/api/v1/sandboxes/" + sb.ID + "/metrics?x=1", nil, 400, `unknown query parameter "x"`, "x"},
		{"unknown query on me", "GET", "/api/v1/me?x=1", nil, 400, `unknown query parameter "x"; this endpoint takes none`, "x"},
		{"unknown query on summary", "GET", "/api/v1/observability/summary?x=1", nil, 400, `unknown query parameter "x"`, "x"},
		{"unknown query on org get", "GET", "/api/v1/org/default/sandboxes/" + sb.SandboxID + "?x=1", nil, 400, `unknown query parameter "x"`, "x"},
		{"unknown query on org usage", "GET", "/api/v1/org/default/sandboxes/usage?x=1", nil, 400, `unknown query parameter "x"`, "x"},
		{"bad cursor", "GET", "/api/v1/sandboxes?cursor=nope", nil, 400, "cursor", ""},
		{"bad metadata filter", "GET", "/api/v1/sandboxes?metadata=novalue", nil, 400, "key=value", "metadata"},
		{"bad log cursor", "GET", "/api/v1/sandboxes/" + sb.ID + "/logs?cursor=zz", nil, 400, "cursor", ""},
		{"refresh too long", "POST", "/api/v1/sandboxes/" + sb.ID + "/refreshes", `{"duration":3601}`, 400, "at most 3600", "duration"},
		{"timeout required", "POST", "/api/v1/sandboxes/" + sb.ID + "/timeout", `{}`, 400, "timeout is required", "timeout"},
		{"pause takes no fields", "POST", "/api/v1/sandboxes/" + sb.ID + "/pause", `{"reason":"x"}`, 400, `unknown field "reason"`, "reason"},
		{"unknown sandbox", "GET", "/api/v1/sandboxes/inope", nil, 404, "sandbox inope not found", ""},
		{"unknown org", "GET", "/api/v1/org/nope/sandboxes", nil, 404, "org nope not found", ""},
		{"unknown route", "GET", "/api/v1/nothing", nil, 404, "no route", ""},
	}
	for _, stale := range []string{"timeoutMs", "autoResume", "secure", "allow_internet_access", "network", "mcp", "volume_mounts", "volumeMounts"} {
		cases = append(cases, struct {
			name, method, path string
			body               any
			status             int
			detail, field      string
		}{"stale " + stale, "POST", "/api/v1/sandboxes", `{"templateID":"base","` + stale + `":1}`, 400, `"` + stale + `" is not supported`, stale})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.t = t
			e := s.fail(c.method, c.path, c.body, c.status, c.detail)
			if c.field != "" && (len(e.Errors) == 0 || e.Errors[0].Field != c.field) {
				t.Errorf("errors %+v, want field %s", e.Errors, c.field)
			}
		})
	}
	s.t = t
	// Nothing changed: one sandbox, still running.
	list := s.listAll("")
	if len(list) != 1 || list[0].State != "running" || len(s.get(sb.ID).Timeline) != 2 {
		t.Fatalf("bad requests changed the ledger: %+v", list)
	}
}

func TestAuthAndTenancy(t *testing.T) {
	s := startServer(t, serverOpts{})
	sb := s.create(map[string]any{"waitReady": true})
	s.failKey("", "GET", "/api/v1/sandboxes", nil, 401, "an API key is required")
	s.failKey("sbx_wrong", "GET", "/api/v1/sandboxes", nil, 401, "not valid")
	req, _ := http.NewRequest("GET", s.url+"/api/v1/me", nil)
	req.Header.Set("X-API-Key", s.key)
	resp, err := s.http.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("X-API-Key: %v %v", err, resp.Status)
	}
	resp.Body.Close()

	// A second org, made directly in the ledger (the tenancy API comes later).
	other := s.otherOrgKey(t)
	for _, path := range []string{"/api/v1/sandboxes/" + sb.ID, "/api/v1/sandboxes/" + sb.SandboxID, "/api/v1/sandboxes/" + sb.ID + "/logs"} {
		s.failKey(other, "GET", path, nil, 404, "not found")
	}
	s.failKey(other, "DELETE", "/api/v1/sandboxes/"+sb.ID, nil, 404, "not found")
	s.failKey(other, "POST", "/api/v1/sandboxes/"+sb.ID+"/pause", nil, 404, "not found")
	s.failKey(other, "GET", "/api/v1/org/default/sandboxes", nil, 404, "org default not found")
	status, body := s.doKey(other, "GET", "/api/v1/sandboxes", nil)
	if status != 200 || strings.Contains(string(body), sb.ID) {
		t.Fatalf("another org lists: %d %s", status, body)
	}
	if got := s.get(sb.ID); got.State != "running" {
		t.Fatalf("another org's attempts changed the sandbox: %s", got.State)
	}
}

// otherOrgKey creates an org "other" in the running server's ledger and returns its admin key.
func (s *server) otherOrgKey(t *testing.T) string {
	key, err := seal.LoadOrCreateKey(filepath.Join(s.dataDir, "seal.key"))
	if err != nil {
		t.Fatal(err)
	}
	store, err := ledger.Open(context.Background(), filepath.Join(s.dataDir, "ledger.db"), key)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	now := sbx.SystemClock{}.Now()
	org, _, _, err := store.CreateOrg(context.Background(), "other", now)
	if err != nil {
		t.Fatal(err)
	}
	_, secret, err := store.CreateAPIKey(context.Background(), sbx.APIKey{OrgID: org.ID, Name: "admin"}, now)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}
