package lifecycle_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/providertest"
)

// A provider without an agent: the agent's routes are a clear 501, the
// runtime URL checks the token before anything, and a rotated token
// replaces the old one in the ledger.
func TestAgentWithoutOneAndTokenRotation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.create(lifecycle.CreateRequest{})
	if _, err := e.m.Agent(ctx, e.caller, sb.ID); sbx.ErrorCode(err) != sbx.EUnsupported {
		t.Errorf("Agent on a provider that runs none: %v", err)
	}
	if _, err := e.m.AgentOf(ctx, sb.ProviderSandboxID, "wrong"); sbx.ErrorCode(err) != sbx.EUnauthorized {
		t.Errorf("AgentOf with a wrong token: %v", err)
	}
	if _, err := e.m.AgentOf(ctx, sb.ProviderSandboxID, sb.AccessToken); sbx.ErrorCode(err) != sbx.EUnsupported {
		t.Errorf("AgentOf with the right token: %v", err)
	}
	rotated, err := e.m.RotateToken(ctx, sb)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.AccessToken == sb.AccessToken || e.get(sb.ID).AccessToken != rotated.AccessToken {
		t.Errorf("the token was not replaced: %q → %q (ledger %q)", sb.AccessToken, rotated.AccessToken, e.get(sb.ID).AccessToken)
	}
	if _, err := e.m.AgentOf(ctx, sb.ProviderSandboxID, sb.AccessToken); sbx.ErrorCode(err) != sbx.EUnauthorized {
		t.Errorf("the old token still works: %v", err)
	}
}

// slowResume is the Memory provider with resumes held until released.
type slowResume struct {
	*providertest.Memory
	entered chan struct{}
	release chan struct{}
}

func (p *slowResume) Resume(ctx context.Context, h sbx.Handle) (sbx.Handle, error) {
	p.entered <- struct{}{}
	<-p.release
	return p.Memory.Resume(ctx, h)
}

// pausedWithSlowResume is a manager whose provider holds resumes until
// released, and a sandbox of it, paused.
func pausedWithSlowResume(t *testing.T) (*env, *lifecycle.Manager, *slowResume, sbx.Sandbox) {
	t.Helper()
	e := newEnv(t)
	slow := &slowResume{Memory: e.prov, entered: make(chan struct{}, 8), release: make(chan struct{})}
	m := lifecycle.New(e.store, []sbx.Provider{slow}, lifecycle.Config{DefaultProvider: providertest.MemoryName, MaxTimeout: 24 * time.Hour},
		e.clock, slog.New(slog.DiscardHandler))
	sb, err := m.Create(context.Background(), e.caller, lifecycle.CreateRequest{TemplateID: "base", WaitReady: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Pause(context.Background(), e.caller, sb.ID, sbx.PauseUser); err != nil {
		t.Fatal(err)
	}
	return e, m, slow, sb
}

// Traffic to a paused sandbox (Reach): refused by its check before
// anything happens; refused with a 409 and Retry-After when the check says
// not to wake; else woken, by one resume however many requests come
// together, the wake's step naming the traffic; a wake that outlasts
// WakeWait answers a 503 with Retry-After and goes on.
func TestReachWakesPausedSandboxes(t *testing.T) {
	e, m, slow, sb := pausedWithSlowResume(t)
	ctx := context.Background()
	refuse := errors.New("no")
	if _, err := m.Reach(ctx, sb.ProviderSandboxID, "a test", func(sbx.Sandbox) (bool, error) { return true, refuse }); !errors.Is(err, refuse) {
		t.Fatalf("a refusing check: %v", err)
	}
	_, err := m.Reach(ctx, sb.ID, "a test", func(sbx.Sandbox) (bool, error) { return false, nil })
	var e409 *sbx.Error
	if !errors.As(err, &e409) || e409.Code != sbx.EConflict || e409.RetryAfter == 0 || !strings.Contains(e409.Message, "is paused") {
		t.Fatalf("no wake: %v", err)
	}
	if got := e.get(sb.ID); got.State != sbx.StatePaused {
		t.Fatalf("refused traffic changed the sandbox: %s", got.State)
	}

	// Three requests together, one held past WakeWait.
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := m.Reach(ctx, sb.ID, "preview traffic to port 8080", func(sbx.Sandbox) (bool, error) { return true, nil })
			errs <- err
		}()
	}
	<-slow.entered
	var unavailable int
	for got := 0; got < 3; {
		e.clock.Advance(lifecycle.WakeWait) // again, for waits that began since
		select {
		case err := <-errs:
			got++
			var se *sbx.Error
			if errors.As(err, &se) && se.Code == sbx.EUnavailable && se.RetryAfter > 0 {
				unavailable++
			}
		case <-time.After(50 * time.Millisecond):
		}
	}
	if unavailable != 3 {
		t.Errorf("%d of 3 waits past WakeWait answered 503 with Retry-After", unavailable)
	}
	close(slow.release)
	var woken sbx.Sandbox
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if woken = e.get(sb.ID); woken.State == sbx.StateRunning && woken.Intent == "" {
			break
		}
	}
	events, _ := e.store.Events(ctx, sb.ID)
	var wakes int
	for _, ev := range events {
		if ev.Step == "resuming" {
			wakes++
			if ev.Detail != "woken by preview traffic to port 8080" {
				t.Errorf("the wake's step says %q", ev.Detail)
			}
		}
	}
	if woken.State != sbx.StateRunning || wakes != 1 || len(slow.entered) != 0 {
		t.Errorf("after the wake: %s, %d wakes in the timeline, %d more resumes", woken.State, wakes, len(slow.entered))
	}
}

// A call to the agent (the API's, an SDK's, SSH's) waits for the wake it
// sets off however long it takes, as a resume does: WakeWait bounds
// preview traffic only.
func TestAgentCallsWaitForTheWholeWake(t *testing.T) {
	e, m, slow, sb := pausedWithSlowResume(t)
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		_, err := m.Agent(ctx, e.caller, sb.ID)
		done <- err
	}()
	<-slow.entered
	e.clock.Advance(2 * lifecycle.WakeWait)
	select {
	case err := <-done:
		t.Fatalf("the call gave up on the wake: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(slow.release)
	if err := <-done; sbx.ErrorCode(err) != sbx.EUnsupported { // woken; the Memory provider runs no agent
		t.Errorf("after the wake: %v", err)
	}
	if got := e.get(sb.ID); got.State != sbx.StateRunning {
		t.Errorf("after the wake: %s", got.State)
	}
}
