package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// listAll follows cursors through GET /api/v1/sandboxes with query q.
func (s *server) listAll(q string) []apiv1.Sandbox {
	s.t.Helper()
	var out []apiv1.Sandbox
	cursor := ""
	for {
		path := "/api/v1/sandboxes?limit=3&" + q
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var page apiv1.SandboxList
		s.call("GET", path, nil, http.StatusOK, &page)
		if len(page.Items) > 3 {
			s.t.Fatalf("page of %d over a limit of 3", len(page.Items))
		}
		out = append(out, page.Items...)
		if cursor = page.NextCursor; cursor == "" {
			return out
		}
	}
}

func TestListPaginationAndFilters(t *testing.T) {
	s := startServer(t, serverOpts{})
	var ids []string
	for i := range 7 {
		body := map[string]any{"waitReady": true, "metadata": map[string]string{"batch": fmt.Sprint(i % 2), "n": fmt.Sprint(i)}}
		if i == 6 {
			body["templateID"] = "code-interpreter"
		}
		ids = append(ids, s.create(body).SandboxID)
	}
	s.call("POST", "/api/v1/sandboxes/"+ids[0]+"/pause", nil, http.StatusOK, nil)
	s.call("DELETE", "/api/v1/sandboxes/"+ids[1], nil, http.StatusOK, nil)

	all := s.listAll("")
	if len(all) != 7 || all[0].SandboxID != ids[6] || all[6].SandboxID != ids[0] {
		t.Fatalf("list of all: %d items, newest first expected", len(all))
	}
	count := func(q string) int { return len(s.listAll(q)) }
	for q, want := range map[string]int{
		"state=running":                     5,
		"state=paused&state=killed":         2,
		"state=paused,killed":               2,
		"template=code-interpreter":         1,
		"metadata=batch%3D1":                3,
		"metadata=batch%3D0&metadata=n%3D4": 1,
		"state=running&metadata=batch%3D0":  3,
	} {
		if got := count(q); got != want {
			t.Errorf("%s: %d sandboxes, want %d", q, got, want)
		}
	}
}

func TestOrgLedgerView(t *testing.T) {
	s := startServer(t, serverOpts{})
	var me apiv1.Me
	s.call("GET", "/api/v1/me", nil, http.StatusOK, &me)
	if me.Org.Name != "default" || me.Workspace.Name != "default" || me.Project.Name != "default" || me.Key.Scope != "org" || me.Org.ID == "" {
		t.Fatalf("me: %+v", me)
	}
	a := s.create(map[string]any{"waitReady": true})
	b := s.create(map[string]any{"waitReady": true, "kind": "runtime"})
	s.call("POST", "/api/v1/sandboxes/"+b.ID+"/pause", nil, http.StatusOK, nil)

	for _, org := range []string{me.Org.ID, me.Org.Name} {
		var list apiv1.SandboxList
		s.call("GET", "/api/v1/org/"+org+"/sandboxes?state=paused&project_id="+me.Project.ID+"&limit=10", nil, http.StatusOK, &list)
		if len(list.Items) != 1 || list.Items[0].SandboxID != b.SandboxID {
			t.Fatalf("org %s paused list: %+v", org, list.Items)
		}
	}
	var list apiv1.SandboxList
	s.call("GET", "/api/v1/org/default/sandboxes?project_id=00000000-0000-0000-0000-000000000000", nil, http.StatusOK, &list)
	if len(list.Items) != 0 {
		t.Errorf("unknown project lists %d", len(list.Items))
	}
	var one apiv1.Sandbox
	s.call("GET", "/api/v1/org/default/sandboxes/"+a.SandboxID, nil, http.StatusOK, &one)
	if one.ID != a.ID || len(one.Timeline) == 0 {
		t.Fatalf("org get: %+v", one)
	}
	var logs apiv1.LogPage
	s.call("GET", "/api/v1/org/default/sandboxes/"+a.SandboxID+"/logs", nil, http.StatusOK, &logs)
	if len(logs.Items) < 2 {
		t.Fatalf("org logs: %+v", logs)
	}
	s.call("DELETE", "/api/v1/org/default/sandboxes/"+a.SandboxID, nil, http.StatusOK, &one)
	if one.State != "killed" {
		t.Fatalf("org delete: %s", one.State)
	}

	var usage apiv1.OrgUsage
	s.call("GET", "/api/v1/org/default/sandboxes/usage", nil, http.StatusOK, &usage)
	u := usage.Total
	if u.Sandboxes != 2 || u.ByState["killed"] != 1 || u.ByState["paused"] != 1 || u.ByKind["runtime"] != 1 || u.ByProvider["memory"] != 2 ||
		len(usage.Projects) != 1 || usage.Projects[0].Project.ID != me.Project.ID || u.LifetimeSeconds <= 0 {
		t.Fatalf("usage: %+v", usage)
	}

	var sum apiv1.Summary
	s.call("GET", "/api/v1/observability/summary", nil, http.StatusOK, &sum)
	providers := map[string]apiv1.ProviderStatus{}
	for _, p := range sum.Providers {
		providers[p.Name] = p
	}
	if len(providers) != 1 || !providers["memory"].Available || !providers["memory"].Default || !providers["memory"].Capabilities.Hibernate {
		t.Errorf("summary providers: %+v", sum.Providers)
	}
	if len(sum.Projects) != 1 || sum.Projects[0].Usage.Sandboxes != 2 || len(sum.Quotas) == 0 || len(sum.Endpoints) == 0 {
		t.Errorf("summary: %+v", sum)
	}
	if !strings.Contains(strings.Join(sum.NextActions, " "), "sbx sandbox resume") {
		t.Errorf("next actions do not mention the paused sandbox: %q", sum.NextActions)
	}
}

