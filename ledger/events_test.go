package ledger_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
)

func TestOrgEventsDensePerOrg(t *testing.T) { dialects(t, orgEventsDensePerOrg) }

// orgEventsDensePerOrg: every write path's events number densely per org,
// in order; filters, reach and retention keep what they should.
func orgEventsDensePerOrg(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	org, ws, p, _ := s.CreateOrg(ctx, "acme", t0)
	other, ows, op, _ := s.CreateOrg(ctx, "other", t0)
	sb := newSandbox(org, ws, p, t0)
	if err := s.InsertSandbox(ctx, sb, sbx.Event{At: t0, Step: "creating"}, sbx.Event{At: t0, Step: "ready"}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertSandbox(ctx, newSandbox(other, ows, op, t0), sbx.Event{At: t0, Step: "creating"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TopUp(ctx, org.ID, 5, "gift", t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err := s.UpdateSandbox(ctx, sb.ID, func(x *sbx.Sandbox) ([]sbx.Event, error) {
		x.State, x.PauseReason, x.PausedAt, x.UpdatedAt = sbx.StatePaused, sbx.PauseInsufficientCredits, t0.Add(2*time.Second), t0.Add(2*time.Second)
		return []sbx.Event{{At: t0.Add(2 * time.Second), Step: "paused"}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddEvents(ctx, sb.ID, sbx.Event{At: t0.Add(3 * time.Second), Step: "capabilities", Detail: "x"}); err != nil {
		t.Fatal(err)
	}
	all, err := s.OrgEvents(ctx, org.ID, sbx.Reach{}, ledger.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"sandbox.creating", "sandbox.ready", "credits.top_up", "credits.exhausted", "credits.auto_paused", "sandbox.paused", "sandbox.capabilities"}
	if len(all) != len(want) {
		t.Fatalf("events %+v, want types %v", all, want)
	}
	for i, e := range all {
		if e.Seq != int64(i+1) || e.Type != want[i] || e.OrgID != org.ID {
			t.Errorf("event %d: seq %d type %s org %s, want seq %d type %s", i, e.Seq, e.Type, e.OrgID, i+1, want[i])
		}
	}
	if all[5].SandboxID != sb.ID || all[5].Subject != sb.ProviderSandboxID || all[5].ProjectID != p.ID || string(all[5].Data) == "{}" {
		t.Errorf("paused event %+v", all[5])
	}
	others, _ := s.OrgEvents(ctx, other.ID, sbx.Reach{}, ledger.EventFilter{})
	if len(others) != 1 || others[0].Seq != 1 {
		t.Errorf("the other org's events %+v", others)
	}
	check := func(name string, reach sbx.Reach, f ledger.EventFilter, want ...int64) {
		t.Helper()
		got, err := s.OrgEvents(ctx, org.ID, reach, f)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, e := range got {
			seqs = append(seqs, e.Seq)
		}
		if fmt.Sprint(seqs) != fmt.Sprint(want) {
			t.Errorf("%s: seqs %v, want %v", name, seqs, want)
		}
	}
	check("after", sbx.Reach{}, ledger.EventFilter{After: 5}, 6, 7)
	check("limit", sbx.Reach{}, ledger.EventFilter{After: 1, Limit: 2}, 2, 3)
	check("prefix", sbx.Reach{}, ledger.EventFilter{Types: []string{"credits.*"}}, 3, 4, 5)
	check("types", sbx.Reach{}, ledger.EventFilter{Types: []string{"sandbox.ready", "sandbox.paused"}}, 2, 6)
	check("sandbox by provider ID", sbx.Reach{}, ledger.EventFilter{Sandbox: sb.ProviderSandboxID}, 1, 2, 5, 6, 7)
	check("sandbox by sbx ID", sbx.Reach{}, ledger.EventFilter{Sandbox: sb.ID, After: 6}, 7)
	check("project", sbx.Reach{}, ledger.EventFilter{Project: p.ID}, 1, 2, 5, 6, 7)
	check("project reach", sbx.Reach{ProjectID: p.ID}, ledger.EventFilter{}, 1, 2, 5, 6, 7)
	check("another project's reach", sbx.Reach{ProjectID: op.ID}, ledger.EventFilter{})
	check("a stranger's reach", sbx.Reach{UserID: "nobody"}, ledger.EventFilter{})
	if last, err := s.LastEventSeq(ctx, org.ID); err != nil || last != 7 {
		t.Errorf("LastEventSeq = %d, %v", last, err)
	}

	n, err := s.PruneOrgEvents(ctx, t0.Add(2*time.Second))
	if err != nil || n != 4 {
		t.Fatalf("pruned %d, %v; want 4 (three of acme before the pause, one of other; the balance ran out at the pause)", n, err)
	}
	check("after retention", sbx.Reach{}, ledger.EventFilter{}, 4, 5, 6, 7)
	s.TopUp(ctx, org.ID, 1, "", t0.Add(4*time.Second))
	check("seqs never repeat", sbx.Reach{}, ledger.EventFilter{After: 7}, 8)
}

func TestOrgEventsConcurrentAppends(t *testing.T) { dialects(t, orgEventsConcurrentAppends) }

// orgEventsConcurrentAppends: appends from many goroutines stay dense, and
// a reader following seq > after while they commit misses none.
func orgEventsConcurrentAppends(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	org, ws, p, _ := s.CreateOrg(ctx, "acme", t0)
	const writers, each = 6, 15
	var ids []string
	for range writers {
		sb := newSandbox(org, ws, p, t0)
		if err := s.InsertSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sb.ID)
	}
	done := make(chan struct{})
	seen := make(chan []int64)
	go func() { // the follower
		var got []int64
		var after int64
		for {
			select {
			case <-done:
				rest, _ := s.OrgEvents(ctx, org.ID, sbx.Reach{}, ledger.EventFilter{After: after})
				for _, e := range rest {
					got = append(got, e.Seq)
				}
				seen <- got
				return
			default:
			}
			evs, err := s.OrgEvents(ctx, org.ID, sbx.Reach{}, ledger.EventFilter{After: after})
			if err != nil {
				t.Error(err)
			}
			for _, e := range evs {
				got, after = append(got, e.Seq), e.Seq
			}
		}
	}()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			for i := range each {
				if err := s.AddEvents(ctx, id, sbx.Event{At: t0, Step: fmt.Sprint("step", i)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	close(done)
	got := <-seen
	if len(got) != writers*each {
		t.Fatalf("the follower saw %d events, want %d", len(got), writers*each)
	}
	for i, seq := range got {
		if seq != int64(i+1) {
			t.Fatalf("the follower saw seq %d at %d: %v", seq, i, got)
		}
	}
}

func TestWebhookDeliveries(t *testing.T) { dialects(t, webhookDeliveries) }

// webhookDeliveries: the dispatcher's ledger side, enqueue by type after
// the webhook's cursor, claim, finish, requeue, redeliver, org scoping.
func webhookDeliveries(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	org, ws, p, _ := s.CreateOrg(ctx, "acme", t0)
	other, _, _, _ := s.CreateOrg(ctx, "other", t0)
	s.TopUp(ctx, org.ID, 5, "before the webhook", t0)
	w, err := s.InsertWebhook(ctx, sbx.Webhook{OrgID: org.ID, URL: "http://x", Types: []string{"sandbox.*"}, CreatedAt: t0}, "whsec_x")
	if err != nil || w.Cursor != 1 {
		t.Fatalf("webhook %+v, %v", w, err)
	}
	if _, err := s.GetWebhook(ctx, other.ID, w.ID); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Fatalf("another org's webhook: %v", err)
	}
	sb := newSandbox(org, ws, p, t0)
	s.InsertSandbox(ctx, sb, sbx.Event{At: t0, Step: "creating"}, sbx.Event{At: t0, Step: "ready"})
	s.TopUp(ctx, org.ID, 5, "not a sandbox's", t0)
	if n, err := s.EnqueueDeliveries(ctx, t0, 100); err != nil || n != 2 {
		t.Fatalf("enqueued %d, %v", n, err)
	}
	if n, _ := s.EnqueueDeliveries(ctx, t0, 100); n != 0 {
		t.Fatalf("enqueued %d again", n)
	}
	if ws, _ := s.Webhooks(ctx, org.ID); len(ws) != 1 || ws[0].Cursor != 4 {
		t.Fatalf("webhooks %+v", ws)
	}
	due, err := s.ClaimDeliveries(ctx, t0, 1)
	if err != nil || len(due) != 1 || due[0].Secret != "whsec_x" || due[0].Event.Type != "sandbox.creating" || due[0].Delivery.Attempts != 1 {
		t.Fatalf("claimed %+v, %v", due, err)
	}
	d := due[0].Delivery
	d.State, d.LastStatus, d.NextAttemptAt = sbx.DeliverySucceeded, 200, t0
	if err := s.FinishDelivery(ctx, d, t0); err != nil {
		t.Fatal(err)
	}
	due, _ = s.ClaimDeliveries(ctx, t0, 10)
	if len(due) != 1 || due[0].Event.Type != "sandbox.ready" {
		t.Fatalf("claimed %+v", due)
	}
	if n, err := s.RequeueDeliveries(ctx, t0); err != nil || n != 1 {
		t.Fatalf("requeued %d, %v", n, err)
	}
	due, _ = s.ClaimDeliveries(ctx, t0, 10)
	if len(due) != 1 || due[0].Delivery.Attempts != 2 {
		t.Fatalf("claimed again %+v", due)
	}
	if _, err := s.Redeliver(ctx, org.ID, w.ID, due[0].Delivery.ID, t0); sbx.ErrorCode(err) != sbx.EConflict {
		t.Fatalf("redeliver in progress: %v", err)
	}
	d = due[0].Delivery
	d.State, d.LastStatus, d.LastError = sbx.DeliveryDeadLetter, 500, "boom"
	s.FinishDelivery(ctx, d, t0)
	dead, _ := s.WebhookDeliveries(ctx, org.ID, w.ID, sbx.DeliveryDeadLetter, 0)
	if len(dead) != 1 || dead[0].LastError != "boom" || dead[0].LastStatus != 500 {
		t.Fatalf("dead letters %+v", dead)
	}
	if _, err := s.Redeliver(ctx, other.ID, w.ID, d.ID, t0); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Fatalf("another org's redeliver: %v", err)
	}
	if r, err := s.Redeliver(ctx, org.ID, w.ID, d.ID, t0); err != nil || r.State != sbx.DeliveryQueued || r.Attempts != 0 {
		t.Fatalf("redeliver %+v, %v", r, err)
	}
	if due, _ := s.ClaimDeliveries(ctx, t0, 10); len(due) != 1 || due[0].Delivery.ID != d.ID {
		t.Fatalf("claimed after redeliver %+v", due)
	}
	if _, err := s.DeleteWebhook(ctx, other.ID, w.ID); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Fatalf("another org's delete: %v", err)
	}
	if _, err := s.DeleteWebhook(ctx, org.ID, w.ID); err != nil {
		t.Fatal(err)
	}
	if ws, _ := s.Webhooks(ctx, org.ID); len(ws) != 0 {
		t.Fatalf("webhooks after delete %+v", ws)
	}
}
