package agent_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sbxdev/sbx/agent"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testenv"
)

// A short command's stream costs two writes to the network: the headers
// with the start event, and the end event with the end of the response.
func TestShortCommandStreamsInTwoWrites(t *testing.T) {
	e, ln := recordedEnv(t)
	req, _ := http.NewRequest(http.MethodPost, e.url+"/commands", strings.NewReader(`{"args":["true"]}`))
	req.Header.Set(apiv1.AccessTokenHeader, token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte(`"type":"end"`)) {
		t.Fatalf("stream %q has no end", body)
	}
	writes := ln.writes()
	if len(writes) != 2 {
		t.Fatalf("%d writes, want 2: %q", len(writes), writes)
	}
	if w := writes[0]; !strings.HasPrefix(w, "HTTP/1.1 200") || !strings.Contains(w, `"type":"start"`) {
		t.Errorf("first write %q: want the headers and the start event", w)
	}
	if w := writes[1]; !strings.Contains(w, `"type":"end"`) || !strings.HasSuffix(w, "0\r\n\r\n") {
		t.Errorf("last write %q: want the end event and the end of the response", w)
	}
}

// recordedEnv is an agent served in-process whose writes to the network
// are recorded.
func recordedEnv(t *testing.T) (*env, *recordingListener) {
	t.Helper()
	a, err := agent.New(agent.Config{Token: token, Workdir: t.TempDir(), Env: testenv.AgentEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(a.Handler())
	ln := &recordingListener{Listener: srv.Listener}
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(func() { a.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
	t.Cleanup(cancel)
	return &env{t: t, ctx: ctx, url: srv.URL}, ln
}

// recordingListener keeps what the server writes to each connection, a
// string per write.
type recordingListener struct {
	net.Listener
	mu  sync.Mutex
	all []string
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, l: l}, nil
}

func (l *recordingListener) writes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all...)
}

type recordingConn struct {
	net.Conn
	l *recordingListener
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.l.mu.Lock()
	c.l.all = append(c.l.all, string(p))
	c.l.mu.Unlock()
	return c.Conn.Write(p)
}
