package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
)

// The proxy passes a request whose answer begins before its body has all
// arrived, as POST /commands does when the agent streams at once: the body
// still reaches the agent whole, and the answer the caller whole.
func TestProxyAnswersBeforeTheBodyEnds(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		rc.EnableFullDuplex()
		rc.SetReadDeadline(time.Now().Add(20 * time.Second)) // a hang guard
		io.WriteString(w, "started\n")
		w.(http.Flusher).Flush()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("agent reading the body: %v", err)
		}
		io.WriteString(w, "got "+string(body)+"\n")
	}))
	defer agent.Close()
	s := &Server{log: slog.New(slog.DiscardHandler)}
	sb := sbx.Sandbox{ID: "7c5e1d2a-0000-4000-8000-000000000003"}
	serve := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.proxy(w, r, sb, strings.TrimPrefix(agent.URL, "http://"), "/commands")
	}))
	defer serve.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
	defer cancel()
	body, send := io.Pipe()
	context.AfterFunc(ctx, func() { send.CloseWithError(ctx.Err()) })
	go io.WriteString(send, `{"args":`)
	req, _ := http.NewRequestWithContext(ctx, "POST", serve.URL+"/commands", body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.WriteString(send, `["true"]}`) // the rest, once the answer has begun
	send.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || string(got) != "started\ngot {\"args\":[\"true\"]}\n" {
		t.Errorf("answer %q, %v", got, err)
	}
}
