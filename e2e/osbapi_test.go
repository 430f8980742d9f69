package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// OpenSandbox's lifecycle API and execd routing refuse what they are given
// wrong with a 4xx in OpenSandbox's error shape ({"code", "message"})
// naming the problem, never a 5xx; no key, a wrong key or another org's
// key reaches nothing, nor does execd without the sandbox's token.
func TestOpenSandboxAPIRefusesBadInput(t *testing.T) {
	s := startServer(t, serverOpts{})
	sb := s.create(map[string]any{"waitReady": true})
	id := sb.SandboxID
	call := func(key, method, path, body string, header ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, s.url+"/opensandbox"+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("OPEN-SANDBOX-API-KEY", key)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var e struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		if resp.StatusCode >= 400 && (json.Unmarshal(data, &e) != nil || !strings.HasPrefix(e.Code, "SBX::") || e.Message == "") {
			t.Errorf("%s %s: %d %q is not OpenSandbox's error shape", method, path, resp.StatusCode, data)
		}
		return resp.StatusCode, e.Message
	}
	const base = `"image":{"uri":"base"},"entrypoint":["tail","-f","/dev/null"],"resourceLimits":{"cpu":"1","memory":"512Mi"}`
	for _, c := range []struct {
		key, method, path, body string
		status                  int
		says                    string
	}{
		{"", "GET", "/v1/sandboxes", "", 401, "OPEN-SANDBOX-API-KEY"},
		{"sbx_wrong", "GET", "/v1/sandboxes", "", 401, ""},
		{s.key, "POST", "/v1/sandboxes", "{", 400, ""},
		{s.key, "POST", "/v1/sandboxes", `{` + base + `,"surprise":1}`, 400, "surprise"},
		{s.key, "POST", "/v1/sandboxes", `{"entrypoint":["tail","-f","/dev/null"]}`, 400, "image.uri"},
		{s.key, "POST", "/v1/sandboxes", `{"image":{"uri":"base","auth":{"username":"u","password":"p"}}}`, 400, "image.auth"},
		{s.key, "POST", "/v1/sandboxes", `{"snapshotId":"x"}`, 400, "snapshotId"},
		{s.key, "POST", "/v1/sandboxes", `{"image":{"uri":"base"},"entrypoint":["python","app.py"]}`, 400, "entrypoint"},
		{s.key, "POST", "/v1/sandboxes", `{"image":{"uri":"base"},"resourceLimits":{"cpu":"-1"}}`, 400, "resourceLimits.cpu"},
		{s.key, "POST", "/v1/sandboxes", `{"image":{"uri":"base"},"resourceLimits":{"memory":"2Qi"}}`, 400, "resourceLimits.memory"},
		{s.key, "POST", "/v1/sandboxes", `{"image":{"uri":"base"},"resourceLimits":{"pids":"10"}}`, 400, "resourceLimits.pids"},
		{s.key, "POST", "/v1/sandboxes", `{"image":{"uri":"base"},"resourceRequests":{"cpu":"1"}}`, 400, "resourceRequests"},
		{s.key, "POST", "/v1/sandboxes", `{"image":{"uri":"base"},"timeout":-5}`, 400, "timeout"},
		{s.key, "POST", "/v1/sandboxes", `{"image":{"uri":"base"},"networkPolicy":{"defaultAction":"drop"}}`, 400, "networkPolicy.defaultAction"},
		{s.key, "POST", "/v1/sandboxes", `{"image":{"uri":"base"},"networkPolicy":{"defaultAction":"deny","egress":[{"action":"allow","target":"not a domain"}]}}`, 400, "networkPolicy.egress"},
		{s.key, "POST", "/v1/sandboxes", `{"image":{"uri":"base"},"credentialProxy":{"enabled":true}}`, 400, "credentialProxy"},
		{s.key, "POST", "/v1/sandboxes", `{"image":{"uri":"base"},"extensions":{"poolRef":"p"}}`, 400, "extensions.poolRef"},
		{s.key, "POST", "/v1/sandboxes", `{"image":{"uri":"base"},"platform":{"os":"windows","arch":"amd64"}}`, 400, "platform"},
		{s.key, "POST", "/v1/sandboxes", `{"image":{"uri":"base"},"volumes":[{"name":"h","host":{"path":"/x"},"mountPath":"/x"}]}`, 400, "volumes[0].host"},
		{s.key, "POST", "/v1/sandboxes", `{"image":{"uri":"base"},"env":{"1BAD":"x"}}`, 400, "env"},
		{s.key, "GET", "/v1/sandboxes?state=Gone", "", 400, "state"},
		{s.key, "GET", "/v1/sandboxes?page=0", "", 400, "page"},
		{s.key, "GET", "/v1/sandboxes?pageSize=100000", "", 400, "pageSize"},
		{s.key, "GET", "/v1/sandboxes?metadata=a%3D%25zz", "", 400, "metadata"},
		{s.key, "GET", "/v1/sandboxes/nope", "", 404, "nope"},
		{s.key, "DELETE", "/v1/sandboxes/nope", "", 404, "nope"},
		{s.key, "POST", "/v1/sandboxes/" + id + "/resume", "", 409, "not paused"},
		{s.key, "POST", "/v1/sandboxes/" + id + "/renew-expiration", `{}`, 400, "expiresAt"},
		{s.key, "POST", "/v1/sandboxes/" + id + "/renew-expiration", `{"expiresAt":"tomorrow"}`, 400, "expiresAt"},
		{s.key, "POST", "/v1/sandboxes/" + id + "/renew-expiration", `{"expiresAt":"2000-01-01T00:00:00Z"}`, 400, "expiresAt"},
		{s.key, "GET", "/v1/sandboxes/" + id + "/endpoints/0", "", 400, "port"},
		{s.key, "GET", "/v1/sandboxes/" + id + "/endpoints/http", "", 400, "port"},
		{s.key, "GET", "/v1/sandboxes/" + id + "/endpoints/49983", "", 400, "port"},
		{s.key, "GET", "/v1/sandboxes/" + id + "/endpoints/8080?expires=99", "", 400, "expires"},
		{s.key, "GET", "/v1/sandboxes/" + id + "/endpoints/8080?use_server_proxy=maybe", "", 400, "use_server_proxy"},
		{s.key, "POST", "/v1/sandboxes/" + id + "/snapshots", `{}`, 404, "no OpenSandbox route"},
		{s.key, "GET", "/v2/nowhere", "", 404, "no OpenSandbox route"},
		{"", "GET", "/execd/" + id + "/ping", "", 401, "X-EXECD-ACCESS-TOKEN"},
		{"", "GET", "/execd/nope/ping", "", 401, "X-EXECD-ACCESS-TOKEN"},
	} {
		status, says := call(c.key, c.method, c.path, c.body)
		if status != c.status || !strings.Contains(says, c.says) {
			t.Errorf("%s %s %s: %d %q, want %d naming %q", c.method, c.path, c.body, status, says, c.status, c.says)
		}
	}
	if status, says := call("", "GET", "/execd/"+id+"/ping", "", "X-EXECD-ACCESS-TOKEN", "wrong"); status != 401 {
		t.Errorf("execd with a wrong token: %d %q", status, says)
	}
	// Another org's key finds nothing of this org's.
	var other struct{ Secret string }
	s.call("POST", "/api/v1/admin/orgs", map[string]any{"name": "osb-other"}, http.StatusCreated, &other)
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/sandboxes/" + id}, {"DELETE", "/v1/sandboxes/" + id}, {"POST", "/v1/sandboxes/" + id + "/pause"},
		{"GET", "/v1/sandboxes/" + id + "/endpoints/44772"},
		{"POST", "/v1/sandboxes/" + id + "/renew-expiration"},
	} {
		if status, _ := call(other.Secret, c.method, c.path, `{"expiresAt":"2999-01-01T00:00:00Z"}`); status != http.StatusNotFound {
			t.Errorf("another org's key: %s %s: %d, want 404", c.method, c.path, status)
		}
	}
	if s.get(sb.ID).State != "running" {
		t.Error("the refused calls touched the sandbox")
	}
}
