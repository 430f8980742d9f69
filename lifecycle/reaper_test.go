package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
)

func TestReapKillsOrPausesAtExpiry(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	kill := e.create(lifecycle.CreateRequest{Timeout: 10 * time.Second})
	pause := e.create(lifecycle.CreateRequest{Timeout: 10 * time.Second, AutoPause: true})
	later := e.create(lifecycle.CreateRequest{Timeout: 20 * time.Second})

	e.clock.Advance(10*time.Second - time.Microsecond)
	e.loops().Reap(ctx)
	if got := e.get(kill.ID).State; got != sbx.StateRunning {
		t.Fatalf("reaped before expiry: %s", got)
	}
	e.clock.Advance(time.Microsecond)
	e.loops().Reap(ctx)

	k := e.get(kill.ID)
	if k.State != sbx.StateKilled || k.EndReason != sbx.EndTimeout {
		t.Errorf("expired sandbox: state %s, end reason %s; want killed, timeout", k.State, k.EndReason)
	}
	p := e.get(pause.ID)
	if p.State != sbx.StatePaused || p.PauseReason != sbx.PauseTimeout {
		t.Errorf("expired autoPause sandbox: state %s, pause reason %s; want paused, timeout", p.State, p.PauseReason)
	}
	if got := e.get(later.ID).State; got != sbx.StateRunning {
		t.Errorf("a sandbox not yet expired was reaped: %s", got)
	}
	// Paused sandboxes do not expire; resuming starts a new timeout.
	e.clock.Advance(time.Hour)
	e.loops().Reap(ctx)
	if got := e.get(pause.ID).State; got != sbx.StatePaused {
		t.Errorf("paused sandbox changed to %s", got)
	}
}

// The reaper loop acts within one second of an expiry, on its clock alone.
func TestReaperLoopActsWithinOneSecond(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.loops().RunReaper(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	sb := e.create(lifecycle.CreateRequest{Timeout: 30 * time.Second})
	for step := 0; step < 31*4; step++ { // quarter seconds, past the expiry
		e.clock.Advance(250 * time.Millisecond)
		if waitState(t, e, sb.ID, sbx.StateKilled, 20*time.Millisecond) {
			break
		}
	}
	k := e.get(sb.ID)
	if k.State != sbx.StateKilled {
		t.Fatalf("not killed 31 s after a 30 s timeout: %s", k.State)
	}
	if late := k.EndedAt.Sub(sb.ExpiresAt); late < 0 || late > time.Second {
		t.Fatalf("killed %s after expiry, want within one second", late)
	}
}

// waitState polls the ledger for a state, for at most d of real time.
func waitState(t *testing.T, e *env, id string, want sbx.State, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if e.get(id).State == want {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}
