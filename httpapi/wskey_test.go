package httpapi_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
)

// A browser's WebSocket, which cannot set headers, gives its API key as the
// subprotocol sbx.key.<key> beside sbx.pty: serve takes it as the key and
// answers sbx.pty, and the key goes no further (the agent, inside the
// sandbox, sees sbx.pty alone). A wrong key there is a 401, as in a header.
func TestTerminalKeyAsSubprotocol(t *testing.T) {
	s, _, sb := newSandbox(t)
	ctx := guarded(t)
	term, err := sb.Pty.Create(ctx, client.PtyOptions{Cmd: "cat"})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan http.Header, 8)
	s.Provider.Inspect(func(r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/pty/") {
			seen <- r.Header.Clone()
		}
	})
	url := "ws" + strings.TrimPrefix(s.URL, "http") + "/api/v1/sandboxes/" + sb.ID() + "/pty/" + strconv.Itoa(term.PID())

	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{apiv1.PtyProtocol, apiv1.KeyProtocolPrefix + s.Key}})
	if err != nil {
		t.Fatalf("a WebSocket with the key as a subprotocol: %v", err)
	}
	defer conn.CloseNow()
	if p := conn.Subprotocol(); p != apiv1.PtyProtocol {
		t.Errorf("serve answered the subprotocol %q, want %q", p, apiv1.PtyProtocol)
	}
	h := <-seen
	if got := h.Values("Sec-WebSocket-Protocol"); len(got) != 1 || got[0] != apiv1.PtyProtocol {
		t.Errorf("the agent was offered %q, want only %q", got, apiv1.PtyProtocol)
	}
	for k, vs := range h {
		for _, v := range vs {
			if strings.Contains(v, s.Key) {
				t.Errorf("the agent got the API key in %s", k)
			}
		}
	}
	if err := conn.Write(ctx, websocket.MessageBinary, []byte("typed in a browser\n")); err != nil {
		t.Fatal(err)
	}
	var out []byte
	for !strings.Contains(string(out), "typed in a browser") {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("reading the terminal (so far %q): %v", out, err)
		}
		if typ == websocket.MessageBinary {
			out = append(out, data...)
		}
	}

	_, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{apiv1.PtyProtocol, apiv1.KeyProtocolPrefix + "sbx_wrong"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong key as a subprotocol: %v, %v", resp, err)
	}
}
