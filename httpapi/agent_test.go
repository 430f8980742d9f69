package httpapi

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
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

// A body of unknown length reaches the agent in chunks as large as the
// caller sent them, not cut to the transport's 32 KiB: the agent pays for
// every chunk.
func TestProxyKeepsLargeChunks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	largest := make(chan int64, 1)
	go func() { // an agent that reads the chunks as they are on the wire
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		var most int64
		for header := true; ; {
			line, err := br.ReadString('\n')
			if err != nil {
				break
			}
			if header {
				header = line != "\r\n"
				continue
			}
			size, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
			if err != nil || size == 0 {
				break
			}
			most = max(most, size)
			io.CopyN(io.Discard, br, size+2) // the data and its CRLF
		}
		largest <- most
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	}()
	s := &Server{log: slog.New(slog.DiscardHandler)}
	serve := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.proxy(w, r, sbx.Sandbox{ID: "7c5e1d2a-0000-4000-8000-000000000004"}, ln.Addr().String(), "/files")
	}))
	defer serve.Close()
	body, send := io.Pipe()
	go func() {
		chunk := make([]byte, 512<<10)
		for range 16 {
			send.Write(chunk) // each Write is one chunk of the request
		}
		send.Close()
	}()
	// Through a buffer with WriteTo, as the Go client sends, the transport
	// sends each Write as one chunk, not in 32 KiB pieces.
	resp, err := http.Post(serve.URL+"/files", "application/octet-stream", io.NopCloser(bufio.NewReaderSize(body, 1<<20)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := <-largest; n <= 32<<10 { // what arrived at once, up to 1 MiB: on loopback, 64 KiB
		t.Errorf("the largest chunk the agent got was %d bytes; the caller sent 512 KiB ones", n)
	}
}
