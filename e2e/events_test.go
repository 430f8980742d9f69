package e2e

import (
	"bufio"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// The org's event log and its webhooks, end to end: a serve with the
// Memory provider, webhook receivers on loopback (--webhook-private).

// webhookArgs are serve's flags for the tests' receivers: loopback URLs, a
// short backoff, three attempts.
var webhookArgs = []string{"--webhook-private", "--webhook-backoff", "20ms", "--webhook-attempts", "3"}

// receiver is a webhook receiver that checks each delivery's signature
// with secret (once it is known) and keeps what it got.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	got    []apiv1.OrgEvent
	hits   atomic.Int64
	status atomic.Int64 // what it answers
	seen   chan struct{}
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{t: t, seen: make(chan struct{}, 1000)}
	r.status.Store(int64(status))
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.hits.Add(1)
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	secret := r.secret
	r.mu.Unlock()
	if err := verify(secret, req.Header.Get("Sbx-Signature"), body); err != nil {
		r.t.Errorf("delivery %s: %v", req.Header.Get("Sbx-Delivery-Id"), err)
	}
	var e apiv1.OrgEvent
	if err := json.Unmarshal(body, &e); err != nil {
		r.t.Errorf("delivery body %s: %v", body, err)
	}
	if req.Header.Get("Sbx-Event-Id") != strconv.FormatInt(e.ID, 10) || req.Header.Get("Sbx-Event-Type") != e.Type ||
		!strings.HasPrefix(req.Header.Get("Sbx-Delivery-Id"), "whd_") || req.Header.Get("Content-Type") != "application/json" {
		r.t.Errorf("delivery headers %v for event %d %s", req.Header, e.ID, e.Type)
	}
	status := int(r.status.Load())
	if status/100 == 2 {
		r.mu.Lock()
		r.got = append(r.got, e)
		r.mu.Unlock()
	}
	w.WriteHeader(status)
	r.seen <- struct{}{}
}

// verify checks a Sbx-Signature header as the docs tell a receiver to.
func verify(secret, header string, body []byte) error {
	var ts, sig string
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(body)))
	if want := hex.EncodeToString(mac.Sum(nil)); sig == "" || !hmac.Equal([]byte(sig), []byte(want)) {
		return fmt.Errorf("signature %q does not verify", header)
	}
	if n, err := strconv.ParseInt(ts, 10, 64); err != nil || time.Since(time.Unix(n, 0)).Abs() > 5*time.Minute {
		return fmt.Errorf("signature time %q", ts)
	}
	return nil
}

// events answers what the receiver got so far.
func (r *receiver) events() []apiv1.OrgEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]apiv1.OrgEvent(nil), r.got...)
}

// until waits, a delivery at a time, until cond holds (a generous bound
// against a hang, not a timing assertion).
func until(t *testing.T, what string, wake <-chan struct{}, cond func() bool) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !cond() {
		select {
		case <-wake:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("never: %s", what)
		}
	}
}

// addWebhook registers url for types and tells r its secret.
func (s *server) addWebhook(r *receiver, types ...string) apiv1.CreatedWebhook {
	s.t.Helper()
	var created apiv1.CreatedWebhook
	s.call("POST", "/api/v1/org/default/webhooks", map[string]any{"url": r.srv.URL + "/hook", "types": types}, http.StatusCreated, &created)
	if !strings.HasPrefix(created.Secret, "whsec_") || created.Webhook.ID == "" {
		s.t.Fatalf("created webhook %+v", created)
	}
	r.mu.Lock()
	r.secret = created.Secret
	r.mu.Unlock()
	return created
}

// eventTypesOf are the types of the events of one sandbox, in the order got.
func eventTypesOf(events []apiv1.OrgEvent, sandbox string) []string {
	var out []string
	for _, e := range events {
		if e.Subject == sandbox {
			out = append(out, e.Type)
		}
	}
	return out
}

