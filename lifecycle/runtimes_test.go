package lifecycle_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/providertest"
)

// A runtime's start that gives up on a sandbox not ready in time kills it:
// the runtime reads idle again and no compute is left behind.
func TestRuntimeStartKillsAnUnreadySandbox(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	slow := providertest.NewMemory(providertest.MemoryOptions{CreateDelay: time.Second})
	m := lifecycle.New(e.store, []sbx.Provider{slow}, lifecycle.Config{DefaultProvider: providertest.MemoryName, ReadyTimeout: 30 * time.Second},
		e.clock, slog.New(slog.DiscardHandler))
	rt, err := e.store.Runtime(ctx, e.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := lifecycle.NewRuntimes(m, e.store).Start(ctx, e.caller, rt, lifecycle.RuntimeStart{Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 512}})
		done <- err
	}()
	for waiting := true; waiting; {
		select {
		case err := <-done:
			wantCode(t, err, sbx.ETimeout, "was not ready within 30s; it is still starting (no diagnostic yet); the start gave it up")
			waiting = false
		case <-time.After(time.Millisecond):
			e.clock.Advance(time.Second)
		}
	}
	if err := m.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if rt, err = e.store.GetRuntime(ctx, rt.OrgID, rt.WorkspaceID, rt.ID); err != nil || rt.Status != "idle" {
		t.Fatalf("runtime %+v, %v; want idle", rt, err)
	}
	all, err := e.store.SandboxesInWorkspace(ctx, rt.WorkspaceID, sbx.StateKilled, sbx.StateFailed, sbx.StateRunning, sbx.StateStarting)
	if err != nil || len(all) != 1 || all[0].State != sbx.StateKilled || all[0].EndReason != sbx.EndError {
		t.Errorf("sandboxes %+v, %v; want one, killed for an error", all, err)
	}
	if live, err := slow.List(ctx); err != nil || len(live) != 0 {
		t.Errorf("compute left: %+v, %v", live, err)
	}
}
