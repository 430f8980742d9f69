package agentcall

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
)

// Requests reuse a connection to one incarnation of a sandbox, and never
// one made before its last pause or to another sandbox at the same address.
func TestConnectionsLastOneIncarnation(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	c := &http.Client{Transport: Transport}
	get := func(sb sbx.Sandbox) {
		t.Helper()
		resp, err := c.Get("http://" + Host(sb, addr) + "/ready")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	sb := sbx.Sandbox{ID: "7c5e1d2a-0000-4000-8000-000000000001"}
	paused := sb
	paused.PausedAt = time.Unix(1700000000, 5)
	for _, step := range []struct {
		what string
		sb   sbx.Sandbox
		want int32
	}{
		{"first request", sb, 1},
		{"second request", sb, 1},
		{"after a pause", paused, 2},
		{"again", paused, 2},
		{"another sandbox at the address", sbx.Sandbox{ID: "7c5e1d2a-0000-4000-8000-000000000002"}, 3},
	} {
		get(step.sb)
		if n := conns.Load(); n != step.want {
			t.Errorf("%s: %d connections, want %d", step.what, n, step.want)
		}
	}
}
