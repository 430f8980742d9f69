package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
)

// Input the API must refuse with a 4xx envelope that names the problem,
// changing nothing.
func TestRefusedInputChangesNothing(t *testing.T) {
	s := newStack(t, stackOpts{})
	acme := s.org(apiv1.CreateOrgRequest{Name: "acme", KYCStatus: "verified", Plan: &apiv1.SetPlanRequest{MaxSandboxes: 3}})
	sb := s.create(acme.Secret, nil)

	// null where an object is expected: once it reset a plan and paused a sandbox.
	s.fail(s.operator, "PUT", "/api/v1/admin/orgs/acme/plan", "null", 400, "invalid", "must be a JSON object, not null")
	s.fail(acme.Secret, "POST", "/api/v1/sandboxes/"+sb.SandboxID+"/pause", "null", 400, "invalid", "not null")
	s.fail(acme.Secret, "POST", "/api/v1/sandboxes", `{"templateID":"base","metadata":null,"envVars":{"A":"b"}} {}`, 400, "invalid", "nothing after it")
	var got apiv1.Sandbox
	s.call(acme.Secret, "GET", "/api/v1/sandboxes/"+sb.SandboxID, nil, 200, &got)
	if got.State != "running" {
		t.Fatalf("a refused pause left the sandbox %s", got.State)
	}
	var orgs apiv1.OrgList
	s.call(s.operator, "GET", "/api/v1/admin/orgs", nil, 200, &orgs)
	if o := orgs.Items[1]; o.Name != "acme" || o.Plan.MaxSandboxes != 3 {
		t.Fatalf("a refused plan change left %+v", o)
	}

	// Field names are exact; a wrong type names the field, effective_at too.
	s.fail(acme.Secret, "POST", "/api/v1/sandboxes", `{"TemplateID":"base"}`, 400, "invalid", `unknown field "TemplateID"`)
	e := s.fail(s.operator, "POST", "/api/v1/admin/rates", `{"resource":"cpu","credits_per_second":"1","effective_at":12}`, 400, "invalid", "effective_at")
	if len(e.Errors) != 1 || e.Errors[0].Field != "effective_at" {
		t.Errorf("a wrong effective_at: %+v", e)
	}

	// An error quotes no more than a short prefix of what it was given.
	long := strings.Repeat("x", 10000)
	for _, body := range []string{`{"` + long + `":1}`, `{"templateID":"` + long + `"}`, `{"templateID":` + long + `}`} {
		status, data := s.send(acme.Secret, "POST", "/api/v1/sandboxes", body, nil)
		if status != 400 || len(data) > 1000 {
			t.Errorf("a long input: %d, %d bytes of answer: %.300s", status, len(data), data)
		}
	}
	status, data := s.send(acme.Secret, "GET", "/api/v1/sandboxes/"+long, nil, nil)
	if status != 404 || len(data) > 1000 {
		t.Errorf("a long ID: %d, %d bytes of answer", status, len(data))
	}

	// Query values: empty, given twice, or not what they name.
	s.fail(acme.Secret, "GET", "/api/v1/sandboxes?limit=", nil, 400, "invalid", "query parameter limit is empty")
	s.fail(acme.Secret, "GET", "/api/v1/sandboxes?limit=1&limit=2", nil, 400, "invalid", "query parameter limit is given 2 times")
	s.call(acme.Secret, "GET", "/api/v1/sandboxes?state=running&state=paused", nil, 200, nil)
	s.fail(acme.Secret, "GET", "/api/v1/org/acme/sandboxes?project_id=nope", nil, 400, "invalid", `project_id "nope" must be a project's ID (a UUID)`)
	s.fail(acme.Secret, "DELETE", "/api/v1/org/acme/sandboxes/"+sb.SandboxID+"?force=1", nil, 400, "invalid", `unknown query parameter "force"`)
	s.call(acme.Secret, "GET", "/api/v1/sandboxes/"+sb.SandboxID, nil, 200, &got)
	if got.State != "running" {
		t.Fatalf("a refused delete left the sandbox %s", got.State)
	}

	// A JSON body must say so.
	req, _ := http.NewRequest("POST", s.url+"/api/v1/org/acme/workspaces", strings.NewReader(`{"name":"research"}`))
	req.Header.Set("Authorization", "Bearer "+acme.Secret)
	req.Header.Set("Content-Type", "text/plain")
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	s.refused("a text/plain body", resp.StatusCode, data, 415, "unsupported_media_type", `must be JSON, with Content-Type: application/json (it says "text/plain")`)
	var wss apiv1.WorkspaceList
	s.call(acme.Secret, "GET", "/api/v1/org/acme/workspaces", nil, 200, &wss)
	if len(wss.Items) != 1 {
		t.Fatalf("a refused create made a workspace: %+v", wss.Items)
	}

	// A wrong method is a 405 naming the methods the route takes.
	req, _ = http.NewRequest("PATCH", s.url+"/api/v1/org/acme/workspaces", nil)
	req.Header.Set("Authorization", "Bearer "+acme.Secret)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	s.refused("PATCH on a list", resp.StatusCode, data, 405, "method_not_allowed", "PATCH /api/v1/org/acme/workspaces is not a method of this route; it takes GET, POST")
	if allow := resp.Header.Get("Allow"); allow != "GET, POST" {
		t.Errorf("Allow: %q", allow)
	}
}
