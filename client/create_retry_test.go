package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/sbxdev/sbx/client"
)

// A create whose connection drops before the answer is sent again with the
// same Idempotency-Key, so the server answers the sandbox the first made.
func TestCreateRetriesWithItsKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		first := len(keys) == 1
		mu.Unlock()
		if first { // the server made the sandbox, and the connection went
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, sandboxJSON)
	}))
	t.Cleanup(srv.Close)
	c := client.New(client.Options{URL: srv.URL, APIKey: testKey})
	sb, err := c.Create(context.Background(), "base", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sb.SandboxID() != "sbx-abc" || len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("sandbox %s after requests with keys %q", sb.SandboxID(), keys)
	}
	// A request that was answered, even with an error, is not sent again.
	f, c := newFake(t, http.StatusConflict, `{"code":409,"type":"conflict","detail":"no","errors":[]}`)
	if _, err := c.Create(context.Background(), "base", &client.CreateOptions{IdempotencyKey: "mine"}); err == nil {
		t.Fatal("a 409 was not an error")
	}
	f.last(t)
}
