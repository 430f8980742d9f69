// Package echoserver is a small HTTP and WebSocket server that tells a
// client what reached it: what the preview tests and `sbx bench preview`
// run inside a sandbox (as `sbx agent echo PORT…`, the agent binary every
// local sandbox has at /.sbx/sbx), so they need nothing the template lacks.
//
// Routes:
//
//	GET /echo       the request as the app saw it (JSON: port, method, host, path, query, headers, cookies)
//	GET /bytes?n=N  N zero bytes (a download)
//	GET /ws         a WebSocket that sends back every message it receives
//	GET /cookie     sets the cookie app=set
//	GET /           "hello from PORT\n"
package echoserver

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/coder/websocket"
)

// Request is what /echo answers.
type Request struct {
	Port  int    `json:"port"`
	Local string `json:"local"` // the address the request came in on

	Method  string              `json:"method"`
	Host    string              `json:"host"`
	Path    string              `json:"path"`
	Query   string              `json:"query"`
	Headers map[string][]string `json:"headers"`
	Cookies []string            `json:"cookies"`
}

// Handler serves the routes for a server listening on port.
func Handler(port int) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /echo", func(w http.ResponseWriter, r *http.Request) {
		out := Request{Port: port, Method: r.Method, Host: r.Host, Path: r.URL.Path, Query: r.URL.RawQuery, Headers: r.Header, Cookies: []string{}}
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			out.Local = a.String()
		}
		for _, c := range r.Cookies() {
			out.Cookies = append(out.Cookies, c.Name)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("GET /bytes", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "n must be a number of bytes", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		io.CopyN(w, zeros{}, n)
	})
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(64 << 20)
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, msg); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("GET /cookie", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "app", Value: "set", Path: "/"})
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from "+strconv.Itoa(port)+"\n")
	})
	return mux
}

// Serve serves Handler on each port until ctx ends.
func Serve(ctx context.Context, ports []int) error {
	errs := make(chan error, len(ports))
	for _, p := range ports {
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: Handler(p)}
		go func() { <-ctx.Done(); srv.Close() }()
		go func() { errs <- srv.Serve(ln) }()
	}
	<-ctx.Done()
	return nil
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
