package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/testpg"
	"github.com/sbxdev/sbx/ledger"
)

var key = bytes.Repeat([]byte{1}, 32)

// dialects runs test against a fresh ledger on each dialect: SQLite, and a
// database of its own on a real PostgreSQL server. Every test of the ledger
// goes through it, so that one suite holds both to the same behaviour.
func dialects(t *testing.T, test func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { test(t, filepath.Join(t.TempDir(), "l.db")) })
	t.Run("postgres", func(t *testing.T) { test(t, testpg.URL(t)) })
}

func open(t *testing.T, dsn string) *ledger.Store {
	t.Helper()
	s, err := ledger.Open(context.Background(), dsn, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func newSandbox(org sbx.Org, ws sbx.Workspace, p sbx.Project, at time.Time) sbx.Sandbox {
	return sbx.Sandbox{
		ID: uuid.NewString(), OrgID: org.ID, WorkspaceID: ws.ID, ProjectID: p.ID, Provider: "memory",
		ProviderSandboxID: "i" + uuid.NewString()[:8], Kind: sbx.KindTask, TemplateID: "base", State: sbx.StateRunning,
		CreatedAt: at, UpdatedAt: at, StartedAt: at, Timeout: time.Minute, ExpiresAt: at.Add(time.Minute),
		Resources:   sbx.Resources{MilliCPU: 1500, MemoryMB: 512, DiskMB: 2048, GPU: &sbx.GPURequest{Type: "h100", Count: 1, Fraction: 50}},
		EnvVarNames: []string{"A"}, Metadata: map[string]string{"team": "x"}, AccessToken: "tok",
		Handle: sbx.Handle{Version: 1, Data: []byte(`{"id":"x"}`)},
	}
}

func TestMigrationsAreIdempotentAndRowsSurviveReopen(t *testing.T) {
	dialects(t, migrationsAreIdempotent)
}

func migrationsAreIdempotent(t *testing.T, file string) {
	s := open(t, file)
	org, ws, p, err := s.CreateOrg(context.Background(), "acme", t0)
	if err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(org, ws, p, t0)
	if err := s.InsertSandbox(context.Background(), sb, sbx.Event{At: t0, Step: "creating"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, file)
	got, err := s.GetSandbox(context.Background(), org.ID, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ProviderSandboxID != sb.ProviderSandboxID || got.Resources.GPU.Fraction != 50 || got.Resources.MilliCPU != 1500 ||
		got.AccessToken != "tok" || !got.ExpiresAt.Equal(sb.ExpiresAt) || got.Metadata["team"] != "x" || string(got.Handle.Data) != `{"id":"x"}` {
		t.Fatalf("row changed across reopen: %+v", got)
	}
}

func TestKeysAndCallers(t *testing.T) { dialects(t, keysAndCallers) }

func keysAndCallers(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	org, _, p, _ := s.CreateOrg(ctx, "acme", t0)
	if _, _, _, err := s.CreateOrg(ctx, "acme", t0); sbx.ErrorCode(err) != sbx.EConflict {
		t.Fatalf("duplicate org: %v", err)
	}
	other, _, otherProject, _ := s.CreateOrg(ctx, "other", t0)
	if _, _, err := s.CreateAPIKey(ctx, sbx.APIKey{OrgID: org.ID, ProjectID: otherProject.ID, Name: "x"}, t0); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Fatalf("key for another org's project: %v", err)
	}
	k, secret, err := s.CreateAPIKey(ctx, sbx.APIKey{OrgID: org.ID, ProjectID: p.ID, Name: "ci"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	if c.Org.ID != org.ID || c.Project.ID != p.ID || c.Key.ID != k.ID || c.OrgWide() || c.Workspace.Name != "default" {
		t.Fatalf("caller %+v", c)
	}
	for _, bad := range []string{"", "nope", secret + "x", ledger.KeyPrefix + "00"} {
		if _, err := s.Authenticate(ctx, bad); sbx.ErrorCode(err) != sbx.EUnauthorized {
			t.Errorf("Authenticate(%q) = %v, want unauthorized", bad, err)
		}
	}
	_, otherSecret, _ := s.CreateAPIKey(ctx, sbx.APIKey{OrgID: other.ID, Name: "admin"}, t0)
	oc, _ := s.Authenticate(ctx, otherSecret)
	if !oc.OrgWide() || oc.Project.ID != otherProject.ID {
		t.Fatalf("org-wide caller %+v", oc)
	}
}

func TestUpdateIsAllOrNothing(t *testing.T) { dialects(t, updateIsAllOrNothing) }

func updateIsAllOrNothing(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	org, ws, p, _ := s.CreateOrg(ctx, "acme", t0)
	sb := newSandbox(org, ws, p, t0)
	s.InsertSandbox(ctx, sb)
	refuse := errors.New("refused")
	_, err := s.UpdateSandbox(ctx, sb.ID, func(x *sbx.Sandbox) ([]sbx.Event, error) {
		x.State = sbx.StateKilled
		return []sbx.Event{{At: t0, Step: "killed"}}, refuse
	})
	if !errors.Is(err, refuse) {
		t.Fatalf("update error %v", err)
	}
	got, _ := s.GetSandbox(ctx, "", sb.ProviderSandboxID)
	events, _ := s.Events(ctx, sb.ID)
	if got.State != sbx.StateRunning || len(events) != 0 {
		t.Fatalf("a refused update wrote: state %s, %d events", got.State, len(events))
	}
	got, err = s.UpdateSandbox(ctx, sb.ID, func(x *sbx.Sandbox) ([]sbx.Event, error) {
		x.State, x.EndedAt, x.ExpiresAt = sbx.StateKilled, t0.Add(time.Second), time.Time{}
		return []sbx.Event{{At: t0, Step: "killing"}, {At: t0, Step: "killed", Detail: "ok"}}, nil
	})
	if err != nil || got.State != sbx.StateKilled {
		t.Fatal(err)
	}
	events, _ = s.Events(ctx, sb.ID)
	if len(events) != 2 || events[0].Step != "killing" || events[1].Detail != "ok" {
		t.Fatalf("events %+v", events)
	}
	if _, err := s.GetSandbox(ctx, "", uuid.NewString()); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Fatalf("missing sandbox: %v", err)
	}
}

func TestListPagesAndFilters(t *testing.T) { dialects(t, listPagesAndFilters) }

func listPagesAndFilters(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	org, ws, p, _ := s.CreateOrg(ctx, "acme", t0)
	other, ows, op, _ := s.CreateOrg(ctx, "other", t0)
	s.InsertSandbox(ctx, newSandbox(other, ows, op, t0))
	for i := range 25 {
		sb := newSandbox(org, ws, p, t0.Add(time.Duration(i/2)*time.Second)) // pairs share a creation time
		if i%5 == 0 {
			sb.State, sb.TemplateID, sb.ExpiresAt = sbx.StatePaused, "code-interpreter", time.Time{}
		}
		sb.Metadata = map[string]string{"team": fmt.Sprint(i % 2), "n": fmt.Sprint(i)}
		if err := s.InsertSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	ada, _, err := s.AddMember(ctx, org.ID, ws.ID, "ada@example.com", "", sbx.RoleMember, t0)
	if err != nil {
		t.Fatal(err)
	}
	bob, _, err := s.AddMember(ctx, other.ID, ows.ID, "bob@example.com", "", sbx.RoleMember, t0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	cursor, pages := "", 0
	var last time.Time
	for {
		page, next, err := s.ListSandboxes(ctx, ledger.Filter{OrgID: org.ID, Limit: 10, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, sb := range page {
			if seen[sb.ID] || sb.OrgID != org.ID {
				t.Fatalf("page %d repeats or leaks %s", pages, sb.ID)
			}
			if !last.IsZero() && sb.CreatedAt.After(last) {
				t.Fatal("pages are not newest first")
			}
			seen[sb.ID], last = true, sb.CreatedAt
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	if len(seen) != 25 || pages != 3 {
		t.Fatalf("saw %d sandboxes in %d pages", len(seen), pages)
	}
	count := func(f ledger.Filter) int {
		f.OrgID = org.ID
		page, _, err := s.ListSandboxes(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return len(page)
	}
	for name, c := range map[string]struct {
		f    ledger.Filter
		want int
	}{
		"paused":           {ledger.Filter{States: []sbx.State{sbx.StatePaused}}, 5},
		"paused or killed": {ledger.Filter{States: []sbx.State{sbx.StatePaused, sbx.StateKilled}}, 5},
		"template":         {ledger.Filter{TemplateID: "code-interpreter"}, 5},
		"metadata":         {ledger.Filter{Metadata: map[string]string{"team": "1"}}, 12},
		"two metadata":     {ledger.Filter{Metadata: map[string]string{"team": "1", "n": "7"}}, 1},
		"project":          {ledger.Filter{ProjectID: p.ID}, 25},
		"other project":    {ledger.Filter{ProjectID: op.ID}, 0},
		"a member's":       {ledger.Filter{MemberID: ada.User.ID}, 25},
		"a non-member's":   {ledger.Filter{MemberID: bob.User.ID}, 0},
	} {
		if got := count(c.f); got != c.want {
			t.Errorf("%s: %d sandboxes, want %d", name, got, c.want)
		}
	}
	if _, _, err := s.ListSandboxes(ctx, ledger.Filter{OrgID: org.ID, Cursor: "garbage!"}); sbx.ErrorCode(err) != sbx.EInvalid {
		t.Fatalf("bad cursor: %v", err)
	}
	expired, _ := s.Expired(ctx, t0.Add(time.Minute+2*time.Second))
	if len(expired) != 1+6-2 { // the other org's row, and creation seconds 0-2 but for the two paused
		t.Errorf("%d expired", len(expired))
	}
	if next, _ := s.NextExpiry(ctx); !next.Equal(t0.Add(time.Minute)) {
		t.Errorf("next expiry %s", next)
	}
	usage, err := s.UsageByProject(ctx, org.ID, sbx.Reach{}, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	u := usage[p.ID]
	if u.Sandboxes != 25 || u.ByState[sbx.StatePaused] != 5 || u.RunningMilliCPU != 20*1500 {
		t.Errorf("usage %+v", u)
	}
	for member, want := range map[string]int{ada.User.ID: 1, bob.User.ID: 0} {
		if usage, err := s.UsageByProject(ctx, org.ID, sbx.Reach{UserID: member}, t0.Add(time.Hour)); err != nil || len(usage) != want {
			t.Errorf("usage for member %s: %d projects, %v; want %d", member, len(usage), err, want)
		}
	}
}

// An operation owner is live while the process holding it runs: on
// PostgreSQL another process (another Store) sees it held until its
// holder's context ends, then free; on SQLite, whose ledger is one
// process's, only the owner this Store holds is live. The owner is kept
// on the row with its intent.
func TestOperationOwnersAreHeldLive(t *testing.T) { dialects(t, ownersHeld) }

func ownersHeld(t *testing.T, dsn string) {
	ctx := context.Background()
	a, b := open(t, dsn), open(t, dsn)
	held, release := context.WithCancel(ctx)
	a.Hold(held, "owner-a")
	if live, err := a.Holds(ctx, "owner-a"); err != nil || !live {
		t.Fatalf("the holder's own owner: %v %v", live, err)
	}
	live, err := b.Holds(ctx, "owner-a")
	if err != nil || live != strings.HasPrefix(dsn, "postgres") {
		t.Fatalf("another process's view of a held owner: %v %v", live, err)
	}
	if live, _ := b.Holds(ctx, "owner-nobody"); live {
		t.Error("an owner no one holds is live")
	}
	release()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) { // the lock goes with its connection's release
		if live, err := b.Holds(ctx, "owner-a"); err == nil && !live {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a released owner stays live")
		}
	}

	org, sbs := funded(t, a, "acme", 1_000_000, 1)
	sb, err := a.UpdateSandbox(ctx, sbs[0].ID, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		sb.Intent, sb.OpOwner = sbx.IntentPausing, "owner-a"
		return nil, nil
	})
	if got, _ := b.GetSandbox(ctx, org.ID, sb.ID); err != nil || got.OpOwner != "owner-a" || got.Intent != sbx.IntentPausing {
		t.Errorf("the row's owner: %+v %v", got, err)
	}
}