func TestWebhookGetsSignedLifecycleInOrder(t *testing.T) {
	s := startServer(t, serverOpts{args: webhookArgs})
	r := newReceiver(t, http.StatusNoContent)
	s.addWebhook(r, "sandbox.*")
	sb := s.create(map[string]any{"waitReady": true})
	s.call("POST", "/api/v1/sandboxes/"+sb.SandboxID+"/pause", nil, http.StatusOK, nil)
	s.call("POST", "/api/v1/sandboxes/"+sb.SandboxID+"/resume", nil, http.StatusOK, nil)
	s.call("DELETE", "/api/v1/sandboxes/"+sb.SandboxID, nil, http.StatusOK, nil)
	until(t, "the receiver gets sandbox.killed", r.seen, func() bool {
		got := eventTypesOf(r.events(), sb.SandboxID)
		return len(got) > 0 && got[len(got)-1] == "sandbox.killed"
	})
	got := r.events()
	var timeline apiv1.Sandbox
	s.call("GET", "/api/v1/sandboxes/"+sb.SandboxID, nil, http.StatusOK, &timeline)
	var want []string // the timeline's steps, as the webhook must have them
	for _, e := range timeline.Timeline {
		want = append(want, "sandbox."+e.Step)
	}
	if strings.Join(eventTypesOf(got, sb.SandboxID), " ") != strings.Join(want, " ") {
		t.Fatalf("the receiver got %v, want the timeline's %v", eventTypesOf(got, sb.SandboxID), want)
	}
	lifecycle := []string{"sandbox.creating", "sandbox.ready", "sandbox.pausing", "sandbox.paused", "sandbox.resuming", "sandbox.resumed", "sandbox.killing", "sandbox.killed"}
	rest := want
	for _, need := range lifecycle { // in this order, with maybe other steps between
		i := slices.Index(rest, need)
		if i < 0 {
			t.Fatalf("the receiver got %v: no %s after the steps before it", want, need)
		}
		rest = rest[i+1:]
	}
	for i := 1; i < len(got); i++ {
		if got[i].ID <= got[i-1].ID {
			t.Errorf("delivered out of order: %d after %d", got[i].ID, got[i-1].ID)
		}
	}
	if e := got[0]; e.Sandbox != sb.ID || e.ProjectID == "" || e.WorkspaceID == "" || !strings.Contains(string(e.Data), `"step"`) {
		t.Errorf("event %+v", e)
	}
}

func TestWebhookRetriesThenDeadLetterThenRedeliver(t *testing.T) {
	s := startServer(t, serverOpts{args: webhookArgs})
	r := newReceiver(t, http.StatusInternalServerError)
	hook := s.addWebhook(r, "credits.*")
	s.call("POST", "/api/v1/admin/orgs/default/credits", map[string]any{"credits": "5", "note": "for the hook"}, http.StatusOK, nil)
	path := "/api/v1/org/default/webhooks/" + hook.Webhook.ID + "/deliveries"
	var dead apiv1.WebhookDeliveryList
	until(t, "a dead letter", r.seen, func() bool {
		s.call("GET", path+"?state=dead_letter", nil, http.StatusOK, &dead)
		return len(dead.Items) == 1
	})
	d := dead.Items[0]
	if d.Attempts != 3 || d.LastStatus != 500 || !strings.Contains(d.LastError, "500") || d.EventType != "credits.top_up" || r.hits.Load() != 3 {
		t.Fatalf("dead letter %+v after %d requests, want 3 attempts", d, r.hits.Load())
	}
	r.status.Store(http.StatusOK)
	var again apiv1.WebhookDelivery
	s.call("POST", path+"/"+d.ID+"/redeliver", nil, http.StatusOK, &again)
	if again.State != "queued" || again.Attempts != 0 {
		t.Fatalf("redelivered %+v", again)
	}
	var ok apiv1.WebhookDeliveryList
	until(t, "the redelivery succeeds", r.seen, func() bool {
		s.call("GET", path+"?state=succeeded", nil, http.StatusOK, &ok)
		return len(ok.Items) == 1
	})
	if got := r.events(); len(got) != 1 || got[0].Type != "credits.top_up" || got[0].ID != d.EventID || !strings.Contains(string(got[0].Data), "for the hook") {
		t.Fatalf("the receiver got %+v", got)
	}
	s.fail("POST", path+"/whd_nope/redeliver", nil, http.StatusNotFound, "not found")
}

