package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/ledger"
)

// A create retried with its Idempotency-Key answers the sandbox the first
// made, however many retries race; the key with another body is a 422.
func TestIdempotentCreate(t *testing.T) {
	s := newStack(t, stackOpts{})
	acme := s.org(apiv1.CreateOrgRequest{Name: "acme", KYCStatus: "verified"})
	key := func(k string) http.Header { return http.Header{"Idempotency-Key": {k}} }
	body := `{"templateID":"base","waitReady":true,"metadata":{"run":"1"}}`

	var first, again apiv1.Sandbox
	s.callWith(acme.Secret, "POST", "/api/v1/sandboxes", body, key("k-1"), 201, &first)
	s.callWith(acme.Secret, "POST", "/api/v1/sandboxes", body, key("k-1"), 200, &again)
	if again.ID != first.ID || again.State != "running" {
		t.Fatalf("a retry answered %+v, the first %+v", again, first)
	}
	// The same request in other whitespace is the same request.
	s.callWith(acme.Secret, "POST", "/api/v1/sandboxes", "{ \"metadata\": {\"run\": \"1\"}, \"templateID\": \"base\", \"waitReady\": true }", key("k-1"), 200, &again)
	if again.ID != first.ID {
		t.Fatalf("an equal request made %s", again.ID)
	}
	status, data := s.send(acme.Secret, "POST", "/api/v1/sandboxes", `{"templateID":"base","metadata":{"run":"2"}}`, key("k-1"))
	s.refused("the key with another body", status, data, 422, "idempotency_key_reused", `Idempotency-Key "k-1" was used within the last 24h0m0s for another request`)
	status, data = s.send(acme.Secret, "POST", "/api/v1/sandboxes", body, key(strings.Repeat("k", 256)))
	s.refused("a key too long", status, data, 400, "invalid", "1 to 255 printable ASCII characters")

	// Racing retries: one sandbox, every answer its ID.
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sb apiv1.Sandbox
			status, data := s.send(acme.Secret, "POST", "/api/v1/sandboxes", body, key("k-race"))
			if status != 200 && status != 201 {
				t.Errorf("a racing retry: %d %s", status, data)
				return
			}
			decode(t, data, &sb)
			ids[i] = sb.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("racing retries made several sandboxes: %v", ids)
		}
	}
	// Another API key's same key is its own.
	var other apiv1.CreatedKey
	s.call(acme.Secret, "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "second"}, 201, &other)
	var theirs apiv1.Sandbox
	s.callWith(other.Secret, "POST", "/api/v1/sandboxes", body, key("k-1"), 201, &theirs)
	list, _, err := s.store.ListSandboxes(t.Context(), ledger.Filter{OrgID: acme.Org.ID})
	if err != nil || len(list) != 3 {
		t.Fatalf("%d sandboxes recorded (%v), want 3: k-1, k-race and the second key's k-1", len(list), err)
	}

	// A runtime's start, retried, answers the runtime the first started.
	var rts apiv1.RuntimeList
	s.call(acme.Secret, "GET", "/api/v1/org/acme/ws/default/runtimes", nil, 200, &rts)
	start := "/api/v1/org/acme/ws/default/runtimes/" + rts.Items[0].ID + "/start"
	var rt, rt2 apiv1.Runtime
	s.callWith(acme.Secret, "POST", start, `{}`, key("start-1"), 200, &rt)
	s.callWith(acme.Secret, "POST", start, `{}`, key("start-1"), 200, &rt2)
	if rt.Sandbox == nil || rt2.Sandbox == nil || rt2.Sandbox.ID != rt.Sandbox.ID || rt2.Status != "running" {
		t.Fatalf("a retried start: %+v, then %+v", rt, rt2)
	}
	s.fail(acme.Secret, "POST", start, `{}`, 409, "conflict", "reset it before starting another")
}

// callWith is call with extra headers.
func (s *stack) callWith(key, method, path string, body any, header http.Header, want int, out any) {
	s.t.Helper()
	status, data := s.send(key, method, path, body, header)
	if status != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, status, data, want)
	}
	decode(s.t, data, out)
}

func decode(t *testing.T, data []byte, out any) {
	t.Helper()
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("%v in %s", err, data)
	}
}