// The server is killed with SIGKILL while creates are in flight and while
// sandboxes run; after a restart every sandbox is running or failed with a
// diagnostic, and compute the ledger does not own is destroyed.
func TestRestartReconciles(t *testing.T) {
	s := startServer(t, serverOpts{})
	survivor := s.create(map[string]any{"waitReady": true})
	paused := s.create(map[string]any{"waitReady": true})
	s.call("POST", "/api/v1/sandboxes/"+paused.ID+"/pause", nil, http.StatusOK, nil)
	s.restart(serverOpts{createDelay: 10 * time.Second})

	inflight := s.create(nil) // answers at once; the provider is still creating
	if inflight.State != "starting" {
		t.Fatalf("in-flight create: %s", inflight.State)
	}
	waiting := make(chan error, 1)
	go func() { // a create whose caller waits, cut off by the kill
		req, _ := http.NewRequest("POST", s.url+"/api/v1/sandboxes", strings.NewReader(`{"templateID":"base","waitReady":true}`))
		req.Header.Set("Authorization", "Bearer "+s.key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		waiting <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.listAll("state=starting")) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	orphan := `{"sandbox_id":"4f1b7f0e-0000-4000-8000-000000000000","provider_id":"orphan1","template":"base","status":"running"}`
	if err := os.WriteFile(filepath.Join(s.compute, "orphan1.json"), []byte(orphan), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.stop(syscall.SIGKILL); err == nil {
		t.Fatal("sbx serve survived SIGKILL")
	}
	if err := <-waiting; err == nil {
		t.Fatal("the waiting create was answered before the kill")
	}
	s.restart(serverOpts{})

	all := s.listAll("")
	if len(all) != 4 {
		t.Fatalf("after restart the ledger holds %d sandboxes, want 4 (none lost)", len(all))
	}
	for _, sb := range all {
		switch {
		case sb.ID == survivor.ID:
			if sb.State != "running" || !strings.HasSuffix(steps(s.get(sb.ID)), "adopted") {
				t.Errorf("survivor: %s %s", sb.State, steps(s.get(sb.ID)))
			}
		case sb.ID == paused.ID:
			if sb.State != "paused" {
				t.Errorf("paused sandbox: %s", sb.State)
			}
		default: // the two cut-off creates
			if sb.State != "failed" || !strings.Contains(sb.Diagnostic, "creating was interrupted") || sb.EndReason != "lost" {
				t.Errorf("cut-off create: state %s, diagnostic %q", sb.State, sb.Diagnostic)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(s.compute, "orphan1.json")); !os.IsNotExist(err) {
		t.Errorf("orphan compute survived the restart: %v", err)
	}
	// Adopted sandboxes are still usable.
	s.call("POST", "/api/v1/sandboxes/"+paused.ID+"/resume", nil, http.StatusOK, nil)
	s.call("DELETE", "/api/v1/sandboxes/"+survivor.SandboxID, nil, http.StatusOK, nil)
}
