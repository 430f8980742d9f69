package client_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
)

// Every tenancy method sends its route, escaped, with its body.
func TestTenancyRequests(t *testing.T) {
	f, c := newFake(t, http.StatusOK, `{}`)
	ctx := context.Background()
	vcpu := 2.5
	for _, tc := range []struct {
		call                func() error
		method, path, query string
		body                map[string]any
	}{
		{func() error {
			_, err := c.CreateOrg(ctx, apiv1.CreateOrgRequest{Name: "acme", KYCStatus: "verified", Plan: &apiv1.SetPlanRequest{MaxSandboxes: 2}})
			return err
		}, "POST", "/api/v1/admin/orgs", "", map[string]any{"name": "acme", "kyc_status": "verified", "plan": map[string]any{"max_sandboxes": 2.0}}},
		{func() error { _, err := c.Orgs(ctx, client.Page{Limit: 5, Cursor: "n"}); return err }, "GET", "/api/v1/admin/orgs", "cursor=n&limit=5", nil},
		{func() error {
			_, err := c.SetPlan(ctx, "acme", apiv1.SetPlanRequest{MaxVCPU: &vcpu, MaxMembers: 3, MaxTimeout: 600})
			return err
		}, "PUT", "/api/v1/admin/orgs/acme/plan", "", map[string]any{"max_vcpu": 2.5, "max_members_per_workspace": 3.0, "max_timeout": 600.0}},
		{func() error { _, err := c.SetOrgVerification(ctx, "a/b", "verified"); return err }, "PUT", "/api/v1/admin/orgs/a%2Fb/verification", "", map[string]any{"status": "verified"}},
		{func() error { _, err := c.SetUserVerification(ctx, "ada@example.com", "pending"); return err }, "PUT", "/api/v1/admin/users/ada@example.com/verification", "", map[string]any{"status": "pending"}},
		{func() error { _, err := c.Workspaces(ctx, "acme", client.Page{}); return err }, "GET", "/api/v1/org/acme/workspaces", "", nil},
		{func() error { _, err := c.CreateWorkspace(ctx, "acme", "research"); return err }, "POST", "/api/v1/org/acme/workspaces", "", map[string]any{"name": "research"}},
		{func() error { _, err := c.Projects(ctx, "acme", "research", client.Page{Limit: 2}); return err }, "GET", "/api/v1/org/acme/ws/research/projects", "limit=2", nil},
		{func() error { _, err := c.CreateProject(ctx, "acme", "research", "evals"); return err }, "POST", "/api/v1/org/acme/ws/research/projects", "", map[string]any{"name": "evals"}},
		{func() error { _, err := c.Members(ctx, "acme", "research", client.Page{}); return err }, "GET", "/api/v1/org/acme/ws/research/members", "", nil},
		{func() error {
			_, err := c.AddMember(ctx, "acme", "research", apiv1.AddMemberRequest{Email: "ada@example.com", Role: "admin"})
			return err
		}, "POST", "/api/v1/org/acme/ws/research/members", "", map[string]any{"email": "ada@example.com", "role": "admin"}},
		{func() error { _, err := c.RemoveMember(ctx, "acme", "research", "ada@example.com"); return err }, "DELETE", "/api/v1/org/acme/ws/research/members/ada@example.com", "", nil},
		{func() error { _, err := c.Keys(ctx, "acme", client.Page{}); return err }, "GET", "/api/v1/org/acme/keys", "", nil},
		{func() error {
			_, err := c.CreateKey(ctx, "acme", apiv1.CreateKeyRequest{Name: "ci", ProjectID: "p1"})
			return err
		}, "POST", "/api/v1/org/acme/keys", "", map[string]any{"name": "ci", "project_id": "p1"}},
		{func() error { _, err := c.RevokeKey(ctx, "acme", "k1"); return err }, "DELETE", "/api/v1/org/acme/keys/k1", "", nil},
	} {
		if err := tc.call(); err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		check(t, f.last(t), tc.method, tc.path, tc.query, tc.body)
	}
}

// A refusal comes back as the server's envelope.
func TestTenancyRefusal(t *testing.T) {
	_, c := newFake(t, http.StatusForbidden, `{"code":403,"type":"plan_limit_exceeded","detail":"plan limit: at most 2 concurrent sandboxes","errors":[]}`)
	_, err := c.AddMember(context.Background(), "acme", "default", apiv1.AddMemberRequest{Email: "ada@example.com"})
	e, ok := err.(*apiv1.Error)
	if !ok || e.Code != 403 || e.Type != "plan_limit_exceeded" || e.Detail != "plan limit: at most 2 concurrent sandboxes" {
		t.Fatalf("error %#v", err)
	}
}
