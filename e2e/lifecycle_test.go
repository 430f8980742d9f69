package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

func TestLifecycleOverHTTP(t *testing.T) {
	s := startServer(t, serverOpts{})
	sb := s.create(map[string]any{
		"waitReady": true, "timeout": 600, "envVars": map[string]string{"TOKEN": "s3cret-value"},
		"metadata": map[string]string{"purpose": "e2e"}, "cpu": 1.5, "memoryMB": 1024, "kind": "world",
		"gpu": nil,
	})
	if sb.State != "running" || sb.RuntimeURL == "" || sb.AccessToken == "" || sb.StartedAt == nil || sb.ExpiresAt == nil {
		t.Fatalf("created with waitReady: %+v", sb)
	}
	if sb.Kind != "world" || sb.CPU != 1.5 || sb.MemoryMB != 1024 || sb.Timeout != 600 || sb.Provider != "memory" {
		t.Errorf("create options not kept: %+v", sb)
	}
	if named := s.create(map[string]any{"provider": "memory"}); named.Provider != "memory" {
		t.Errorf("a create naming its provider: %+v", named)
	}
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "provider": "docker"}, http.StatusBadRequest,
		`provider "docker" is not one of this server's: memory`)
	if len(sb.EnvVarNames) != 1 || sb.EnvVarNames[0] != "TOKEN" || strings.Contains(s.rawGet(sb.ID), "s3cret-value") {
		t.Errorf("env vars: names %v; values must never be returned", sb.EnvVarNames)
	}
	if !strings.Contains(sb.RuntimeURL, "49983-"+sb.SandboxID+".sbx.localhost") {
		t.Errorf("runtime URL %s", sb.RuntimeURL)
	}
	if steps(sb) != "creating,ready" {
		t.Errorf("timeline %s", steps(sb))
	}
	// Both IDs reach the same row.
	byUUID, byProvider := s.get(sb.ID), s.get(sb.SandboxID)
	if byUUID.ID != sb.ID || byProvider.ID != sb.ID || byUUID.BilledCredits != "0.000000" || byUUID.EstimatedTotalCredits == "" {
		t.Fatalf("get by both IDs: %+v / %+v", byUUID, byProvider)
	}

	var got apiv1.Sandbox
	s.call("POST", "/api/v1/sandboxes/"+sb.SandboxID+"/connect", map[string]any{"timeout": 900}, http.StatusOK, &got)
	if got.AccessToken != sb.AccessToken || !got.ExpiresAt.After(*sb.ExpiresAt) {
		t.Errorf("connect: token %q expires %v", got.AccessToken, got.ExpiresAt)
	}
	s.call("POST", "/api/v1/sandboxes/"+sb.SandboxID+"/pause", nil, http.StatusOK, &got)
	if got.State != "paused" || got.PauseReason != "user" || got.AccessToken != "" || got.RuntimeURL != "" || got.PausedAt == nil {
		t.Errorf("pause: %+v", got)
	}
	s.fail("POST", "/api/v1/sandboxes/"+sb.ID+"/pause", nil, http.StatusConflict, "it is paused")
	s.fail("GET", "/api/v1/sandboxes/"+sb.ID+"/metrics", nil, http.StatusConflict, "is paused")
	s.fail("POST", "/api/v1/sandboxes/"+sb.ID+"/refreshes", map[string]any{"duration": 60}, http.StatusConflict, "it is paused")
	s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/resume", map[string]any{"timeout": 300}, http.StatusOK, &got)
	if got.State != "running" || got.PauseReason != "" || got.Timeout != 300 {
		t.Errorf("resume: %+v", got)
	}
	s.fail("POST", "/api/v1/sandboxes/"+sb.ID+"/resume", nil, http.StatusConflict, "it is running")
	s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/connect", nil, http.StatusOK, &got) // an empty body is fine
	before := *got.ExpiresAt
	s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/refreshes", map[string]any{"duration": 3600}, http.StatusOK, &got)
	if !got.ExpiresAt.After(before) {
		t.Errorf("refresh did not extend: %v → %v", before, got.ExpiresAt)
	}
	s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/timeout", map[string]any{"timeout": 120}, http.StatusOK, &got)
	if got.Timeout != 120 || got.ExpiresAt.Sub(time.Now()) > 121*time.Second {
		t.Errorf("timeout: %d, expires %v", got.Timeout, got.ExpiresAt)
	}

	var m apiv1.Metrics
	s.call("GET", "/api/v1/sandboxes/"+sb.ID+"/metrics", nil, http.StatusOK, &m)
	if m.Processes != 1 || m.At.IsZero() {
		t.Errorf("metrics %+v", m)
	}
	// Logs: sbx's lifecycle lines and the provider's, paged.
	var page apiv1.LogPage
	s.call("GET", "/api/v1/sandboxes/"+sb.ID+"/logs?limit=3", nil, http.StatusOK, &page)
	if len(page.Items) != 3 || page.NextCursor == "" || page.Items[0].Line != "creating: provider memory, template base" {
		t.Fatalf("first log page: %+v", page)
	}
	var lines []string
	for _, l := range page.Items {
		lines = append(lines, l.Source+": "+l.Line)
	}
	for cursor := page.NextCursor; ; {
		var next apiv1.LogPage
		s.call("GET", "/api/v1/sandboxes/"+sb.ID+"/logs?limit=3&cursor="+cursor, nil, http.StatusOK, &next)
		for _, l := range next.Items {
			lines = append(lines, l.Source+": "+l.Line)
		}
		if cursor = next.NextCursor; cursor == "" {
			break
		}
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{"stdout: booted template base", "sbx: paused", "stdout: resumed", "sbx: timeout_set"} {
		if !strings.Contains(all, want) {
			t.Errorf("logs lack %q:\n%s", want, all)
		}
	}

	s.call("DELETE", "/api/v1/sandboxes/"+sb.SandboxID, nil, http.StatusOK, &got)
	if got.State != "killed" || got.EndReason != "deleted" || got.EndedAt == nil || got.ExpiresAt != nil {
		t.Errorf("delete: %+v", got)
	}
	s.fail("DELETE", "/api/v1/sandboxes/"+sb.ID, nil, http.StatusConflict, "it is killed")
	s.fail("POST", "/api/v1/sandboxes/"+sb.ID+"/connect", nil, http.StatusConflict, "it is killed")
	// The row stays for audit and billing.
	after := s.get(sb.SandboxID)
	want := "creating,ready,connected,pausing,paused,resuming,resumed,connected,refreshed,timeout_set,killing,killed"
	if after.State != "killed" || steps(after) != want {
		t.Errorf("after delete: %s, timeline\n %s\nwant\n %s", after.State, steps(after), want)
	}
}

