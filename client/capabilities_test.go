package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
)

// Every capability method sends its route, escaped, with its body.
func TestCapabilityRequests(t *testing.T) {
	f, c := newFake(t, http.StatusOK, `{}`)
	ctx := context.Background()
	off, v := false, "1.1.0"
	const rt = "/api/v1/org/acme/ws/research/runtimes/rt-1/capabilities"
	for _, tc := range []struct {
		call                func() error
		method, path, query string
		body                map[string]any
	}{
		{func() error { _, err := c.CapabilityCatalog(ctx); return err }, "GET", "/api/v1/capabilities/catalog", "", nil},
		{func() error { _, err := c.CapabilityInventory(ctx, "acme", client.Page{Limit: 3}); return err }, "GET", "/api/v1/org/acme/capabilities", "limit=3", nil},
		{func() error { _, err := c.DeleteCapability(ctx, "acme", "tools", "1.0.0+b"); return err }, "DELETE", "/api/v1/org/acme/capabilities/tools/1.0.0+b", "", nil},
		{func() error {
			_, err := c.RuntimeCapabilities(ctx, "acme", "research", "rt-1", client.Page{Cursor: "n"})
			return err
		}, "GET", rt, "cursor=n", nil},
		{func() error {
			_, err := c.InstallCapability(ctx, "acme", "research", "rt-1", apiv1.InstallCapabilityRequest{Name: "git-toolkit", Source: "catalog",
				Flags: map[string]bool{"identity": true}, Enabled: &off})
			return err
		}, "POST", rt, "", map[string]any{"name": "git-toolkit", "source": "catalog", "flags": map[string]any{"identity": true}, "enabled": false}},
		{func() error {
			_, err := c.UpdateCapability(ctx, "acme", "research", "rt-1", "b-1", apiv1.UpdateCapabilityRequest{Version: &v, Enabled: &off, Flags: &map[string]bool{}})
			return err
		}, "PATCH", rt + "/b-1", "", map[string]any{"version": "1.1.0", "enabled": false, "flags": map[string]any{}}},
		{func() error { _, err := c.UninstallCapability(ctx, "acme", "research", "rt-1", "b-1"); return err }, "DELETE", rt + "/b-1", "", nil},
		{func() error { _, err := c.ResolvedCapabilities(ctx, "acme", "research", "rt-1"); return err }, "GET", rt + "/resolved", "", nil},
	} {
		if err := tc.call(); err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		check(t, f.last(t), tc.method, tc.path, tc.query, tc.body)
	}
}

// An upload sends the archive's bytes as application/gzip; a refusal is the
// server's envelope.
func TestUploadCapability(t *testing.T) {
	archive := []byte("\x1f\x8b\x08\x00 not really")
	var got []byte
	var contentType, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		contentType, path = r.Header.Get("Content-Type"), r.URL.Path
		if string(got) == "bad" {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"code":400,"type":"invalid","detail":"the archive is not gzip-compressed","errors":[]}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"name":"tools","version":"1.0.0","source":"inventory","sha256":"ab"}`)
	}))
	defer srv.Close()
	c := client.New(client.Options{URL: srv.URL, APIKey: "k"})
	b, err := c.UploadCapability(context.Background(), "acme", archive)
	if err != nil || b.Name != "tools" || b.SHA256 != "ab" || string(got) != string(archive) || contentType != "application/gzip" || path != "/api/v1/org/acme/capabilities" {
		t.Fatalf("upload: %+v %v; sent %q as %s to %s", b, err, got, contentType, path)
	}
	_, err = c.UploadCapability(context.Background(), "acme", []byte("bad"))
	if e, ok := err.(*apiv1.Error); !ok || e.Code != 400 || e.Detail != "the archive is not gzip-compressed" {
		t.Fatalf("refusal: %v", err)
	}
}
