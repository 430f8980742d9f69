package httpapi

import (
	"bufio"
	"bytes"
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
	"unicode/utf8"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
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
		s.proxy(w, r, &lifecycle.AgentConn{Sandbox: sb, Addr: strings.TrimPrefix(agent.URL, "http://"), Context: r.Context()}, "/commands")
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
		s.proxy(w, r, &lifecycle.AgentConn{Sandbox: sbx.Sandbox{ID: "7c5e1d2a-0000-4000-8000-000000000004"}, Addr: ln.Addr().String(), Context: r.Context()}, "/files")
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

// fragments reads its chunks one by one, then fails with err.
type fragments struct {
	chunks [][]byte
	err    error
}

func (f *fragments) Read(p []byte) (int, error) {
	if len(f.chunks) == 0 {
		return 0, f.err
	}
	n := copy(p, f.chunks[0])
	if f.chunks[0] = f.chunks[0][n:]; len(f.chunks[0]) == 0 {
		f.chunks = f.chunks[1:]
	}
	return n, nil
}

func (f *fragments) Close() error { return nil }

// A stream cut because its sandbox stopped passes on its whole messages,
// drops the one begun, and ends with the last message saying why; one cut
// for another reason fails as it was cut; one that ends, ends.
func TestEndingStreamKeepsMessagesWhole(t *testing.T) {
	stopped := sbx.Errorf(sbx.EConflict, "sandbox sbx-x was deleted")
	read := func(s *endingStream) (string, error) {
		var out bytes.Buffer
		buf := make([]byte, 5) // smaller than a message
		for {
			n, err := s.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				return out.String(), err
			}
		}
	}
	lines := func(cut error, why *sbx.Error, chunks ...string) *endingStream {
		f := &fragments{err: cut}
		for _, c := range chunks {
			f.chunks = append(f.chunks, []byte(c))
		}
		return &endingStream{body: f, stopped: func() *sbx.Error { return why }, split: ndjsonLines, last: ndjsonError}
	}
	got, err := read(lines(io.ErrUnexpectedEOF, stopped, `{"a":`, `1}`+"\n"+`{"b"`, `:2}`+"\n"+`{"c":3`))
	if want := `{"a":1}` + "\n" + `{"b":2}` + "\n" + `{"type":"error","error":"sandbox sbx-x was deleted"}` + "\n"; err != nil || got != want {
		t.Errorf("cut by the sandbox's stop: %q, %v; want %q", got, err, want)
	}
	if got, err := read(lines(io.ErrUnexpectedEOF, nil, `{"a":1}`+"\n"+`{"b"`)); err != io.ErrUnexpectedEOF || got != `{"a":1}`+"\n" {
		t.Errorf("cut otherwise: %q, %v", got, err)
	}
	if got, err := read(lines(io.EOF, stopped, `{"a":`, `1}`+"\n")); err != nil || got != `{"a":1}`+"\n" {
		t.Errorf("ended: %q, %v", got, err)
	}

	frame := func(payload string) string { // a server's frame: FIN, binary, unmasked
		if len(payload) < 126 {
			return string([]byte{0x82, byte(len(payload))}) + payload
		}
		return string([]byte{0x82, 126, byte(len(payload) >> 8), byte(len(payload))}) + payload
	}
	long := strings.Repeat("x", 300)
	stream := frame("hi") + frame(long) + frame("cut")
	var chunks [][]byte
	for i := 0; i < len(stream)-2; i += 7 {
		chunks = append(chunks, []byte(stream[i:min(i+7, len(stream)-2)]))
	}
	ws := &endingStream{body: &fragments{chunks: chunks, err: io.ErrUnexpectedEOF}, stopped: func() *sbx.Error { return stopped }, split: wsFrames, last: wsGoingAway}
	got, err = read(ws)
	if want := frame("hi") + frame(long) + "\x88\x1b\x03\xe9sandbox sbx-x was deleted"; err != nil || got != want {
		t.Errorf("a WebSocket cut by the sandbox's stop: %q, %v; want %q", got, err, want)
	}
	if reason := string(wsGoingAway(strings.Repeat("é", 100))[4:]); len(reason) > 123 || !utf8.ValidString(reason) {
		t.Errorf("a long reason is cut to %d bytes: %q", len(reason), reason)
	}
}