func TestCreateAnswersStartingAtOnce(t *testing.T) {
	s := startServer(t, serverOpts{createDelay: 300 * time.Millisecond})
	sb := s.create(nil)
	if sb.State != "starting" || sb.AccessToken != "" || sb.StartedAt != nil {
		t.Fatalf("without waitReady: %+v", sb)
	}
	sb = s.waitFor(sb.ID, "running", state("running"))
	if sb.AccessToken == "" || steps(sb) != "creating,ready" {
		t.Fatalf("once ready: %+v", sb)
	}
	// A delete during the create waits for it, then kills.
	early := s.create(nil)
	var got apiv1.Sandbox
	s.call("DELETE", "/api/v1/sandboxes/"+early.SandboxID, nil, http.StatusOK, &got)
	if got.State != "killed" || steps(got) != "creating,ready,killing,killed" {
		t.Fatalf("delete while starting: %s, %s", got.State, steps(got))
	}
}

func TestFailedCreateShowsDiagnostic(t *testing.T) {
	s := startServer(t, serverOpts{})
	e := s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "fail-boot", "waitReady": true}, http.StatusBadGateway, "start command exited")
	if e.Type != "provider_error" {
		t.Errorf("type %s", e.Type)
	}
	var list apiv1.SandboxList
	s.call("GET", "/api/v1/sandboxes?state=failed", nil, http.StatusOK, &list)
	if len(list.Items) != 1 || !strings.Contains(list.Items[0].Diagnostic, "fail-boot failed to start") || list.Items[0].EndReason != "error" {
		t.Fatalf("failed sandboxes: %+v", list.Items)
	}
	// A failed sandbox can still be deleted; it keeps its diagnostic.
	var got apiv1.Sandbox
	s.call("DELETE", "/api/v1/sandboxes/"+list.Items[0].SandboxID, nil, http.StatusOK, &got)
	if got.State != "killed" || got.Diagnostic == "" {
		t.Errorf("deleting a failed sandbox: %+v", got)
	}
}

func TestTimeoutsKillOrPause(t *testing.T) {
	s := startServer(t, serverOpts{})
	kill := s.create(map[string]any{"timeout": 1, "waitReady": true})
	pause := s.create(map[string]any{"timeout": 1, "waitReady": true, "autoPause": true})
	k := s.waitFor(kill.ID, "killed", state("killed"))
	if k.EndReason != "timeout" {
		t.Errorf("expired sandbox: end reason %q", k.EndReason)
	}
	p := s.waitFor(pause.ID, "paused", state("paused"))
	if p.PauseReason != "timeout" || !strings.Contains(steps(p), "pausing,paused") {
		t.Errorf("expired autoPause sandbox: %+v", p)
	}
	// A paused sandbox resumes on connect, with a fresh timeout.
	var got apiv1.Sandbox
	s.call("POST", "/api/v1/sandboxes/"+pause.ID+"/connect", map[string]any{"timeout": 60}, http.StatusOK, &got)
	if got.State != "running" || got.ExpiresAt == nil || time.Until(*got.ExpiresAt) < 50*time.Second {
		t.Errorf("connect after timeout pause: %+v", got)
	}
}

func steps(sb apiv1.Sandbox) string {
	var s []string
	for _, e := range sb.Timeline {
		s = append(s, e.Step)
	}
	return strings.Join(s, ",")
}

// rawGet returns a sandbox's detail as sent.
func (s *server) rawGet(id string) string {
	_, data := s.do("GET", "/api/v1/sandboxes/"+id, nil)
	return string(data)
}
