package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
)

// sessionsPath is the default workspace's sessions of the server's org.
const sessionsPath = "/api/v1/org/default/ws/default/sessions"

// Agent sessions over HTTP: made on a runtime of the workspace, listed in
// pages and by runtime, read; a transcript appended to and paged by seq; a
// project's key held to its runtime's; and a session that outlives a
// restart of serve on the same runtime.
func TestSessionsOverHTTP(t *testing.T) {
	s := startServer(t, serverOpts{})
	var me apiv1.Me
	s.call("GET", "/api/v1/me", nil, http.StatusOK, &me)
	var rts apiv1.RuntimeList
	s.call("GET", runtimesPath, nil, http.StatusOK, &rts)
	rt := rts.Items[0]

	var first, second, third apiv1.Session
	s.call("POST", sessionsPath, apiv1.CreateSessionRequest{RuntimeID: rt.ID, Title: "fix the flaky test"}, http.StatusCreated, &first)
	if first.ID == "" || first.RuntimeID != rt.ID || first.WorkspaceID != me.Workspace.ID || first.Title != "fix the flaky test" || first.CreatedBy != me.Key.ID {
		t.Fatalf("made %+v (key %s)", first, me.Key.ID)
	}
	s.call("POST", sessionsPath, apiv1.CreateSessionRequest{RuntimeID: rt.ID}, http.StatusCreated, &second)
	var evals apiv1.Project
	s.call("POST", "/api/v1/org/default/ws/default/projects", apiv1.CreateProjectRequest{Name: "evals"}, http.StatusCreated, &evals)
	s.call("POST", sessionsPath, map[string]any{"runtime_id": evals.RuntimeID, "title": "evals"}, http.StatusCreated, &third)

	// Pages, oldest first, and one runtime's.
	var page apiv1.SessionList
	s.call("GET", sessionsPath+"?limit=2", nil, http.StatusOK, &page)
	if len(page.Items) != 2 || page.Items[0].ID != first.ID || page.Items[1].ID != second.ID || page.NextCursor == "" {
		t.Fatalf("first page: %+v", page)
	}
	s.call("GET", sessionsPath+"?limit=2&cursor="+page.NextCursor, nil, http.StatusOK, &page)
	if len(page.Items) != 1 || page.Items[0].ID != third.ID || page.NextCursor != "" {
		t.Fatalf("second page: %+v", page)
	}
	s.call("GET", sessionsPath+"?runtime_id="+evals.RuntimeID, nil, http.StatusOK, &page)
	if len(page.Items) != 1 || page.Items[0].ID != third.ID {
		t.Fatalf("the evals runtime's sessions: %+v", page)
	}
	var got apiv1.Session
	s.call("GET", sessionsPath+"/"+first.ID, nil, http.StatusOK, &got)
	if got != first {
		t.Fatalf("get %+v, made %+v", got, first)
	}

	// Bad requests and things that are not there.
	s.fail("POST", sessionsPath, apiv1.CreateSessionRequest{RuntimeID: "no-such-runtime"}, http.StatusNotFound, "runtime no-such-runtime not found in this workspace")
	s.fail("POST", sessionsPath, map[string]any{"title": "x"}, http.StatusBadRequest, "runtime_id is required")
	s.fail("POST", sessionsPath, map[string]any{"runtime_id": rt.ID, "sandbox_id": "x"}, http.StatusBadRequest, `unknown field "sandbox_id"`)
	s.fail("POST", sessionsPath, apiv1.CreateSessionRequest{RuntimeID: rt.ID, Title: strings.Repeat("t", 257)}, http.StatusBadRequest, "title is longer than 256 bytes")
	s.fail("GET", sessionsPath+"?runtime_id=no-such-runtime", nil, http.StatusNotFound, "runtime no-such-runtime not found")
	s.fail("GET", sessionsPath+"?limit=0", nil, http.StatusBadRequest, "limit")
	s.fail("GET", sessionsPath+"?state=open", nil, http.StatusBadRequest, `unknown query parameter "state"`)
	s.fail("GET", sessionsPath+"/no-such-session", nil, http.StatusNotFound, "session no-such-session not found in this workspace")
	s.fail("GET", "/api/v1/org/default/ws/nope/sessions", nil, http.StatusNotFound, "workspace nope not found")

	// The transcript: appends numbered after the last, all or none.
	msgsPath := sessionsPath + "/" + first.ID + "/messages"
	var appended apiv1.SessionMessageList
	s.call("POST", msgsPath, apiv1.AppendMessagesRequest{Messages: []apiv1.NewSessionMessage{
		{Role: "system", Content: "be brief"}, {Role: "user", Content: "why does it flake?"}}}, http.StatusCreated, &appended)
	if len(appended.Items) != 2 || appended.Items[0].Seq != 1 || appended.Items[1].Seq != 2 || appended.Items[1].Content != "why does it flake?" {
		t.Fatalf("appended %+v", appended)
	}
	s.call("POST", msgsPath, apiv1.AppendMessagesRequest{Messages: []apiv1.NewSessionMessage{
		{Role: "assistant", Content: "a race"}, {Role: "tool", Content: `{"ok":true}`}, {Role: "assistant", Content: ""}}}, http.StatusCreated, &appended)
	if len(appended.Items) != 3 || appended.Items[0].Seq != 3 || appended.Items[2].Seq != 5 || appended.Items[1].Role != "tool" {
		t.Fatalf("appended %+v", appended)
	}
	for _, c := range []struct {
		body   any
		detail string
	}{
		{map[string]any{"messages": []any{}}, "messages must hold 1 to 100 messages, not 0"},
		{map[string]any{}, "messages must hold 1 to 100 messages, not 0"},
		{map[string]any{"messages": []any{map[string]any{"role": "user", "content": "ok"}, map[string]any{"role": "robot", "content": "x"}}},
			`messages[1].role "robot" must be one of user, assistant, system, tool`},
		{map[string]any{"messages": []any{map[string]any{"role": "user", "content": "a\x00"}}}, "messages[0].content holds a NUL"},
		{map[string]any{"messages": []any{map[string]any{"role": "user", "content": 1}}}, "must be a string"},
		{map[string]any{"messages": []any{}, "mcp": true}, `field "mcp" is not supported`},
	} {
		s.fail("POST", msgsPath, c.body, http.StatusBadRequest, c.detail)
	}
	s.fail("POST", sessionsPath+"/no-such-session/messages", apiv1.AppendMessagesRequest{Messages: []apiv1.NewSessionMessage{{Role: "user"}}},
		http.StatusNotFound, "session no-such-session not found")

	var msgs apiv1.SessionMessageList
	var seqs []int64
	for cursor := ""; ; {
		s.call("GET", msgsPath+"?limit=2&cursor="+cursor, nil, http.StatusOK, &msgs)
		for _, m := range msgs.Items {
			seqs = append(seqs, m.Seq)
		}
		if cursor = msgs.NextCursor; cursor == "" {
			break
		}
	}
	if len(seqs) != 5 || seqs[0] != 1 || seqs[4] != 5 {
		t.Fatalf("paged seqs %v", seqs)
	}
	s.call("GET", msgsPath+"?cursor=4", nil, http.StatusOK, &msgs)
	if len(msgs.Items) != 1 || msgs.Items[0].Seq != 5 || msgs.Items[0].Role != "assistant" || msgs.NextCursor != "" {
		t.Fatalf("after seq 4: %+v", msgs)
	}
	s.fail("GET", msgsPath+"?cursor=x", nil, http.StatusBadRequest, "cursor \"x\" must be a message's seq")
	s.fail("GET", sessionsPath+"/no-such-session/messages", nil, http.StatusNotFound, "session no-such-session not found")

	// A project's key reaches only its project's runtime's sessions.
	var pk apiv1.CreatedKey
	s.call("POST", "/api/v1/org/default/keys", apiv1.CreateKeyRequest{Name: "evals-ci", ProjectID: evals.ID}, http.StatusCreated, &pk)
	s.callKey(pk.Secret, "GET", sessionsPath, nil, http.StatusOK, &page)
	if len(page.Items) != 1 || page.Items[0].ID != third.ID {
		t.Fatalf("a project's key lists %+v", page)
	}
	s.failKey(pk.Secret, "GET", sessionsPath+"/"+first.ID, nil, http.StatusNotFound, "session "+first.ID+" not found")
	s.failKey(pk.Secret, "GET", msgsPath, nil, http.StatusNotFound, "session "+first.ID+" not found")
	s.failKey(pk.Secret, "POST", sessionsPath, apiv1.CreateSessionRequest{RuntimeID: rt.ID}, http.StatusNotFound, "runtime "+rt.ID+" not found")
	s.failKey(pk.Secret, "GET", sessionsPath+"?runtime_id="+rt.ID, nil, http.StatusNotFound, "runtime "+rt.ID+" not found")
	var mine apiv1.Session
	s.callKey(pk.Secret, "POST", sessionsPath, apiv1.CreateSessionRequest{RuntimeID: evals.RuntimeID}, http.StatusCreated, &mine)
	s.callKey(pk.Secret, "POST", sessionsPath+"/"+mine.ID+"/messages", apiv1.AppendMessagesRequest{Messages: []apiv1.NewSessionMessage{{Role: "user", Content: "go"}}},
		http.StatusCreated, &appended)
	if mine.CreatedBy != pk.Key.ID || appended.Items[0].Seq != 1 {
		t.Fatalf("a project's key's session %+v, %+v", mine, appended)
	}

	// A member's key acts in the workspaces its member is in; another org's
	// key finds no such org.
	ada, adaID := s.memberKey("ada@example.com", "member")
	s.callKey(ada, "POST", sessionsPath, apiv1.CreateSessionRequest{RuntimeID: rt.ID}, http.StatusCreated, &got)
	if got.CreatedBy != adaID {
		t.Fatalf("ada's session is by %s, want %s", got.CreatedBy, adaID)
	}
	var research apiv1.Workspace
	s.call("POST", "/api/v1/org/default/workspaces", apiv1.CreateWorkspaceRequest{Name: "research"}, http.StatusCreated, &research)
	s.failKey(ada, "GET", "/api/v1/org/default/ws/research/sessions", nil, http.StatusForbidden, "listing sessions needs the member, admin or owner role in workspace research")
	s.failKey(s.otherOrgKey(t), "GET", sessionsPath+"/"+first.ID, nil, http.StatusNotFound, "org default not found")

	// The session is the runtime's, not a sandbox's: it outlives serve's
	// restart, on the same runtime, with its transcript whole.
	s.restart(s.opts)
	s.call("GET", sessionsPath+"/"+first.ID, nil, http.StatusOK, &got)
	var after apiv1.Runtime
	s.call("GET", runtimesPath+"/"+rt.ID, nil, http.StatusOK, &after)
	s.call("GET", msgsPath, nil, http.StatusOK, &msgs)
	if got.RuntimeID != rt.ID || got.Title != first.Title || after.ID != rt.ID || len(msgs.Items) != 5 {
		t.Fatalf("after a restart: session %+v, runtime %+v, %d messages", got, after, len(msgs.Items))
	}
	s.call("POST", msgsPath, apiv1.AppendMessagesRequest{Messages: []apiv1.NewSessionMessage{{Role: "user", Content: "still here?"}}}, http.StatusCreated, &appended)
	if appended.Items[0].Seq != 6 {
		t.Fatalf("the transcript goes on at %d, want 6", appended.Items[0].Seq)
	}
}