// TestEventsReplayAcrossRestart: events read after an ID miss none, and
// their IDs stay dense, across a restart of serve.
func TestEventsReplayAcrossRestart(t *testing.T) {
	s := startServer(t, serverOpts{})
	a := s.create(map[string]any{"waitReady": true})
	var first apiv1.EventList
	s.call("GET", "/api/v1/events", nil, http.StatusOK, &first)
	if len(first.Items) == 0 || first.Next != first.Items[len(first.Items)-1].ID {
		t.Fatalf("first read %+v", first)
	}
	s.restart(serverOpts{})
	s.call("POST", "/api/v1/sandboxes/"+a.SandboxID+"/pause", nil, http.StatusOK, nil)
	b := s.create(map[string]any{"waitReady": true})
	var rest apiv1.EventList
	s.call("GET", fmt.Sprintf("/api/v1/events?after=%d", first.Next), nil, http.StatusOK, &rest)
	var all apiv1.EventList
	s.call("GET", "/api/v1/events?limit=1000", nil, http.StatusOK, &all)
	for i, e := range all.Items {
		if e.ID != int64(i+1) {
			t.Fatalf("event %d has ID %d: IDs are not dense: %+v", i, e.ID, all.Items)
		}
	}
	if len(all.Items) != len(first.Items)+len(rest.Items) || rest.Items[0].ID != first.Next+1 {
		t.Fatalf("%d events in all, %d before the restart and %d after it", len(all.Items), len(first.Items), len(rest.Items))
	}
	if s := strings.Join(eventTypesOf(rest.Items, a.SandboxID), " "); !strings.Contains(s, "sandbox.paused") {
		t.Errorf("after the restart, %s's events are %s", a.SandboxID, s)
	}
	if len(eventTypesOf(rest.Items, b.SandboxID)) == 0 {
		t.Errorf("no events of %s after the restart", b.SandboxID)
	}
	var onlyB apiv1.EventList
	s.call("GET", "/api/v1/events?type=sandbox.ready&sandbox="+b.SandboxID, nil, http.StatusOK, &onlyB)
	if len(onlyB.Items) != 1 || onlyB.Items[0].Subject != b.SandboxID || onlyB.Items[0].Type != "sandbox.ready" {
		t.Errorf("filtered %+v", onlyB.Items)
	}
}

// sse reads server-sent events from a stream into a channel.
func (s *server) sse(ctx context.Context, key, query, lastID string) <-chan apiv1.OrgEvent {
	s.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/api/v1/events/stream"+query, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		s.t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan apiv1.OrgEvent, 100)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var id, typ string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				var e apiv1.OrgEvent
				json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e)
				if strconv.FormatInt(e.ID, 10) != id || e.Type != typ {
					s.t.Errorf("event %+v sent as id %s event %s", e, id, typ)
				}
				out <- e
			}
		}
	}()
	return out
}

// next waits for the next event of a stream.
func next(t *testing.T, events <-chan apiv1.OrgEvent) apiv1.OrgEvent {
	t.Helper()
	select {
	case e, ok := <-events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return e
	case <-time.After(60 * time.Second):
		t.Fatal("no event came")
	}
	return apiv1.OrgEvent{}
}

