package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/providertest"
	sbxserver "github.com/sbxdev/sbx/server"
)

// BenchmarkCreateGetDelete measures sandbox create→get→delete cycles through
// HTTP on the SQLite ledger with the Memory provider, against the baseline of
// an authenticated GET /api/v1/me in the same process.
//
//	go test ./e2e -run '^$' -bench CreateGetDelete -benchtime 3s
func BenchmarkCreateGetDelete(b *testing.B) {
	url, key := benchServer(b)
	c := &http.Client{}
	call := func(method, path string, body []byte, want int) []byte {
		req, _ := http.NewRequest(method, url+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		if len(body) > 0 {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			b.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
		}
		return data
	}
	baseline := func(n int) time.Duration {
		start := time.Now()
		for range n {
			call("GET", "/api/v1/me", nil, 200)
		}
		return time.Since(start) / time.Duration(n)
	}
	baseline(100) // warm the connection
	create := []byte(`{"templateID":"base","waitReady":true}`)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		var sb struct{ SandboxID string }
		json.Unmarshal(call("POST", "/api/v1/sandboxes", create, 201), &sb)
		call("GET", "/api/v1/sandboxes/"+sb.SandboxID, nil, 200)
		call("DELETE", "/api/v1/sandboxes/"+sb.SandboxID, nil, 200)
	}
	perCycle := time.Since(start) / time.Duration(b.N)
	b.StopTimer()
	base := baseline(max(b.N, 100))
	b.ReportMetric(float64(time.Second)/float64(perCycle), "cycles/s")
	b.ReportMetric(float64(perCycle)/float64(base), "x_get_me")
}

// benchServer runs sbx serve in this process with the Memory provider.
func benchServer(b *testing.B) (url, key string) {
	dir := b.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- sbxserver.Run(ctx, sbxserver.Config{
			DataDir: dir, Listen: "127.0.0.1:0", DefaultProvider: providertest.MemoryName,
			Providers: []sbx.Provider{providertest.NewMemory(providertest.MemoryOptions{})},
			Log:       slog.New(slog.DiscardHandler), Out: io.Discard,
			Started: func(addr string) { started <- addr },
		})
	}()
	b.Cleanup(func() { cancel(); <-done })
	select {
	case addr := <-started:
		url = "http://" + addr
	case err := <-done:
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, sbxserver.KeyFile))
	if err != nil {
		b.Fatal(err)
	}
	return url, strings.TrimSpace(string(data))
}
