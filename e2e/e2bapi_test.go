package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// E2B's control plane refuses what it is given wrong with a 4xx in E2B's
// error shape ({"code": status, "message"}) naming the problem, never a
// 5xx, and no key, a wrong key or another org's sandbox reaches nothing.
func TestE2BAPIRefusesBadInput(t *testing.T) {
	s := startServer(t, serverOpts{})
	sb := s.create(map[string]any{"waitReady": true})
	call := func(key, method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, s.url+"/e2b"+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("X-API-KEY", key)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &e) != nil || e.Code != resp.StatusCode {
			t.Errorf("%s %s: %d %q is not E2B's error shape", method, path, resp.StatusCode, data)
		}
		return resp.StatusCode, e.Message
	}
	for _, c := range []struct {
		key, method, path, body string
		status                  int
		says                    string
	}{
		{"", "GET", "/v2/sandboxes", "", 401, "X-API-KEY"},
		{"sbx_wrong", "GET", "/v2/sandboxes", "", 401, ""},
		{s.key, "POST", "/v2/sandboxes", "{", 400, "JSON"},
		{s.key, "POST", "/v2/sandboxes", `{"templateID":"base","secure":false}`, 400, "secure"},
		{s.key, "POST", "/v2/sandboxes", `{"templateID":"base","mcp":{"x":{}}}`, 400, "mcp"},
		{s.key, "POST", "/v2/sandboxes", `{"templateID":"base","network":{"rules":{"a":[]}}}`, 400, "network.rules"},
		{s.key, "POST", "/v2/sandboxes", `{"templateID":"base","timeout":-5}`, 400, "timeout"},
		{s.key, "GET", "/v2/sandboxes?state=gone", "", 400, "state"},
		{s.key, "GET", "/v2/sandboxes?limit=0", "", 400, "limit"},
		{s.key, "GET", "/v2/sandboxes?metadata=a%3D%25zz", "", 400, "metadata"},
		{s.key, "GET", "/sandboxes/nope", "", 404, "nope"},
		{s.key, "DELETE", "/sandboxes/nope", "", 404, "nope"},
		{s.key, "POST", "/sandboxes/" + sb.SandboxID + "/timeout", `{}`, 400, "timeout"},
		{s.key, "POST", "/sandboxes/" + sb.SandboxID + "/refreshes", `{"duration":999999}`, 400, "duration"},
		{s.key, "POST", "/sandboxes/" + sb.SandboxID + "/pause", `{"memory":false}`, 400, "memory"},
		{s.key, "POST", "/sandboxes/" + sb.SandboxID + "/fork", `{"timeout":0}`, 400, "timeout"},
		{s.key, "PUT", "/sandboxes/" + sb.SandboxID + "/network", `{"allowPublicTraffic":true}`, 400, "allowPublicTraffic"},
		{s.key, "GET", "/sandboxes/" + sb.SandboxID + "/logs?limit=0", "", 400, "limit"},
		{s.key, "GET", "/sandboxes/" + sb.SandboxID + "/logs?start=yesterday", "", 400, "start"},
		{s.key, "GET", "/sandboxes/nope/logs", "", 404, "nope"},
		{s.key, "GET", "/nowhere", "", 404, "no E2B route"},
	} {
		status, says := call(c.key, c.method, c.path, c.body)
		if status != c.status || !strings.Contains(says, c.says) {
			t.Errorf("%s %s %s: %d %q, want %d naming %q", c.method, c.path, c.body, status, says, c.status, c.says)
		}
	}
	// Another org's key finds nothing of this org's.
	var other struct{ Secret string }
	s.call("POST", "/api/v1/admin/orgs", map[string]any{"name": "e2b-other"}, http.StatusCreated, &other)
	if status, _ := call(other.Secret, "GET", "/sandboxes/"+sb.SandboxID, ""); status != http.StatusNotFound {
		t.Errorf("another org's key read the sandbox: %d", status)
	}
	if status, _ := call(other.Secret, "GET", "/sandboxes/"+sb.SandboxID+"/logs", ""); status != http.StatusNotFound {
		t.Errorf("another org's key read the sandbox's logs: %d", status)
	}
	if status, _ := call(other.Secret, "DELETE", "/sandboxes/"+sb.SandboxID, ""); status != http.StatusNotFound {
		t.Errorf("another org's key killed the sandbox: %d", status)
	}
	if s.get(sb.ID).State != "running" {
		t.Error("the refused calls touched the sandbox")
	}
}
