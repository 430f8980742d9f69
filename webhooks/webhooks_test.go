package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
)

func TestSignIsTheDocumentedScheme(t *testing.T) {
	body := []byte(`{"id":1}`)
	at := time.Unix(1700000000, 0)
	mac := hmac.New(sha256.New, []byte("whsec_k"))
	mac.Write([]byte("1700000000." + string(body)))
	if got, want := Sign("whsec_k", at, body), "t=1700000000,v1="+hex.EncodeToString(mac.Sum(nil)); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

// memStore is a Store of one org's webhooks in memory.
type memStore struct{ hooks []sbx.Webhook }

func (m *memStore) InsertWebhook(_ context.Context, w sbx.Webhook, _ string) (sbx.Webhook, error) {
	w.ID = "wh_1"
	m.hooks = append(m.hooks, w)
	return w, nil
}
func (m *memStore) Webhooks(context.Context, string) ([]sbx.Webhook, error) { return m.hooks, nil }
func (m *memStore) DeleteWebhook(context.Context, string, string) (sbx.Webhook, error) {
	return sbx.Webhook{}, nil
}
func (m *memStore) WebhookDeliveries(context.Context, string, string, sbx.DeliveryState, int) ([]sbx.WebhookDelivery, error) {
	return nil, nil
}
func (m *memStore) Redeliver(context.Context, string, string, string, time.Time) (sbx.WebhookDelivery, error) {
	return sbx.WebhookDelivery{}, nil
}

func TestAddChecksEveryFieldAndTheRole(t *testing.T) {
	ctx := context.Background()
	owner := sbx.Caller{Org: sbx.Org{ID: "o"}, Role: sbx.RoleOwner}
	s := New(&memStore{}, sbx.SystemClock{}, false)
	_, _, err := s.Add(ctx, owner, Spec{URL: "http://10.0.0.1/x", Types: []string{"Bad Type"}, Secret: "short"})
	var e *sbx.Error
	if !asError(err, &e) || e.Code != sbx.EInvalid || len(e.Fields) != 3 {
		t.Fatalf("Add = %v, want three fields", err)
	}
	for i, f := range []string{"url", "types", "secret"} {
		if e.Fields[i].Field != f {
			t.Errorf("field %d is %s, want %s", i, e.Fields[i].Field, f)
		}
	}
	for _, bad := range []string{"ftp://x", "http://", "http://u:p@example.com/", "http://127.0.0.1:8080/", "http://[::1]/", "http://localhost/", "http://169.254.169.254/"} {
		if _, _, err := s.Add(ctx, owner, Spec{URL: bad}); sbx.ErrorCode(err) != sbx.EInvalid {
			t.Errorf("Add(%s) = %v, want invalid", bad, err)
		}
	}
	w, secret, err := s.Add(ctx, owner, Spec{URL: "https://hooks.example.com/x", Types: []string{"sandbox.*"}})
	if err != nil || !strings.HasPrefix(secret, "whsec_") || w.ID == "" {
		t.Fatalf("Add = %+v, %q, %v", w, secret, err)
	}
	member := sbx.Caller{Org: sbx.Org{ID: "o"}, Role: sbx.RoleMember}
	if _, _, err := s.Add(ctx, member, Spec{URL: "https://hooks.example.com/x"}); sbx.ErrorCode(err) != sbx.EForbidden {
		t.Fatalf("a member's Add = %v", err)
	}
	if _, err := s.List(ctx, member); sbx.ErrorCode(err) != sbx.EForbidden {
		t.Fatalf("a member's List = %v", err)
	}
	private := New(&memStore{}, sbx.SystemClock{}, true)
	if _, _, err := private.Add(ctx, owner, Spec{URL: "http://127.0.0.1:8080/x"}); err != nil {
		t.Fatalf("with private addresses allowed: %v", err)
	}
}

func asError(err error, e **sbx.Error) bool {
	x, ok := err.(*sbx.Error)
	*e = x
	return ok
}

// finishStore records the outcome of deliveries.
type finishStore struct {
	DispatchStore
	done []sbx.WebhookDelivery
}

func (f *finishStore) FinishDelivery(_ context.Context, d sbx.WebhookDelivery, _ time.Time) error {
	f.done = append(f.done, d)
	return nil
}

func TestDeliverRetriesWithBackoffThenDeadLetters(t *testing.T) {
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer failing.Close()
	store := &finishStore{}
	d := NewDispatcher(store, DispatchConfig{Backoff: time.Second, Attempts: 3, Private: true}, sbx.SystemClock{}, slog.New(slog.DiscardHandler))
	due := sbx.DueDelivery{URL: failing.URL, Secret: "whsec_x", Event: sbx.OrgEvent{Seq: 7, Type: "sandbox.paused"},
		Delivery: sbx.WebhookDelivery{ID: "whd_1", Attempts: 2, State: sbx.DeliveryInProgress}}
	d.deliver(context.Background(), due)
	due.Delivery.Attempts = 3
	d.deliver(context.Background(), due)
	if got := store.done; len(got) != 2 || got[0].State != sbx.DeliveryQueued || got[0].LastStatus != 502 ||
		got[1].State != sbx.DeliveryDeadLetter || !strings.Contains(got[1].LastError, "502") {
		t.Fatalf("outcomes %+v", got)
	}
	if got := []time.Duration{d.backoff(1), d.backoff(2), d.backoff(4), d.backoff(40)}; got[0] != time.Second || got[1] != 2*time.Second ||
		got[2] != 8*time.Second || got[3] != time.Hour {
		t.Fatalf("backoffs %v", got)
	}
	// Without private addresses allowed, the dialler refuses loopback.
	guarded := NewDispatcher(store, DispatchConfig{}, sbx.SystemClock{}, slog.New(slog.DiscardHandler))
	guarded.deliver(context.Background(), due)
	if last := store.done[len(store.done)-1]; last.LastStatus != 0 || !strings.Contains(last.LastError, "not a public address") {
		t.Fatalf("a loopback receiver without --webhook-private: %+v", last)
	}
}
