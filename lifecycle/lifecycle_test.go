package lifecycle_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/providertest"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{c.now.Add(d), ch})
	return ch
}

// Advance moves the clock and fires the waits that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
		} else {
			w.ch <- c.now
		}
	}
	c.waiters = kept
}

type env struct {
	t       *testing.T
	dir     string
	store   *ledger.Store
	prov    *providertest.Memory
	clock   *fakeClock
	m       *lifecycle.Manager
	caller  sbx.Caller
	project sbx.Project // the org's default project
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clock: newFakeClock()}
	if err := os.Mkdir(filepath.Join(e.dir, "compute"), 0o700); err != nil {
		t.Fatal(err)
	}
	var err error
	e.store, err = ledger.Open(context.Background(), filepath.Join(e.dir, "ledger.db"), bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.store.Close() })
	org, _, project, err := e.store.CreateOrg(context.Background(), "acme", e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.TopUp(context.Background(), org.ID, 1_000_000_000, "tests", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	_, secret, err := e.store.CreateAPIKey(context.Background(), sbx.APIKey{OrgID: org.ID, Name: "admin"}, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if e.caller, err = e.store.Authenticate(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	e.m, e.project = e.manager(), project
	return e
}

// manager returns a new Manager over the env's ledger and a fresh provider
// instance over the same compute, as after a restart.
func (e *env) manager() *lifecycle.Manager {
	e.prov = providertest.NewMemory(providertest.MemoryOptions{StateDir: filepath.Join(e.dir, "compute")})
	return lifecycle.New(e.store, []sbx.Provider{e.prov}, lifecycle.Config{DefaultProvider: providertest.MemoryName, MaxTimeout: 24 * time.Hour,
		HibernateAfter: 10 * time.Minute}, e.clock, slog.New(slog.DiscardHandler))
}

// loops are the meter and the reaper over the env's manager.
func (e *env) loops() *lifecycle.Loops { return lifecycle.NewLoops(e.m, e.store) }

func (e *env) create(req lifecycle.CreateRequest) sbx.Sandbox {
	e.t.Helper()
	if req.TemplateID == "" {
		req.TemplateID = "base"
	}
	req.WaitReady = true
	sb, err := e.m.Create(context.Background(), e.caller, req)
	if err != nil {
		e.t.Fatalf("create: %v", err)
	}
	return sb
}

func (e *env) get(ref string) sbx.Sandbox {
	e.t.Helper()
	sb, err := e.store.GetSandbox(context.Background(), "", ref)
	if err != nil {
		e.t.Fatal(err)
	}
	return sb
}

func (e *env) steps(sb sbx.Sandbox) string {
	e.t.Helper()
	events, err := e.store.Events(context.Background(), sb.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	var s []string
	for _, ev := range events {
		s = append(s, ev.Step)
	}
	return strings.Join(s, ",")
}

func wantCode(t *testing.T, err error, code sbx.Code, contains string) {
	t.Helper()
	if sbx.ErrorCode(err) != code || !strings.Contains(sbx.ErrorMessage(err), contains) {
		t.Fatalf("got %v (code %s), want code %s containing %q", err, sbx.ErrorCode(err), code, contains)
	}
}

func TestCreateWaitReady(t *testing.T) {
	e := newEnv(t)
	sb := e.create(lifecycle.CreateRequest{Env: map[string]string{"B": "2", "A": "1"}, Metadata: map[string]string{"purpose": "test"}})
	if sb.State != sbx.StateRunning || sb.StartedAt.IsZero() || sb.Handle.IsZero() {
		t.Fatalf("after waitReady: %+v", sb)
	}
	if want := sb.StartedAt.Add(time.Hour); !sb.ExpiresAt.Equal(want) {
		t.Errorf("expires %s, want default timeout of an hour: %s", sb.ExpiresAt, want)
	}
	if got := strings.Join(sb.EnvVarNames, ","); got != "A,B" {
		t.Errorf("env var names %q", got)
	}
	if got := e.steps(sb); got != "creating,ready" {
		t.Errorf("timeline %s", got)
	}
}

func TestCreateWithoutWaitAnswersStarting(t *testing.T) {
	e := newEnv(t)
	slow := providertest.NewMemory(providertest.MemoryOptions{CreateDelay: 50 * time.Millisecond})
	m := lifecycle.New(e.store, []sbx.Provider{slow}, lifecycle.Config{DefaultProvider: providertest.MemoryName}, e.clock, slog.New(slog.DiscardHandler))
	sb, err := m.Create(context.Background(), e.caller, lifecycle.CreateRequest{TemplateID: "base"})
	if err != nil {
		t.Fatal(err)
	}
	if sb.State != sbx.StateStarting {
		t.Fatalf("state %s, want starting", sb.State)
	}
	// Connect waits for the create, then answers a running sandbox.
	sb, err = m.Connect(context.Background(), e.caller, sb.ProviderSandboxID, 0)
	if err != nil || sb.State != sbx.StateRunning {
		t.Fatalf("connect: %v, %s", err, sb.State)
	}
}

func TestFailedCreateKeepsDiagnostic(t *testing.T) {
	e := newEnv(t)
	_, err := e.m.Create(context.Background(), e.caller, lifecycle.CreateRequest{TemplateID: "fail-boot", WaitReady: true})
	wantCode(t, err, sbx.EProvider, "start command exited")
	list, _, _ := e.store.ListSandboxes(context.Background(), ledger.Filter{OrgID: e.caller.Org.ID})
	sb := list[0]
	if sb.State != sbx.StateFailed || sb.EndReason != sbx.EndError || !strings.Contains(sb.Diagnostic, "fail-boot failed to start") {
		t.Fatalf("failed create: %+v", sb)
	}
	if got := e.steps(sb); got != "creating,failed" {
		t.Errorf("timeline %s", got)
	}
}

func TestTransitions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.create(lifecycle.CreateRequest{})
	id := sb.ProviderSandboxID

	_, err := e.m.Resume(ctx, e.caller, id, 0)
	wantCode(t, err, sbx.EConflict, "it is running")
	p, err := e.m.Pause(ctx, e.caller, id, sbx.PauseUser)
	if err != nil || p.State != sbx.StatePaused || p.PauseReason != sbx.PauseUser || !p.ExpiresAt.IsZero() {
		t.Fatalf("pause: %v %+v", err, p)
	}
	_, err = e.m.Pause(ctx, e.caller, id, sbx.PauseUser)
	wantCode(t, err, sbx.EConflict, "it is paused")
	_, err = e.m.Refresh(ctx, e.caller, id, time.Minute)
	wantCode(t, err, sbx.EConflict, "it is paused")
	// A timeout set while paused applies from the resume.
	if _, err := e.m.SetTimeout(ctx, e.caller, id, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	r, err := e.m.Connect(ctx, e.caller, sb.ID, 0)
	if err != nil || r.State != sbx.StateRunning || r.PauseReason != "" || !r.ExpiresAt.Equal(e.clock.Now().Add(10*time.Minute)) {
		t.Fatalf("connect resumes: %v %+v", err, r)
	}
	// Refresh never shortens; SetTimeout does.
	r, _ = e.m.Refresh(ctx, e.caller, id, time.Minute)
	if !r.ExpiresAt.Equal(e.clock.Now().Add(10 * time.Minute)) {
		t.Errorf("refresh shortened the expiry to %s", r.ExpiresAt)
	}
	r, _ = e.m.SetTimeout(ctx, e.caller, id, time.Minute)
	if !r.ExpiresAt.Equal(e.clock.Now().Add(time.Minute)) {
		t.Errorf("set timeout: expiry %s", r.ExpiresAt)
	}
	_, err = e.m.SetTimeout(ctx, e.caller, id, 25*time.Hour)
	wantCode(t, err, sbx.EInvalid, "between 1 and 86400 seconds")

	k, err := e.m.Kill(ctx, e.caller, id)
	if err != nil || k.State != sbx.StateKilled || k.EndReason != sbx.EndDeleted || k.EndedAt.IsZero() {
		t.Fatalf("kill: %v %+v", err, k)
	}
	_, err = e.m.Kill(ctx, e.caller, id)
	wantCode(t, err, sbx.EConflict, "it is killed")
	_, err = e.m.Connect(ctx, e.caller, id, 0)
	wantCode(t, err, sbx.EConflict, "it is killed")
	if got := e.steps(k); got != "creating,ready,pausing,paused,timeout_set,resuming,resumed,refreshed,timeout_set,killing,killed" {
		t.Errorf("timeline %s", got)
	}
	if list, _ := e.prov.List(ctx); len(list) != 0 {
		t.Errorf("compute left after kill: %+v", list)
	}
}

func TestHibernateAndWake(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.create(lifecycle.CreateRequest{})
	h, err := e.m.Hibernate(ctx, e.caller, sb.ProviderSandboxID, sbx.PauseUser)
	if err != nil || h.State != sbx.StatePaused || !h.Hibernated || h.PauseReason != sbx.PauseUser || !h.ExpiresAt.IsZero() {
		t.Fatalf("hibernate: %v %+v", err, h)
	}
	_, err = e.m.Hibernate(ctx, e.caller, sb.ID, sbx.PauseUser)
	wantCode(t, err, sbx.EConflict, "already hibernated")
	_, err = e.m.Pause(ctx, e.caller, sb.ID, sbx.PauseUser)
	wantCode(t, err, sbx.EConflict, "it is paused")
	if in, _ := e.prov.List(ctx); len(in) != 1 || in[0].Status != sbx.InstanceHibernated {
		t.Fatalf("provider holds %+v", in)
	}
	r, err := e.m.Resume(ctx, e.caller, sb.ID, 0)
	if err != nil || r.State != sbx.StateRunning || r.Hibernated {
		t.Fatalf("wake: %v %+v", err, r)
	}
	if got := e.steps(r); got != "creating,ready,hibernating,hibernated,resuming,resumed" {
		t.Errorf("timeline %s", got)
	}
}

// The idle policy hibernates a sandbox left paused in memory for
// HibernateAfter, keeping its pause reason, and a restart adopts it hibernated.
func TestIdlePolicyHibernatesPausedSandboxes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	idle := e.create(lifecycle.CreateRequest{Timeout: time.Minute, AutoPause: true})
	busy := e.create(lifecycle.CreateRequest{})
	e.clock.Advance(time.Minute)
	e.loops().Reap(ctx)
	if got := e.get(idle.ID); got.State != sbx.StatePaused || got.Hibernated {
		t.Fatalf("after the timeout: %s hibernated=%v, want paused in memory", got.State, got.Hibernated)
	}
	e.clock.Advance(10*time.Minute - time.Microsecond)
	e.loops().Reap(ctx)
	if e.get(idle.ID).Hibernated {
		t.Fatal("hibernated before the idle policy allows")
	}
	e.clock.Advance(time.Microsecond)
	e.loops().Reap(ctx)
	got := e.get(idle.ID)
	if got.State != sbx.StatePaused || !got.Hibernated || got.PauseReason != sbx.PauseTimeout {
		t.Fatalf("idle sandbox: %s hibernated=%v reason %s", got.State, got.Hibernated, got.PauseReason)
	}
	if e.get(busy.ID).Hibernated {
		t.Fatal("a running sandbox was hibernated")
	}
	e.m = e.manager()
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.get(idle.ID); got.State != sbx.StatePaused || !got.Hibernated {
		t.Fatalf("after restart: %s hibernated=%v", got.State, got.Hibernated)
	}
}

func TestProviderFailureLeavesStateAndRecordsIt(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.create(lifecycle.CreateRequest{})
	// The compute is paused behind sbx's back, so the provider refuses the pause.
	if err := e.prov.Pause(ctx, sb.Handle); err != nil {
		t.Fatal(err)
	}
	_, err := e.m.Pause(ctx, e.caller, sb.ID, sbx.PauseUser)
	wantCode(t, err, sbx.EProvider, "could not pause")
	got := e.get(sb.ID)
	if got.State != sbx.StateRunning || got.Intent != sbx.IntentNone {
		t.Fatalf("after a failed pause: state %s intent %q", got.State, got.Intent)
	}
	if steps := e.steps(got); !strings.HasSuffix(steps, "pausing,pause_failed") {
		t.Errorf("timeline %s", steps)
	}
}

func TestProjectKeySeesOnlyItsProject(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.create(lifecycle.CreateRequest{})
	other, _, _, err := e.store.CreateOrg(ctx, "other", e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, secret, _ := e.store.CreateAPIKey(ctx, sbx.APIKey{OrgID: other.ID, Name: "admin"}, e.clock.Now())
	stranger, _ := e.store.Authenticate(ctx, secret)
	for _, ref := range []string{sb.ID, sb.ProviderSandboxID} {
		_, err := e.m.Get(ctx, stranger, ref)
		wantCode(t, err, sbx.ENotFound, "not found")
		_, err = e.m.Kill(ctx, stranger, ref)
		wantCode(t, err, sbx.ENotFound, "not found")
	}
	list, _, _ := e.m.List(ctx, stranger, ledger.Filter{})
	if len(list) != 0 {
		t.Fatalf("another org sees %d sandboxes", len(list))
	}
}

func TestSecretsNeverReachTheLedgerInClear(t *testing.T) {
	e := newEnv(t)
	sb := e.create(lifecycle.CreateRequest{Env: map[string]string{"API_TOKEN": "hunter2-env-value"}})
	if sb.AccessToken == "" {
		t.Fatal("no access token")
	}
	var raw []byte
	for _, f := range []string{"ledger.db", "ledger.db-wal"} {
		b, _ := os.ReadFile(filepath.Join(e.dir, f))
		raw = append(raw, b...)
	}
	if !bytes.Contains(raw, []byte("API_TOKEN")) {
		t.Fatal("the env var name is not in the ledger; the check below would prove nothing")
	}
	for _, secret := range []string{"hunter2-env-value", sb.AccessToken} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("%q is stored in clear", secret)
		}
	}
	if got := e.get(sb.ID).AccessToken; got != sb.AccessToken {
		t.Errorf("access token does not round-trip: %q", got)
	}
}

func TestWaitReadyIsBounded(t *testing.T) {
	e := newEnv(t)
	slow := providertest.NewMemory(providertest.MemoryOptions{CreateDelay: time.Hour})
	m := lifecycle.New(e.store, []sbx.Provider{slow}, lifecycle.Config{DefaultProvider: providertest.MemoryName, ReadyTimeout: 30 * time.Second},
		e.clock, slog.New(slog.DiscardHandler))
	type result struct {
		sb  sbx.Sandbox
		err error
	}
	done := make(chan result, 1)
	go func() {
		sb, err := m.Create(context.Background(), e.caller, lifecycle.CreateRequest{TemplateID: "base", WaitReady: true})
		done <- result{sb, err}
	}()
	for {
		select {
		case r := <-done:
			wantCode(t, r.err, sbx.ETimeout, "was not ready within 30s; it is still starting")
			if r.sb.State != sbx.StateStarting {
				t.Fatalf("state %s", r.sb.State)
			}
			return
		case <-time.After(time.Millisecond):
			e.clock.Advance(time.Second)
		}
	}
}

// Create checks the env it is given as a whole, as a runtime's start merges
// several: each variable, and a total every exec in the sandbox could carry.
func TestCreateChecksTheMergedEnv(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	big := map[string]string{}
	for i := range 40 {
		big[fmt.Sprintf("V%d", i)] = strings.Repeat("v", 30000)
	}
	_, err := e.m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base", Env: big})
	wantCode(t, err, sbx.EInvalid, "the sandbox's environment would be 1200")
	_, err = e.m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base", Env: map[string]string{"X": "a\x00b"}})
	wantCode(t, err, sbx.EInvalid, "environment variable X holds a NUL byte")
	if list, _, _ := e.m.List(ctx, e.caller, ledger.Filter{}); len(list) != 0 {
		t.Errorf("refused creates left %d sandboxes", len(list))
	}
}

// A provider that cannot start images refuses one (501, naming it) before
// any row is written.
func TestImageOnAProviderWithoutImages(t *testing.T) {
	e := newEnv(t)
	_, err := e.m.Create(context.Background(), e.caller, lifecycle.CreateRequest{Image: &sbx.ImageSpec{Ref: "ghcr.io/me/app:v2"}})
	wantCode(t, err, sbx.EUnsupported, "cannot start sandboxes from OCI images")
	if list, _, err := e.store.ListSandboxes(context.Background(), ledger.Filter{}); err != nil || len(list) != 0 {
		t.Errorf("rows after a refused create: %v %v", list, err)
	}
}
