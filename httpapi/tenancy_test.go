package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/httpapi"
	"github.com/sbxdev/sbx/internal/contract"
	"github.com/sbxdev/sbx/ledger"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/providertest"
)

// The tenancy routes through the whole stack: httpapi over a lifecycle
// Manager over a SQLite ledger and the Memory provider, with every response
// checked against the OpenAPI document.

const webhookSecret = "whsec_test"

// gpuMemory is the Memory provider offering GPUs, so that the plan's GPU
// limit is reached through a create.
type gpuMemory struct{ *providertest.Memory }

func (gpuMemory) Capabilities() sbx.Capabilities {
	return sbx.Capabilities{MemoryPause: true, GPU: true}
}

type stack struct {
	t        *testing.T
	store    *ledger.Store
	url      string
	http     *http.Client
	operator string // the operator's key, of the verified org "default"
}

type stackOpts struct {
	noKYC         bool
	webhookSecret string
}

func newStack(t *testing.T, o stackOpts) *stack {
	t.Helper()
	ctx := context.Background()
	store, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	clock, log := sbx.SystemClock{}, slog.New(slog.DiscardHandler)
	prov := gpuMemory{providertest.NewMemory(providertest.MemoryOptions{})}
	mgr := lifecycle.New(store, []sbx.Provider{prov}, lifecycle.Config{DefaultProvider: providertest.MemoryName, RequireKYC: !o.noKYC}, clock, log)
	t.Cleanup(func() { mgr.Wait(context.Background()) })
	api := httpapi.New(mgr, store, httpapi.Config{PublicURL: "http://sbx.test", Domain: "sbx.localhost", KYCWebhookSecret: o.webhookSecret}, clock, log)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	made, err := store.CreateOrgWith(ctx, ledger.NewOrg{Name: "default", KYCStatus: sbx.KYCVerified, Key: sbx.APIKey{Name: "admin", Operator: true}}, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	v, err := contract.New(httpapi.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, err := range v.Errors() {
			t.Errorf("a response does not match the OpenAPI document: %v", err)
		}
	})
	return &stack{t: t, store: store, url: srv.URL, http: &http.Client{Transport: v.Transport(nil)}, operator: made.Secret}
}

