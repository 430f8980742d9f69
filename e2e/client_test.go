package e2e

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
)

// The Go client against a real server, in the shape users know from E2B's SDK.
func TestGoClient(t *testing.T) {
	s := startServer(t, serverOpts{})
	ctx := context.Background()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})

	sb, err := c.Create(ctx, "base", &client.CreateOptions{Timeout: 30 * time.Minute, WaitReady: true,
		EnvVars: map[string]string{"FOO": "bar"}, Metadata: map[string]string{"purpose": "demo"}})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Data().State != "running" || sb.SandboxID() == "" || sb.ID() == "" {
		t.Fatalf("created: %+v", sb.Data())
	}
	if err := sb.SetTimeout(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := sb.Refresh(ctx, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := sb.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if sb.Data().State != "paused" {
		t.Fatalf("after Pause the handle says %s", sb.Data().State)
	}
	var apiErr *apiv1.Error
	if err := sb.Pause(ctx); !errors.As(err, &apiErr) || apiErr.Code != http.StatusConflict {
		t.Fatalf("second pause: %v", err)
	}
	// Connect from "another process" by ID resumes it.
	again, err := c.Connect(ctx, sb.SandboxID(), &client.ConnectOptions{Timeout: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if again.Data().State != "running" || again.Data().AccessToken == "" {
		t.Fatalf("connect: %+v", again.Data())
	}
	info, err := sb.Info(ctx)
	if err != nil || info.State != "running" || info.Timeout != 1800 {
		t.Fatalf("info: %v %+v", err, info)
	}
	if err := sb.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sb.Resume(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := sb.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Get(ctx, sb.ID()); got == nil || got.State != "killed" {
		t.Fatalf("after delete: %+v", got)
	}
	if _, err := c.Get(ctx, "inope"); !errors.As(err, &apiErr) || apiErr.Code != http.StatusNotFound {
		t.Fatalf("unknown sandbox: %v", err)
	}
}