func TestEventsStreamFollowsAndResumes(t *testing.T) {
	s := startServer(t, serverOpts{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := s.sse(ctx, s.key, "?type=sandbox.ready", "")
	a := s.create(map[string]any{"waitReady": true})
	if e := next(t, stream); e.Type != "sandbox.ready" || e.Subject != a.SandboxID {
		t.Fatalf("followed %+v, want %s ready", e, a.SandboxID)
	}
	b := s.create(map[string]any{"waitReady": true})
	eb := next(t, stream)
	if eb.Subject != b.SandboxID {
		t.Fatalf("followed %+v, want %s ready", eb, b.SandboxID)
	}
	// A reconnect with Last-Event-ID resumes just after it.
	resumed := s.sse(ctx, s.key, "?after=999999", strconv.FormatInt(eb.ID-1, 10))
	if e := next(t, resumed); e.ID != eb.ID {
		t.Fatalf("resumed at %+v, want event %d", e, eb.ID)
	}
	s.fail("GET", "/api/v1/events/stream?type=Sandbox", nil, http.StatusBadRequest, "type")
}

func TestEventsAndWebhooksStayInTheirOrg(t *testing.T) {
	s := startServer(t, serverOpts{args: webhookArgs})
	r := newReceiver(t, http.StatusOK)
	hook := s.addWebhook(r)
	s.create(map[string]any{"waitReady": true})
	var other apiv1.CreatedOrg
	s.call("POST", "/api/v1/admin/orgs", map[string]any{"name": "other", "kyc_status": "verified", "credits": "100"}, http.StatusCreated, &other)
	var theirs apiv1.EventList
	s.callKey(other.Secret, "GET", "/api/v1/events", nil, http.StatusOK, &theirs)
	var mine apiv1.EventList
	s.call("GET", "/api/v1/events", nil, http.StatusOK, &mine)
	for _, e := range theirs.Items {
		if e.OrgID == mine.Items[0].OrgID {
			t.Fatalf("another org's key sees %+v", e)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := s.sse(ctx, other.Secret, "", "")
	s.callKey(other.Secret, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "waitReady": true}, http.StatusCreated, nil)
	s.create(map[string]any{"waitReady": true})
	s.callKey(other.Secret, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "waitReady": true}, http.StatusCreated, nil)
	for range 4 { // their first sandbox's creating and ready at least, and never ours
		if e := next(t, stream); e.OrgID == mine.Items[0].OrgID {
			t.Fatalf("another org's stream got %+v", e)
		}
	}
	base := "/api/v1/org/default/webhooks"
	s.failKey(other.Secret, "GET", base, nil, http.StatusNotFound, "not found")
	s.failKey(other.Secret, "DELETE", "/api/v1/org/other/webhooks/"+hook.Webhook.ID, nil, http.StatusNotFound, "not found")
	s.failKey(other.Secret, "GET", "/api/v1/org/other/webhooks/"+hook.Webhook.ID+"/deliveries", nil, http.StatusNotFound, "not found")
	var list apiv1.WebhookList
	s.callKey(other.Secret, "GET", "/api/v1/org/other/webhooks", nil, http.StatusOK, &list)
	if len(list.Items) != 0 {
		t.Fatalf("another org lists %+v", list.Items)
	}
	s.call("GET", base, nil, http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].ID != hook.Webhook.ID || strings.Contains(fmt.Sprint(list), hook.Secret) {
		t.Fatalf("the org lists %+v", list.Items)
	}
	// A project's key acts as a member: webhooks are the org's administration.
	project := ""
	for _, e := range mine.Items {
		project = cmp.Or(project, e.ProjectID) // the first is the org's initial credits', of no project
	}
	var key apiv1.CreatedKey
	s.call("POST", "/api/v1/org/default/keys", map[string]any{"name": "proj", "project_id": project}, http.StatusCreated, &key)
	if key.Key.ProjectID != project || project == "" {
		t.Fatalf("project key %+v", key.Key)
	}
	s.failKey(key.Secret, "GET", base, nil, http.StatusForbidden, "admin")
	var projects apiv1.EventList
	s.callKey(key.Secret, "GET", "/api/v1/events?type=credits.*", nil, http.StatusOK, &projects)
	if len(projects.Items) != 0 {
		t.Errorf("a project's key sees the org's credit events: %+v", projects.Items)
	}
	s.call("DELETE", base+"/"+hook.Webhook.ID, nil, http.StatusOK, nil)
	s.fail("DELETE", base+"/"+hook.Webhook.ID, nil, http.StatusNotFound, "not found")
}

func TestEventsAndWebhooksRefuseBadInput(t *testing.T) {
	s := startServer(t, serverOpts{}) // no --webhook-private: loopback is refused
	base := "/api/v1/org/default/webhooks"
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"url": "ftp://example.com/x"}, "url"},
		{map[string]any{"url": ""}, "url"},
		{map[string]any{"url": "http://127.0.0.1:9/hook"}, "url"},
		{map[string]any{"url": "http://[::1]/hook"}, "url"},
		{map[string]any{"url": "http://localhost/hook"}, "url"},
		{map[string]any{"url": "https://example.com/x", "types": []string{"Sandbox Paused"}}, "types"},
		{map[string]any{"url": "https://example.com/x", "secret": "short"}, "secret"},
		{map[string]any{"url": "https://example.com/x", "colour": "red"}, "colour"},
	} {
		e := s.fail("POST", base, c.body, http.StatusBadRequest, "")
		if !strings.Contains(fmt.Sprint(e.Errors), c.field) && !strings.Contains(e.Detail, c.field) {
			t.Errorf("%v: %+v does not name %s", c.body, e, c.field)
		}
	}
	for q, field := range map[string]string{"after=x": "after", "after=-1": "after", "type=BAD": "type", "limit=0": "limit", "limit=5000": "limit", "colour=red": "colour"} {
		e := s.fail("GET", "/api/v1/events?"+q, nil, http.StatusBadRequest, "")
		if !strings.Contains(fmt.Sprint(e.Errors), field) && !strings.Contains(e.Detail, field) {
			t.Errorf("?%s: %+v does not name %s", q, e, field)
		}
	}
	var created apiv1.CreatedWebhook
	s.call("POST", base, map[string]any{"url": "https://hooks.example.com/x", "secret": "a-secret-of-my-own"}, http.StatusCreated, &created)
	if created.Secret != "a-secret-of-my-own" {
		t.Errorf("the given secret came back as %q", created.Secret)
	}
	s.fail("GET", base+"/"+created.Webhook.ID+"/deliveries?state=lost", nil, http.StatusBadRequest, "state")
	s.fail("GET", base+"/wh_nope/deliveries", nil, http.StatusNotFound, "not found")
}

