package client_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
)

// Every secret and session method sends its route, escaped, with its body.
func TestSecretAndSessionRequests(t *testing.T) {
	f, c := newFake(t, http.StatusOK, `{}`)
	ctx := context.Background()
	for _, tc := range []struct {
		call                func() error
		method, path, query string
		body                map[string]any
	}{
		{func() error { _, err := c.Secrets(ctx, "acme"); return err }, "GET", "/api/v1/org/acme/secrets", "", nil},
		{func() error {
			_, _, err := c.SetSecret(ctx, "acme", apiv1.SetSecretRequest{Name: "TOKEN", Value: "v", Scope: "user"})
			return err
		}, "POST", "/api/v1/org/acme/secrets", "", map[string]any{"name": "TOKEN", "value": "v", "scope": "user"}},
		{func() error { _, err := c.DeleteSecret(ctx, "acme", "TOKEN", ""); return err }, "DELETE", "/api/v1/org/acme/secrets/TOKEN", "", nil},
		{func() error { _, err := c.DeleteSecret(ctx, "acme", "a/b", "org"); return err }, "DELETE", "/api/v1/org/acme/secrets/a%2Fb", "scope=org", nil},
		{func() error {
			_, err := c.Sessions(ctx, "acme", "research", "", client.Page{Limit: 2, Cursor: "n"})
			return err
		},
			"GET", "/api/v1/org/acme/ws/research/sessions", "cursor=n&limit=2", nil},
		{func() error { _, err := c.Sessions(ctx, "acme", "research", "rt1", client.Page{}); return err },
			"GET", "/api/v1/org/acme/ws/research/sessions", "runtime_id=rt1", nil},
		{func() error {
			_, err := c.CreateSession(ctx, "acme", "research", apiv1.CreateSessionRequest{RuntimeID: "rt1", Title: "t"})
			return err
		}, "POST", "/api/v1/org/acme/ws/research/sessions", "", map[string]any{"runtime_id": "rt1", "title": "t"}},
		{func() error { _, err := c.Session(ctx, "acme", "research", "s1"); return err }, "GET", "/api/v1/org/acme/ws/research/sessions/s1", "", nil},
		{func() error {
			_, err := c.SessionMessages(ctx, "acme", "research", "s1", client.Page{Cursor: "7"})
			return err
		},
			"GET", "/api/v1/org/acme/ws/research/sessions/s1/messages", "cursor=7", nil},
		{func() error {
			_, err := c.AppendSessionMessages(ctx, "acme", "research", "s1", apiv1.NewSessionMessage{Role: "user", Content: "hi"})
			return err
		}, "POST", "/api/v1/org/acme/ws/research/sessions/s1/messages", "", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
	} {
		if err := tc.call(); err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		check(t, f.last(t), tc.method, tc.path, tc.query, tc.body)
	}
}

// SetSecret tells a new secret (201) from a new value (200).
func TestSetSecretCreatedOrReplaced(t *testing.T) {
	for _, tc := range []struct {
		status  int
		created bool
	}{{http.StatusCreated, true}, {http.StatusOK, false}} {
		_, c := newFake(t, tc.status, `{"id":"s1","name":"TOKEN","scope":"org"}`)
		sec, created, err := c.SetSecret(context.Background(), "acme", apiv1.SetSecretRequest{Name: "TOKEN", Value: "v"})
		if err != nil || created != tc.created || sec.ID != "s1" || sec.Scope != "org" {
			t.Errorf("status %d: %+v %v %v", tc.status, sec, created, err)
		}
	}
	_, c := newFake(t, http.StatusForbidden, `{"code":403,"type":"forbidden","detail":"setting an org secret needs the admin or owner role","errors":[]}`)
	_, _, err := c.SetSecret(context.Background(), "acme", apiv1.SetSecretRequest{Name: "TOKEN", Value: "v"})
	if e, ok := err.(*apiv1.Error); !ok || e.Code != 403 || e.Detail != "setting an org secret needs the admin or owner role" {
		t.Fatalf("error %#v", err)
	}
}
