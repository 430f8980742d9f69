package ledger_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
)

func TestRuntimes(t *testing.T) { dialects(t, runtimes) }

// A project's runtime: idle with the default configuration, configured,
// listed (by project too), and out of other orgs' reach.
func runtimes(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	org, ws, p, _ := s.CreateOrg(ctx, "acme", t0)
	other, otherWS, _, _ := s.CreateOrg(ctx, "other", t0)
	rt, err := s.Runtime(ctx, p.ID)
	if err != nil || rt.Status != sbx.RuntimeIdle || rt.SandboxID != "" || rt.Config.TemplateID != "base" {
		t.Fatalf("a new project's runtime: %+v %v", rt, err)
	}
	cfg := sbx.RuntimeConfig{TemplateID: "code-interpreter", Resources: sbx.Resources{MilliCPU: 500, MemoryMB: 256}, Timeout: time.Hour,
		Ports: []int{8080}, Env: map[string]string{"A": "1"}, Labels: map[string]string{"team": "ml"}}
	got, err := s.SetRuntimeConfig(ctx, org.ID, ws.ID, rt.ID, cfg, t0.Add(time.Second))
	if err != nil || got.Config.TemplateID != "code-interpreter" || got.Config.Timeout != time.Hour || got.Config.Ports[0] != 8080 ||
		got.Config.Env["A"] != "1" || got.Config.Labels["team"] != "ml" || got.Config.Resources.MemoryMB != 256 || !got.UpdatedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("configured: %+v %v", got, err)
	}
	if _, err := s.GetRuntime(ctx, other.ID, otherWS.ID, rt.ID); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Fatalf("another org's runtime: %v", err)
	}
	if _, err := s.SetRuntimeConfig(ctx, other.ID, otherWS.ID, rt.ID, cfg, t0); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Fatalf("configuring another org's runtime: %v", err)
	}
	second, secondRT, err := s.CreateProject(ctx, org.ID, ws.ID, "second", t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	all, next, err := s.Runtimes(ctx, org.ID, ws.ID, "", ledger.Page{Limit: 1})
	if err != nil || len(all) != 1 || all[0].ID != rt.ID || next == "" {
		t.Fatalf("first page: %+v %q %v", all, next, err)
	}
	if all, next, err = s.Runtimes(ctx, org.ID, ws.ID, "", ledger.Page{Limit: 1, Cursor: next}); err != nil || len(all) != 1 || all[0].ID != secondRT.ID || next != "" {
		t.Fatalf("second page: %+v %q %v", all, next, err)
	}
	if mine, next, err := s.Runtimes(ctx, org.ID, ws.ID, second.ID, ledger.Page{}); err != nil || len(mine) != 1 || mine[0].ID != secondRT.ID || next != "" {
		t.Fatalf("one project's: %+v %v", mine, err)
	}
}

func TestRuntimeStartsRace(t *testing.T) { dialects(t, runtimeStartsRace) }

// Concurrent starts of one runtime: exactly one sandbox becomes its
// current one, the others are conflicts and leave no row; once that sandbox
// ends, the runtime is idle and takes a new one.
func runtimeStartsRace(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	org, ws, p, _ := s.CreateOrg(ctx, "acme", t0)
	rt, _ := s.Runtime(ctx, p.ID)
	const n = 8
	sandboxes := make([]sbx.Sandbox, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		sandboxes[i] = newSandbox(org, ws, p, t0)
		sandboxes[i].Kind = sbx.KindRuntime
		wg.Go(func() {
			errs[i] = s.InsertRuntimeSandbox(ctx, rt.ID, nil, sandboxes[i], sbx.Event{At: t0, Step: "creating"})
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("starts %d and %d both won", won, i)
		case err == nil:
			won = i
		case sbx.ErrorCode(err) != sbx.EConflict:
			t.Fatalf("start %d: %v", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no start won")
	}
	for i, sb := range sandboxes {
		if _, err := s.GetSandbox(ctx, org.ID, sb.ID); (err == nil) != (i == won) {
			t.Errorf("sandbox %d (won %v) recorded: %v", i, i == won, err)
		}
	}
	if rt, _ = s.Runtime(ctx, p.ID); rt.Status != sbx.RuntimeRunning || rt.SandboxID != sandboxes[won].ID || rt.ProviderSandboxID != sandboxes[won].ProviderSandboxID {
		t.Fatalf("after the race: %+v", rt)
	}
	if _, err := s.UpdateSandbox(ctx, sandboxes[won].ID, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		sb.State, sb.EndedAt, sb.UpdatedAt = sbx.StateKilled, t0.Add(time.Second), t0.Add(time.Second)
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if rt, _ = s.Runtime(ctx, p.ID); rt.Status != sbx.RuntimeIdle || rt.SandboxID != "" {
		t.Fatalf("after its sandbox ended: %+v", rt)
	}
	next := newSandbox(org, ws, p, t0.Add(time.Minute))
	if err := s.InsertRuntimeSandbox(ctx, rt.ID, nil, next); err != nil {
		t.Fatalf("a start after the end: %v", err)
	}
}