// send makes one request with key (none when empty) and extra headers.
func (s *stack) send(key, method, path string, body any, header http.Header) (int, []byte) {
	s.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.http.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// call makes a request that must answer want and decodes the answer into out.
func (s *stack) call(key, method, path string, body any, want int, out any) {
	s.t.Helper()
	status, data := s.send(key, method, path, body, nil)
	if status != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, status, data, want)
	}
	if out != nil {
		reflect.ValueOf(out).Elem().SetZero()
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

// fail makes a request that must be refused with status, the error type
// typ and a detail containing detail.
func (s *stack) fail(key, method, path string, body any, status int, typ, detail string) apiv1.Error {
	s.t.Helper()
	got, data := s.send(key, method, path, body, nil)
	return s.refused(method+" "+path, got, data, status, typ, detail)
}

func (s *stack) refused(what string, got int, data []byte, status int, typ, detail string) apiv1.Error {
	s.t.Helper()
	var e apiv1.Error
	if err := json.Unmarshal(data, &e); err != nil {
		s.t.Fatalf("%s: not an error envelope: %s", what, data)
	}
	if got != status || e.Code != status || e.Type != typ || !strings.Contains(e.Detail, detail) {
		s.t.Fatalf("%s: %d %s %q, want %d %s containing %q", what, got, e.Type, e.Detail, status, typ, detail)
	}
	return e
}

// org makes an org as the operator and returns it with its owner key.
func (s *stack) org(body apiv1.CreateOrgRequest) apiv1.CreatedOrg {
	s.t.Helper()
	var out apiv1.CreatedOrg
	if body.Credits == "" {
		body.Credits = "1000"
	}
	s.call(s.operator, "POST", "/api/v1/admin/orgs", body, 201, &out)
	return out
}

// member adds a member with a key as the given key and returns the key.
func (s *stack) member(key, org, ws, email string, role sbx.Role) string {
	s.t.Helper()
	var ch apiv1.MemberChange
	s.call(key, "POST", "/api/v1/org/"+org+"/ws/"+ws+"/members", apiv1.AddMemberRequest{Email: email, Role: string(role)}, 201, &ch)
	var k apiv1.CreatedKey
	s.call(key, "POST", "/api/v1/org/"+org+"/keys", apiv1.CreateKeyRequest{Name: email, User: ch.Member.User.ID}, 201, &k)
	return k.Secret
}

func (s *stack) create(key string, body map[string]any) apiv1.Sandbox {
	s.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	body["templateID"], body["waitReady"] = "base", true
	var sb apiv1.Sandbox
	s.call(key, "POST", "/api/v1/sandboxes", body, 201, &sb)
	return sb
}

func TestTenancyOverHTTP(t *testing.T) {
	s := newStack(t, stackOpts{})
	acme := s.org(apiv1.CreateOrgRequest{Name: "acme", Plan: &apiv1.SetPlanRequest{Name: "team", MaxSandboxes: 5}})
	if acme.Org.KYCStatus != "unverified" || acme.Org.Plan.MaxSandboxes != 5 || acme.Org.Plan.Name != "team" ||
		acme.Key.Scope != "org" || acme.Secret == "" || acme.Workspace.Name != "default" || acme.Project.RuntimeID == "" {
		t.Fatalf("created %+v", acme)
	}
	owner := acme.Secret
	s.fail(s.operator, "POST", "/api/v1/admin/orgs", apiv1.CreateOrgRequest{Name: "acme"}, 409, "conflict", `org "acme" already exists`)
	s.fail(s.operator, "POST", "/api/v1/admin/orgs", `{"name":"acme2","plan":{"max_cpu":2}}`, 400, "invalid", `unknown field "plan.max_cpu"`)
	s.fail(s.operator, "POST", "/api/v1/admin/orgs", apiv1.CreateOrgRequest{Name: "Big Co"}, 400, "invalid", "org name")
	var orgs apiv1.OrgList
	s.call(s.operator, "GET", "/api/v1/admin/orgs?limit=1", nil, 200, &orgs)
	if len(orgs.Items) != 1 || orgs.Items[0].Name != "default" || orgs.NextCursor == "" {
		t.Fatalf("orgs: %+v", orgs)
	}
	s.call(s.operator, "GET", "/api/v1/admin/orgs?cursor="+orgs.NextCursor, nil, 200, &orgs)
	if len(orgs.Items) != 1 || orgs.Items[0].Name != "acme" {
		t.Fatalf("second page of orgs: %+v", orgs)
	}
	s.fail(s.operator, "GET", "/api/v1/admin/orgs?colour=red", nil, 400, "invalid", `unknown query parameter "colour"`)

	var me apiv1.Me
	s.call(owner, "GET", "/api/v1/me", nil, 200, &me)
	if me.Role != "owner" || me.Key.Scope != "org" || me.User != nil || me.Operator || me.Org.Name != "acme" {
		t.Fatalf("me: %+v", me)
	}

	var ws apiv1.Workspace
	s.call(owner, "POST", "/api/v1/org/acme/workspaces", apiv1.CreateWorkspaceRequest{Name: "research"}, 201, &ws)
	s.fail(owner, "POST", "/api/v1/org/acme/workspaces", apiv1.CreateWorkspaceRequest{Name: "research"}, 409, "conflict", "already exists")
	for _, path := range []string{"/api/v1/org/acme/workspaces?x=1", "/api/v1/org/acme/ws/research/members?x=1", "/api/v1/org/acme/keys?x=1",
		"/api/v1/org/acme/ws/research/projects?x=1"} {
		s.fail(owner, "POST", path, `{}`, 400, "invalid", `unknown query parameter "x"; this endpoint takes none`)
		s.fail(owner, "GET", path, nil, 400, "invalid", `unknown query parameter "x"; this endpoint takes limit, cursor`)
	}
	s.fail(s.operator, "PUT", "/api/v1/admin/orgs/acme/plan?dry=1", `{}`, 400, "invalid", `unknown query parameter "dry"`)
	s.fail(s.operator, "PUT", "/api/v1/admin/orgs/acme/verification?x=1", `{"status":"verified"}`, 400, "invalid", `unknown query parameter "x"`)
	s.fail(owner, "DELETE", "/api/v1/org/acme/ws/research/members/nobody@example.com?x=1", nil, 400, "invalid", `unknown query parameter "x"`)
	var wss apiv1.WorkspaceList
	s.call(owner, "GET", "/api/v1/org/"+acme.Org.ID+"/workspaces", nil, 200, &wss)
	if len(wss.Items) != 2 || wss.Items[1].ID != ws.ID {
		t.Fatalf("workspaces: %+v", wss)
	}
	var p apiv1.Project
	s.call(owner, "POST", "/api/v1/org/acme/ws/research/projects", apiv1.CreateProjectRequest{Name: "evals"}, 201, &p)
	if p.WorkspaceID != ws.ID || p.RuntimeID == "" {
		t.Fatalf("project: %+v", p)
	}
	if rt, err := s.store.Runtime(context.Background(), p.ID); err != nil || rt.ID != p.RuntimeID || rt.Status != "idle" {
		t.Fatalf("the project's runtime: %+v %v", rt, err)
	}
	var ps apiv1.ProjectList
	s.call(owner, "GET", "/api/v1/org/acme/ws/"+ws.ID+"/projects", nil, 200, &ps)
	if len(ps.Items) != 2 || ps.Items[0].Name != "default" || ps.Items[1].ID != p.ID {
		t.Fatalf("projects: %+v", ps)
	}
	s.fail(owner, "GET", "/api/v1/org/acme/ws/nope/projects", nil, 404, "not_found", "workspace nope not found")

	var ch apiv1.MemberChange
	s.call(owner, "POST", "/api/v1/org/acme/ws/research/members", apiv1.AddMemberRequest{Email: "ada@example.com", Name: "Ada", Role: "admin"}, 201, &ch)
	if ch.Member.User.Email != "ada@example.com" || ch.Member.Role != "admin" || ch.Members != 1 || ch.MemberLimit != 0 || len(ch.Paused) != 0 {
		t.Fatalf("member: %+v", ch)
	}
	s.fail(owner, "POST", "/api/v1/org/acme/ws/research/members", apiv1.AddMemberRequest{Email: "x@example.com", Role: "boss"}, 400, "invalid", `role "boss"`)
	s.fail(owner, "POST", "/api/v1/org/acme/ws/research/members", apiv1.AddMemberRequest{Email: "ada"}, 400, "invalid", "is not an address")
	var members apiv1.MemberList
	s.call(owner, "GET", "/api/v1/org/acme/ws/research/members", nil, 200, &members)
	if len(members.Items) != 1 || members.Items[0].User.Name != "Ada" {
		t.Fatalf("members: %+v", members)
	}

	var mk apiv1.CreatedKey
	s.call(owner, "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "ada", User: "ada@example.com"}, 201, &mk)
	if mk.Key.Scope != "member" || mk.Key.UserID != ch.Member.User.ID || mk.Secret == "" {
		t.Fatalf("member key: %+v", mk)
	}
	s.call(mk.Secret, "GET", "/api/v1/me", nil, 200, &me)
	if me.Role != "admin" || me.User == nil || me.User.Email != "ada@example.com" || me.Workspace.ID != ws.ID || me.Key.Scope != "member" {
		t.Fatalf("a member's me: %+v", me)
	}
	var pk apiv1.CreatedKey
	s.call(owner, "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "ci", ProjectID: p.ID}, 201, &pk)
	s.fail(owner, "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "x", ProjectID: p.ID, User: "ada@example.com"}, 400, "invalid", "not both")
	s.fail(owner, "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{}, 400, "invalid", "name is required")
	var keys apiv1.APIKeyList
	s.call(owner, "GET", "/api/v1/org/acme/keys", nil, 200, &keys)
	if len(keys.Items) != 3 || keys.Items[0].Scope != "org" || keys.Items[1].Scope != "member" || keys.Items[2].ProjectID != p.ID {
		t.Fatalf("keys: %+v", keys)
	}
	var revoked apiv1.APIKey
	s.call(owner, "DELETE", "/api/v1/org/acme/keys/"+pk.Key.ID, nil, 200, &revoked)
	if revoked.RevokedAt == nil {
		t.Fatalf("revoked: %+v", revoked)
	}
	s.fail(pk.Secret, "GET", "/api/v1/me", nil, 401, "unauthorized", "not valid")
	s.fail(owner, "DELETE", "/api/v1/org/acme/keys/"+pk.Key.ID, nil, 409, "conflict", "already revoked")

	// Removing the member from every workspace of the org stops their key.
	s.call(owner, "DELETE", "/api/v1/org/acme/ws/research/members/ada@example.com", nil, 200, &ch)
	if ch.Members != 0 || ch.Member.User.Email != "ada@example.com" {
		t.Fatalf("removed: %+v", ch)
	}
	s.fail(mk.Secret, "GET", "/api/v1/me", nil, 401, "unauthorized", "no longer a member of org acme")
	s.fail(owner, "DELETE", "/api/v1/org/acme/ws/research/members/ada@example.com", nil, 404, "not_found", "is not a member")
}

func TestRolesOverHTTP(t *testing.T) {
	s := newStack(t, stackOpts{})
	acme := s.org(apiv1.CreateOrgRequest{Name: "acme", KYCStatus: "verified"})
	owner := acme.Secret
	s.call(owner, "POST", "/api/v1/org/acme/workspaces", apiv1.CreateWorkspaceRequest{Name: "research"}, 201, nil)
	admin := s.member(owner, "acme", "default", "ada@example.com", sbx.RoleAdmin)
	member := s.member(owner, "acme", "default", "bob@example.com", sbx.RoleMember)
	ownerUser := s.member(owner, "acme", "research", "olga@example.com", sbx.RoleOwner)
	var pk apiv1.CreatedKey
	s.call(owner, "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "ci", ProjectID: acme.Project.ID}, 201, &pk)

	// Members read, and use sandboxes; they manage nothing.
	for _, key := range []string{member, pk.Secret} {
		for _, path := range []string{"/api/v1/org/acme/workspaces", "/api/v1/org/acme/ws/default/members", "/api/v1/org/acme/ws/default/projects", "/api/v1/org/acme/keys"} {
			s.call(key, "GET", path, nil, 200, nil)
		}
		s.fail(key, "POST", "/api/v1/org/acme/workspaces", apiv1.CreateWorkspaceRequest{Name: "mine"}, 403, "forbidden",
			"creating a workspace needs the admin or owner role; this key acts as member")
		s.fail(key, "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "x", ProjectID: acme.Project.ID}, 403, "forbidden",
			"making a key of project "+acme.Project.ID+" needs the admin or owner role; this key acts as member")
		s.fail(key, "DELETE", "/api/v1/org/acme/keys/"+pk.Key.ID, nil, 403, "forbidden", "revoking a key of project "+acme.Project.ID+" needs the admin or owner role")
	}
	s.fail(member, "POST", "/api/v1/org/acme/ws/default/members", apiv1.AddMemberRequest{Email: "cy@example.com"}, 403, "forbidden",
		"adding a member needs the admin or owner role in workspace default; this key acts as member there")
	s.fail(member, "DELETE", "/api/v1/org/acme/ws/default/members/ada@example.com", nil, 403, "forbidden", "removing a member needs the admin or owner role")
	s.fail(pk.Secret, "POST", "/api/v1/org/acme/ws/default/projects", apiv1.CreateProjectRequest{Name: "x"}, 403, "forbidden",
		"creating a project needs the admin or owner role in workspace default; this key acts as member there")
	s.create(member, nil)

	// Admins manage their workspaces, never above their role.
	s.call(admin, "POST", "/api/v1/org/acme/ws/default/projects", apiv1.CreateProjectRequest{Name: "evals"}, 201, nil)
	s.fail(admin, "POST", "/api/v1/org/acme/ws/research/projects", apiv1.CreateProjectRequest{Name: "x"}, 403, "forbidden",
		"creating a project needs the admin or owner role in workspace research; this key does not reach it")
	s.fail(admin, "POST", "/api/v1/org/acme/ws/default/members", apiv1.AddMemberRequest{Email: "cy@example.com", Role: "owner"}, 403, "forbidden",
		"adding a member as owner needs the owner role; this key acts as admin")
	s.call(admin, "POST", "/api/v1/org/acme/ws/default/members", apiv1.AddMemberRequest{Email: "cy@example.com", Role: "admin"}, 201, nil)
	s.fail(admin, "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "x"}, 403, "forbidden",
		"making an org-wide key (it acts as an owner of the whole org) needs the owner role; this key acts as admin")
	s.fail(admin, "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "x", User: "olga@example.com"}, 403, "forbidden",
		"making a member's key (it acts as an owner of the whole org) needs the owner role")
	var keys apiv1.APIKeyList
	s.call(owner, "GET", "/api/v1/org/acme/keys", nil, 200, &keys)
	for _, k := range keys.Items {
		if k.Scope == "org" {
			s.fail(admin, "DELETE", "/api/v1/org/acme/keys/"+k.ID, nil, 403, "forbidden", "revoking an org-wide key (it acts as an owner of the whole org) needs the owner role")
		}
	}
	var bobs apiv1.CreatedKey
	s.call(admin, "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "bob 2", User: "bob@example.com"}, 201, &bobs)
	s.call(admin, "DELETE", "/api/v1/org/acme/keys/"+bobs.Key.ID, nil, 200, nil)
	// A workspace an admin creates, the admin manages.
	s.call(admin, "POST", "/api/v1/org/acme/workspaces", apiv1.CreateWorkspaceRequest{Name: "ada-lab"}, 201, nil)
	s.call(admin, "POST", "/api/v1/org/acme/ws/ada-lab/projects", apiv1.CreateProjectRequest{Name: "x"}, 201, nil)

	// An owner membership anywhere is an owner everywhere in the org.
	s.call(ownerUser, "POST", "/api/v1/org/acme/ws/default/members", apiv1.AddMemberRequest{Email: "dan@example.com", Role: "owner"}, 201, nil)

	// The operator's routes are the operator's key's only.
	for _, key := range []string{owner, admin, member} {
		s.fail(key, "GET", "/api/v1/admin/orgs", nil, 403, "forbidden", "needs the operator's key")
		s.fail(key, "POST", "/api/v1/admin/orgs", apiv1.CreateOrgRequest{Name: "x"}, 403, "forbidden", "needs the operator's key")
		s.fail(key, "PUT", "/api/v1/admin/orgs/acme/plan", apiv1.SetPlanRequest{}, 403, "forbidden", "needs the operator's key")
		s.fail(key, "PUT", "/api/v1/admin/orgs/acme/verification", apiv1.VerificationRequest{Status: "verified"}, 403, "forbidden", "needs the operator's key")
		s.fail(key, "PUT", "/api/v1/admin/users/ada@example.com/verification", apiv1.VerificationRequest{Status: "verified"}, 403, "forbidden", "needs the operator's key")
	}
}

func TestOtherOrgsAreNotFound(t *testing.T) {
	s := newStack(t, stackOpts{})
	acme, other := s.org(apiv1.CreateOrgRequest{Name: "acme"}), s.org(apiv1.CreateOrgRequest{Name: "other"})
	var ws apiv1.Workspace
	s.call(acme.Secret, "POST", "/api/v1/org/acme/workspaces", apiv1.CreateWorkspaceRequest{Name: "research"}, 201, &ws)
	s.member(acme.Secret, "acme", "research", "ada@example.com", sbx.RoleMember)
	var keys apiv1.APIKeyList
	s.call(acme.Secret, "GET", "/api/v1/org/acme/keys", nil, 200, &keys)
	eve := other.Secret

	for _, path := range []string{"/api/v1/org/acme/workspaces", "/api/v1/org/" + acme.Org.ID + "/keys", "/api/v1/org/acme/ws/research/members", "/api/v1/org/acme/ws/research/projects"} {
		s.fail(eve, "GET", path, nil, 404, "not_found", "not found")
	}
	s.fail(eve, "POST", "/api/v1/org/acme/workspaces", apiv1.CreateWorkspaceRequest{Name: "x"}, 404, "not_found", "org acme not found")
	s.fail(eve, "DELETE", "/api/v1/org/acme/keys/"+keys.Items[0].ID, nil, 404, "not_found", "org acme not found")
	// Through its own org's paths, another org's things are not found either.
	s.fail(eve, "GET", "/api/v1/org/other/ws/"+ws.ID+"/projects", nil, 404, "not_found", "workspace "+ws.ID+" not found")
	s.fail(eve, "POST", "/api/v1/org/other/ws/"+ws.ID+"/members", apiv1.AddMemberRequest{Email: "x@example.com"}, 404, "not_found", "workspace")
	s.fail(eve, "DELETE", "/api/v1/org/other/ws/default/members/ada@example.com", nil, 404, "not_found", "ada@example.com is not a member of workspace default")
	s.fail(eve, "DELETE", "/api/v1/org/other/keys/"+keys.Items[0].ID, nil, 404, "not_found", "key "+keys.Items[0].ID+" not found")
	s.fail(eve, "POST", "/api/v1/org/other/keys", apiv1.CreateKeyRequest{Name: "x", ProjectID: acme.Project.ID}, 404, "not_found", "project")
	s.fail(eve, "POST", "/api/v1/org/other/keys", apiv1.CreateKeyRequest{Name: "x", User: "ada@example.com"}, 404, "not_found", "is not a member of org")
	s.call(eve, "GET", "/api/v1/org/other/keys", nil, 200, &keys)
	if len(keys.Items) != 1 {
		t.Fatalf("another org lists %d keys", len(keys.Items))
	}
}

func TestKYCGateOverHTTP(t *testing.T) {
	s := newStack(t, stackOpts{})
	acme := s.org(apiv1.CreateOrgRequest{Name: "acme"})
	e := s.fail(acme.Secret, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "base"}, 403, "kyc_required",
		"creating a sandbox needs a verified org or user, and org acme is unverified: complete identity verification with the KYC provider of this sbx, or ask the operator of this sbx to verify the org (sbx org verify acme)")
	if len(e.Errors) != 0 {
		t.Errorf("field errors %+v", e.Errors)
	}
	if list, _, _ := s.store.ListSandboxes(context.Background(), ledger.Filter{OrgID: acme.Org.ID}); len(list) != 0 {
		t.Fatalf("a refused create was recorded: %+v", list)
	}
	// A verified user of an unverified org may create.
	ada := s.member(acme.Secret, "acme", "default", "ada@example.com", sbx.RoleMember)
	s.fail(ada, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "base"}, 403, "kyc_required", "user ada@example.com is unverified")
	var u apiv1.User
	s.call(s.operator, "PUT", "/api/v1/admin/users/ada@example.com/verification", apiv1.VerificationRequest{Status: "verified"}, 200, &u)
	if u.KYCStatus != "verified" || u.Email != "ada@example.com" {
		t.Fatalf("user %+v", u)
	}
	s.create(ada, nil)
	s.fail(acme.Secret, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "base"}, 403, "kyc_required", "org acme is unverified")
	// A pending org is told to wait; a verified org creates.
	var o apiv1.Org
	s.call(s.operator, "PUT", "/api/v1/admin/orgs/acme/verification", apiv1.VerificationRequest{Status: "pending"}, 200, &o)
	s.fail(acme.Secret, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "base"}, 403, "kyc_required", "org acme is pending: wait for the verification in progress to complete")
	s.call(s.operator, "PUT", "/api/v1/admin/orgs/"+acme.Org.ID+"/verification", apiv1.VerificationRequest{Status: "verified"}, 200, &o)
	if o.KYCStatus != "verified" || o.ID != acme.Org.ID {
		t.Fatalf("org %+v", o)
	}
	s.create(acme.Secret, nil)
	s.fail(s.operator, "PUT", "/api/v1/admin/orgs/acme/verification", apiv1.VerificationRequest{Status: "done"}, 400, "invalid", `status "done"`)
	s.fail(s.operator, "PUT", "/api/v1/admin/orgs/nope/verification", apiv1.VerificationRequest{Status: "verified"}, 404, "not_found", "org nope not found")
	s.fail(s.operator, "PUT", "/api/v1/admin/users/nobody@example.com/verification", apiv1.VerificationRequest{Status: "verified"}, 404, "not_found", "user nobody@example.com not found")

	// With the gate off, an unverified org creates.
	off := newStack(t, stackOpts{noKYC: true})
	other := off.org(apiv1.CreateOrgRequest{Name: "other"})
	if sb := off.create(other.Secret, nil); sb.State != "running" {
		t.Fatalf("with the gate off: %+v", sb)
	}
}

// webhook sends a KYC event signed as sign says.
func (s *stack) webhook(body any, signature string) (int, []byte) {
	s.t.Helper()
	h := http.Header{}
	if signature != "" {
		h.Set(httpapi.SignatureHeader, signature)
	}
	return s.send("", "POST", "/api/v1/kyc/webhook", body, h)
}

func TestKYCWebhook(t *testing.T) {
	s := newStack(t, stackOpts{webhookSecret: webhookSecret})
	acme := s.org(apiv1.CreateOrgRequest{Name: "acme"})
	s.member(acme.Secret, "acme", "default", "ada@example.com", sbx.RoleMember)
	now := time.Now()
	event := func(subject, id, status string) []byte {
		data, _ := json.Marshal(apiv1.KYCEvent{Subject: subject, ID: id, Status: status})
		return data
	}

	body := event("org", acme.Org.ID, "verified")
	status, data := s.webhook(body, httpapi.SignWebhook(webhookSecret, now, body))
	var res apiv1.KYCResult
	if err := json.Unmarshal(data, &res); status != 200 || err != nil || !res.Applied || res.Status != "verified" || res.ID != acme.Org.ID {
		t.Fatalf("a signed event: %d %s", status, data)
	}
	if o, _ := s.store.GetOrg(context.Background(), "acme"); o.KYCStatus != sbx.KYCVerified {
		t.Fatalf("org is %s", o.KYCStatus)
	}
	s.create(acme.Secret, nil)

	body = event("user", "ada@example.com", "pending")
	status, data = s.webhook(body, httpapi.SignWebhook(webhookSecret, now, body)+",v1=00")
	if json.Unmarshal(data, &res); status != 200 || !res.Applied || res.Status != "pending" {
		t.Fatalf("a signed user event (with a second, stale v1): %d %s", status, data)
	}
	// An event decided before the recorded one is answered, not applied.
	body = event("org", "acme", "unverified")
	status, data = s.webhook(body, httpapi.SignWebhook(webhookSecret, now.Add(-time.Minute), body))
	if json.Unmarshal(data, &res); status != 200 || res.Applied || res.Status != "verified" {
		t.Fatalf("a late event: %d %s", status, data)
	}

	refused := func(what string, body []byte, signature string, code int, typ, detail string) {
		t.Helper()
		status, data := s.webhook(body, signature)
		s.refused(what, status, data, code, typ, detail)
	}
	body = event("org", "acme", "unverified")
	refused("no signature", body, "", 401, "unauthorized", "the KYC webhook needs a signature")
	refused("malformed", body, "sha256=abc", 401, "unauthorized", `X-Sbx-Signature must be "t=<unix seconds>,v1=<hex HMAC-SHA256`)
	refused("wrong secret", body, httpapi.SignWebhook("another secret", now, body), 401, "unauthorized", "the signature does not match")
	refused("another body", body, httpapi.SignWebhook(webhookSecret, now, event("org", "acme", "verified")), 401, "unauthorized", "the signature does not match")
	refused("stale", body, httpapi.SignWebhook(webhookSecret, now.Add(-6*time.Minute), body), 401, "unauthorized", "more than the 5m0s allowed")
	refused("from the future", body, httpapi.SignWebhook(webhookSecret, now.Add(6*time.Minute), body), 401, "unauthorized", "more than the 5m0s allowed")
	for _, c := range []struct {
		body           string
		code           int
		typ, detail    string
		wantFieldError string
	}{
		{`{"subject":"org","id":"acme","status":"verified","extra":1}`, 400, "invalid", `unknown field "extra"`, "extra"},
		{`{"subject":"team","id":"acme","status":"verified"}`, 400, "invalid", `subject "team" must be org or user`, "subject"},
		{`{"subject":"org","id":"acme","status":"ok"}`, 400, "invalid", `status "ok"`, "status"},
		{`{"subject":"org","id":"nope","status":"verified"}`, 404, "not_found", "org nope not found", ""},
		{`{"subject":"user","id":"nobody@example.com","status":"verified"}`, 404, "not_found", "user nobody@example.com not found", ""},
	} {
		b := []byte(c.body)
		e := func() apiv1.Error {
			status, data := s.webhook(b, httpapi.SignWebhook(webhookSecret, now, b))
			return s.refused(c.body, status, data, c.code, c.typ, c.detail)
		}()
		if c.wantFieldError != "" && (len(e.Errors) != 1 || e.Errors[0].Field != c.wantFieldError) {
			t.Errorf("%s: field errors %+v", c.body, e.Errors)
		}
	}
	if o, _ := s.store.GetOrg(context.Background(), "acme"); o.KYCStatus != sbx.KYCVerified {
		t.Fatalf("refused events changed the org: %s", o.KYCStatus)
	}

	// Without a secret the webhook is off.
	off := newStack(t, stackOpts{})
	body = event("org", "default", "unverified")
	status, data = off.webhook(body, httpapi.SignWebhook(webhookSecret, now, body))
	off.refused("no secret", status, data, 503, "unavailable", "the KYC webhook is off on this server: start sbx serve with --kyc-webhook-secret")
}

func TestPlanLimitsOverHTTP(t *testing.T) {
	s := newStack(t, stackOpts{})
	acme := s.org(apiv1.CreateOrgRequest{Name: "acme", KYCStatus: "verified", Plan: &apiv1.SetPlanRequest{MaxSandboxes: 2, MaxTimeout: 600}})
	key := acme.Secret
	plan := func(p apiv1.SetPlanRequest) {
		t.Helper()
		var ch apiv1.PlanChange
		s.call(s.operator, "PUT", "/api/v1/admin/orgs/acme/plan", p, 200, &ch)
	}
	create := func(body string, detail string) {
		t.Helper()
		s.fail(key, "POST", "/api/v1/sandboxes", body, 403, "plan_limit_exceeded", detail)
	}

	// Timeouts: the default is cut to the plan's; more is refused.
	a := s.create(key, map[string]any{"cpu": 1, "memoryMB": 512})
	if a.Timeout != 600 {
		t.Fatalf("timeout %d, want the plan's 600", a.Timeout)
	}
	create(`{"templateID":"base","timeout":3600}`, "plan limit: a sandbox's timeout may be at most 600 seconds (asked for 3600); ask for less, or ask the operator for a larger plan")
	s.fail(key, "POST", "/api/v1/sandboxes/"+a.SandboxID+"/timeout", `{"timeout":601}`, 403, "plan_limit_exceeded", "at most 600 seconds (asked for 601)")
	s.fail(key, "POST", "/api/v1/sandboxes/"+a.SandboxID+"/refreshes", `{"duration":700}`, 403, "plan_limit_exceeded", "a sandbox's duration may be at most 600 seconds")

	// Concurrent sandboxes; a paused one does not count, and may not resume over the limit.
	b := s.create(key, map[string]any{"cpu": 1, "memoryMB": 512})
	create(`{"templateID":"base"}`, "plan limit: at most 2 concurrent sandboxes (2 running or starting); stop or pause a sandbox, or ask the operator for a larger plan")
	s.call(key, "POST", "/api/v1/sandboxes/"+b.SandboxID+"/pause", nil, 200, nil)
	c := s.create(key, map[string]any{"cpu": 1, "memoryMB": 512})
	s.fail(key, "POST", "/api/v1/sandboxes/"+b.SandboxID+"/resume", nil, 403, "plan_limit_exceeded", "at most 2 concurrent sandboxes")
	s.fail(key, "POST", "/api/v1/sandboxes/"+b.SandboxID+"/connect", nil, 403, "plan_limit_exceeded", "at most 2 concurrent sandboxes")
	s.fail(key, "POST", "/api/v1/sandboxes/"+b.SandboxID+"/resume", `{"timeout":900}`, 403, "plan_limit_exceeded", "at most 600 seconds")
	s.call(key, "DELETE", "/api/v1/sandboxes/"+c.SandboxID, nil, 200, nil)
	s.call(key, "POST", "/api/v1/sandboxes/"+b.SandboxID+"/resume", nil, 200, nil)

	// vCPU, memory and GPU sum the running sandboxes (a and b: 2 vCPU, 1024 MB).
	plan(apiv1.SetPlanRequest{MaxVCPU: ptr(2.5), MaxMemoryMB: 1536, MaxGPUPercent: 150})
	create(`{"templateID":"base","cpu":1,"memoryMB":64}`, "plan limit: at most 2.5 vCPU across running sandboxes (2 in use, this one asks for 1); stop or pause a sandbox, or ask the operator for a larger plan")
	create(`{"templateID":"base","cpu":0.5,"memoryMB":1024}`, "plan limit: at most 1536 MB of memory across running sandboxes (1024 MB in use, this one asks for 1024 MB)")
	create(`{"templateID":"base","cpu":0.25,"memoryMB":64,"gpu":{"type":"h100","count":2}}`, "plan limit: at most 150% of a GPU across running sandboxes (0% in use, this one asks for 200%)")
	s.create(key, map[string]any{"cpu": 0.25, "memoryMB": 64, "gpu": map[string]any{"type": "h100", "fraction": 100}})
	create(`{"templateID":"base","cpu":0.25,"memoryMB":64,"gpu":{"type":"h100","fraction":75}}`, "at most 150% of a GPU across running sandboxes (100% in use, this one asks for 75%)")

	// The plan body is checked.
	s.fail(s.operator, "PUT", "/api/v1/admin/orgs/acme/plan", `{"max_sandboxes":-1}`, 400, "invalid", "max_sandboxes must be 0 (no limit) or more")
	s.fail(s.operator, "PUT", "/api/v1/admin/orgs/acme/plan", `{"max_vcpu":-2}`, 400, "invalid", "max_vcpu must be 0")
	s.fail(s.operator, "PUT", "/api/v1/admin/orgs/acme/plan", `{"max_sandbox":1}`, 400, "invalid", `unknown field "max_sandbox"`)
	s.fail(s.operator, "PUT", "/api/v1/admin/orgs/nope/plan", `{}`, 404, "not_found", "org nope not found")
	var ch apiv1.PlanChange
	s.call(s.operator, "PUT", "/api/v1/admin/orgs/acme/plan", `{}`, 200, &ch)
	if ch.Org.Plan != (apiv1.Plan{}) {
		t.Fatalf("an empty plan: %+v", ch.Org.Plan)
	}
	s.create(key, map[string]any{"cpu": 4, "memoryMB": 4096, "timeout": 7200})
}

func ptr[T any](v T) *T { return &v }

func TestMemberLimitOverHTTP(t *testing.T) {
	s := newStack(t, stackOpts{})
	acme := s.org(apiv1.CreateOrgRequest{Name: "acme", KYCStatus: "verified"})
	key := acme.Secret
	var ch apiv1.PlanChange
	s.call(s.operator, "PUT", "/api/v1/admin/orgs/acme/plan", apiv1.SetPlanRequest{MaxMembers: 1}, 200, &ch)
	if ch.Org.Plan.MaxMembers != 1 || len(ch.Paused) != 0 {
		t.Fatalf("plan: %+v", ch)
	}
	sb := s.create(key, nil)
	var mc apiv1.MemberChange
	s.call(key, "POST", "/api/v1/org/acme/ws/default/members", apiv1.AddMemberRequest{Email: "ada@example.com"}, 201, &mc)
	if mc.Members != 1 || mc.MemberLimit != 1 || len(mc.Paused) != 0 {
		t.Fatalf("the first member: %+v", mc)
	}
	s.call(key, "POST", "/api/v1/org/acme/ws/default/members", apiv1.AddMemberRequest{Email: "bob@example.com"}, 201, &mc)
	if mc.Members != 2 || len(mc.Paused) != 1 || mc.Paused[0] != sb.SandboxID || mc.Member.User.Email != "bob@example.com" {
		t.Fatalf("a member beyond the limit: %+v", mc)
	}
	var got apiv1.Sandbox
	s.call(key, "GET", "/api/v1/sandboxes/"+sb.SandboxID, nil, 200, &got)
	if got.State != "paused" || got.PauseReason != "member_limit_exceeded" {
		t.Fatalf("sandbox %s (%s)", got.State, got.PauseReason)
	}
	detail := "plan limit: workspace default has 2 members, more than the 1 per workspace the plan allows; its sandboxes stay paused until an owner or admin removes members or the operator raises the plan"
	s.fail(key, "POST", "/api/v1/sandboxes", `{"templateID":"base"}`, 403, "plan_limit_exceeded", detail)
	s.fail(key, "POST", "/api/v1/sandboxes/"+sb.SandboxID+"/resume", nil, 403, "plan_limit_exceeded", detail)

	s.call(key, "DELETE", "/api/v1/org/acme/ws/default/members/bob@example.com", nil, 200, &mc)
	if mc.Members != 1 || len(mc.Resumed) != 1 || mc.Resumed[0] != sb.SandboxID || len(mc.Paused) != 0 {
		t.Fatalf("back within the limit: %+v", mc)
	}
	s.call(key, "GET", "/api/v1/sandboxes/"+sb.SandboxID, nil, 200, &got)
	if got.State != "running" || got.PauseReason != "" {
		t.Fatalf("sandbox %s (%s)", got.State, got.PauseReason)
	}
	// The operator lowering the plan pauses at once, raising it releases.
	s.call(s.operator, "PUT", "/api/v1/admin/orgs/acme/plan", apiv1.SetPlanRequest{MaxMembers: 0}, 200, &ch)
	s.call(key, "POST", "/api/v1/org/acme/ws/default/members", apiv1.AddMemberRequest{Email: "bob@example.com"}, 201, &mc)
	s.call(s.operator, "PUT", "/api/v1/admin/orgs/acme/plan", apiv1.SetPlanRequest{MaxMembers: 1}, 200, &ch)
	if len(ch.Paused) != 1 || ch.Paused[0] != sb.SandboxID {
		t.Fatalf("a smaller plan: %+v", ch)
	}
	s.call(s.operator, "PUT", "/api/v1/admin/orgs/acme/plan", apiv1.SetPlanRequest{MaxMembers: 2}, 200, &ch)
	if len(ch.Resumed) != 1 || ch.Resumed[0] != sb.SandboxID {
		t.Fatalf("a larger plan: %+v", ch)
	}
}

// A create names the project its sandbox belongs to, among those its key
// reaches: an org's key any of its org; a member's key one of its user's
// workspaces; a project's key only its own. Any other project, of its org
// or another, is not found, as one that does not exist, and makes nothing.
func TestCreateInAProject(t *testing.T) {
	s := newStack(t, stackOpts{})
	acme := s.org(apiv1.CreateOrgRequest{Name: "acme", KYCStatus: "verified"})
	other := s.org(apiv1.CreateOrgRequest{Name: "other", KYCStatus: "verified"})
	owner := acme.Secret
	var ws apiv1.Workspace
	s.call(owner, "POST", "/api/v1/org/acme/workspaces", apiv1.CreateWorkspaceRequest{Name: "research"}, 201, &ws)
	var evals apiv1.Project
	s.call(owner, "POST", "/api/v1/org/acme/ws/research/projects", apiv1.CreateProjectRequest{Name: "evals"}, 201, &evals)

	sb := s.create(owner, map[string]any{"projectID": evals.ID})
	if sb.ProjectID != evals.ID || sb.WorkspaceID != ws.ID || sb.OrgID != acme.Org.ID {
		t.Errorf("an org key's create in evals: project %s workspace %s", sb.ProjectID, sb.WorkspaceID)
	}
	if sb := s.create(owner, nil); sb.ProjectID != acme.Project.ID {
		t.Errorf("a create naming no project is in %s, not the key's %s", sb.ProjectID, acme.Project.ID)
	}
	inResearch := s.member(owner, "acme", "research", "ada@example.com", sbx.RoleMember)
	if sb := s.create(inResearch, map[string]any{"projectID": evals.ID}); sb.ProjectID != evals.ID {
		t.Errorf("a member of research creates in %s", sb.ProjectID)
	}
	var evalsKey, defaultKey apiv1.CreatedKey
	s.call(owner, "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "ci", ProjectID: evals.ID}, 201, &evalsKey)
	s.call(owner, "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "web", ProjectID: acme.Project.ID}, 201, &defaultKey)
	if sb := s.create(evalsKey.Secret, map[string]any{"projectID": evals.ID}); sb.ProjectID != evals.ID {
		t.Errorf("evals' key creates in %s", sb.ProjectID)
	}

	count := func() int {
		var l apiv1.SandboxList
		s.call(owner, "GET", "/api/v1/sandboxes?limit=100", nil, 200, &l)
		return len(l.Items)
	}
	before := count()
	inDefault := s.member(owner, "acme", "default", "bob@example.com", sbx.RoleMember)
	for who, c := range map[string]struct{ key, project string }{
		"a member of default only":  {inDefault, evals.ID},
		"the default project's key": {defaultKey.Secret, evals.ID},
		"evals' key, elsewhere":     {evalsKey.Secret, acme.Project.ID},
		"an org key, another org's": {owner, other.Project.ID},
		"an org key, no such":       {owner, "00000000-0000-0000-0000-000000000000"},
	} {
		body := map[string]any{"templateID": "base", "projectID": c.project}
		e := s.fail(c.key, "POST", "/api/v1/sandboxes", body, 404, "not_found", "project "+c.project+" not found")
		if strings.Contains(e.Detail, "evals") || strings.Contains(e.Detail, "other") {
			t.Errorf("%s: the refusal names more than the ID: %q", who, e.Detail)
		}
	}
	if after := count(); after != before {
		t.Errorf("refused creates made %d sandboxes", after-before)
	}
}