// TestEventsAndWebhooksCLI: sbx webhook add|list|deliveries|redeliver|rm
// and sbx events, --follow included, through the Go client.
func TestEventsAndWebhooksCLI(t *testing.T) {
	s := startServer(t, serverOpts{args: webhookArgs})
	r := newReceiver(t, http.StatusOK)
	out := s.ok("webhook", "add", r.srv.URL+"/hook", "--type", "sandbox.*", "--json")
	var created apiv1.CreatedWebhook
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Secret == "" {
		t.Fatalf("webhook add: %v %s", err, out)
	}
	r.mu.Lock()
	r.secret = created.Secret
	r.mu.Unlock()
	if out := s.ok("webhook", "list"); !strings.Contains(out, created.Webhook.ID) || !strings.Contains(out, "sandbox.*") || strings.Contains(out, created.Secret) {
		t.Fatalf("webhook list:\n%s", out)
	}

	cmd := exec.Command(sbxBin, "events", "--follow", "--type", "sandbox.ready", "--json")
	cmd.Env = append(os.Environ(), "SBX_URL="+s.url, "SBX_DATA_DIR="+s.dataDir, "SBX_API_KEY=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sb := s.create(map[string]any{"waitReady": true})
	var followed apiv1.OrgEvent // --json prints each event as a JSON document
	if err := json.NewDecoder(stdout).Decode(&followed); err != nil || followed.Subject != sb.SandboxID || followed.Type != "sandbox.ready" {
		t.Fatalf("events --follow printed %+v (%v)", followed, err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("events --follow after an interrupt: %v", err)
	}

	if out := s.ok("events", "--sandbox", sb.SandboxID); !strings.Contains(out, "sandbox.creating") || !strings.Contains(out, "sandbox.ready") {
		t.Fatalf("events --sandbox:\n%s", out)
	}
	until(t, "the receiver gets the sandbox's ready", r.seen, func() bool {
		return strings.Contains(strings.Join(eventTypesOf(r.events(), sb.SandboxID), " "), "sandbox.ready")
	})
	out = s.ok("webhook", "deliveries", created.Webhook.ID, "--state", "succeeded", "--json")
	var ds apiv1.WebhookDeliveryList
	if err := json.Unmarshal([]byte(out), &ds); err != nil || len(ds.Items) == 0 {
		t.Fatalf("webhook deliveries: %v %s", err, out)
	}
	if out := s.ok("webhook", "redeliver", created.Webhook.ID, ds.Items[0].ID); !strings.Contains(out, "queued") {
		t.Fatalf("webhook redeliver: %s", out)
	}
	if _, errOut, code := s.cli("webhook", "add", "gopher://x"); code == 0 || !strings.Contains(errOut, "url") {
		t.Fatalf("webhook add of a bad URL: exit %d, %s", code, errOut)
	}
	s.ok("webhook", "rm", created.Webhook.ID)
	if out := s.ok("webhook", "list"); strings.Contains(out, created.Webhook.ID) {
		t.Fatalf("webhook list after rm:\n%s", out)
	}
}
