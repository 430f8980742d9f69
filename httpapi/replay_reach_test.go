package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// A retried create answers only what the caller may still see: a member
// taken out of the workspace its sandbox was made in does not get the
// sandbox (and its access token) back by replaying the create.
func TestIdempotentReplayStaysWithinReach(t *testing.T) {
	s := newStack(t, stackOpts{})
	acme := s.org(apiv1.CreateOrgRequest{Name: "acme", KYCStatus: "verified"})
	owner := acme.Secret
	s.call(owner, "POST", "/api/v1/org/acme/workspaces", apiv1.CreateWorkspaceRequest{Name: "research"}, 201, nil)
	bob := s.member(owner, "acme", "research", "bob@example.com", sbx.RoleMember)
	body := `{"templateID":"base","waitReady":true}`
	key := http.Header{"Idempotency-Key": {"k-1"}}
	var first apiv1.Sandbox
	s.callWith(bob, "POST", "/api/v1/sandboxes", body, key, 201, &first)

	var ch apiv1.MemberChange
	s.call(owner, "POST", "/api/v1/org/acme/ws/default/members", apiv1.AddMemberRequest{Email: "bob@example.com", Role: "member"}, 201, &ch)
	s.call(owner, "DELETE", "/api/v1/org/acme/ws/research/members/"+ch.Member.User.ID, nil, 200, nil)
	s.fail(bob, "GET", "/api/v1/sandboxes/"+first.ID, nil, 404, "not_found", "not found")

	status, data := s.send(bob, "POST", "/api/v1/sandboxes", body, key)
	s.refused("a replay by a member no longer in the sandbox's workspace", status, data, 422, "idempotency_key_reused", "that this key no longer reaches")
	if strings.Contains(string(data), first.ID) || strings.Contains(string(data), first.AccessToken) {
		t.Fatalf("the refused replay names the sandbox: %s", data)
	}
}
