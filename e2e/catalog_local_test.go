package e2e

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/internal/testtemplates"
)

// Every template of the curated catalog builds from Debian's packages on
// this host (once per host and recipe: testtemplates.Catalog keeps it) and
// a gVisor sandbox of it passes a smoke check: its Python modules import,
// Node runs, PyTorch adds, and the desktop serves VNC on 5900, draws a
// screen that is not blank, and shows it in a browser through serve's
// viewer.
func TestCatalogTemplatesLocal(t *testing.T) {
	smoke := []struct{ name, cmd, want string }{
		{"code-interpreter", "python3 -c 'import pandas, matplotlib, scipy, ipykernel, jupyter_server; print(\"ok\")'", "ok"},
		{"node", "node -e 'console.log(6 * 7)'", "42"},
		{"data-science", "python3 -c 'import sklearn, pandas; print(\"ok\")'", "ok"},
		{"pytorch", "python3 -c 'import torch; print(torch.tensor([1, 2]).sum().item())'", "3"},
		{"desktop", "", ""},
	}
	for _, c := range smoke {
		start := time.Now()
		if _, err := testtemplates.Catalog(c.name); err != nil {
			t.Fatal(err)
		}
		t.Logf("the catalog's %s: built (or found built) in %s", c.name, time.Since(start).Round(time.Second))
	}
	s := localServer(t, false)
	for _, c := range smoke {
		sb := s.create(map[string]any{"templateID": c.name, "waitReady": true, "memoryMB": 2048})
		if c.name == "desktop" {
			checkDesktop(t, s, sb)
		} else if got := s.sh(sb, c.cmd); got != c.want {
			t.Errorf("%s: %s: %q, want %q", c.name, c.cmd, got, c.want)
		}
		s.call("DELETE", "/api/v1/sandboxes/"+sb.ID, nil, http.StatusOK, nil)
	}
}

// checkDesktop: the desktop's VNC server answers on 5900 with the RFB
// banner; the API's screenshot is a PNG of more than one colour; and a
// headless Chromium opens the viewer (noVNC from serve, over serve's
// WebSocket bridge, with the sandbox's traffic token) and sees its canvas
// drawn.
func checkDesktop(t *testing.T, s *server, sb apiv1.Sandbox) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for strings.TrimSpace(s.shStatus(sb, "bash -c ': </dev/tcp/127.0.0.1/5900' 2>/dev/null && echo up")) != "up" {
		if time.Now().After(deadline) {
			t.Fatalf("the desktop's VNC port did not open; its processes:\n%s", s.sh(sb, "ps -eo args"))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if banner := s.sh(sb, "exec 3<>/dev/tcp/127.0.0.1/5900; head -c 12 <&3"); !strings.HasPrefix(banner, "RFB 003.") {
		t.Errorf("the VNC server's banner: %q", banner)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) { // until the terminal's first frame
		code, data := s.do("GET", "/api/v1/sandboxes/"+sb.ID+"/desktop/screenshot", nil)
		if code != http.StatusOK {
			t.Fatalf("screenshot: %d %s", code, data)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("the screenshot is no PNG: %v", err)
		}
		if drawn(img) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the desktop's screenshot (%v) is one colour", img.Bounds())
		}
	}
	file := filepath.Join(t.TempDir(), "desk.png")
	s.ok("sandbox", "desktop", sb.SandboxID, "--screenshot", file)
	if data, err := os.ReadFile(file); err != nil || !bytes.HasPrefix(data, []byte("\x89PNG")) {
		t.Errorf("sbx sandbox desktop --screenshot: %v", err)
	}
	if out := s.ok("sandbox", "desktop", sb.SandboxID); !strings.Contains(out, "/api/v1/sandboxes/"+sb.SandboxID+"/desktop?sbx_token=") {
		t.Errorf("sbx sandbox desktop: %q", out)
	}
	s.fail("GET", "/api/v1/sandboxes/"+sb.ID+"/desktop?view_only=maybe", nil, http.StatusBadRequest, "view_only")
	s.failKey("", "GET", "/api/v1/sandboxes/"+sb.ID+"/desktop?sbx_token=wrong", nil, http.StatusUnauthorized, "does not open port 5900")

	if _, err := os.Stat("/usr/share/novnc/core/rfb.js"); err != nil {
		testenv.Missing(t, "novnc (apt-get install novnc), the desktop viewer's files")
	}
	ctx := browser(t)
	var painted bool
	var err error
	var status string
	// Under the whole suite's load the viewer has, about once in six runs,
	// stayed "connecting" (no RFB connect or disconnect) for minutes; the
	// cause is not found. A page that has not connected within a minute is
	// loaded again, at most three times, each try logged.
	for try := 1; try <= 3; try++ {
		err = chromedp.Run(ctx,
			chromedp.Navigate(s.url+"/api/v1/sandboxes/"+sb.ID+"/desktop?sbx_token="+sb.TrafficToken),
			chromedp.Poll(`document.body.dataset.connected === "true"`, nil, chromedp.WithPollingTimeout(time.Minute)),
			chromedp.Poll(`(() => {
				const c = document.querySelector("#screen canvas");
				if (!c || c.width < 100) return false;
				const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
				for (let i = 4; i < d.length; i += 4 * 61) if (d[i] !== d[0] || d[i + 1] !== d[1] || d[i + 2] !== d[2]) return true;
				return false;
			})()`, &painted, chromedp.WithPollingTimeout(time.Minute)))
		if err == nil && painted {
			break
		}
		chromedp.Run(ctx, chromedp.Text("#status", &status, chromedp.ByQuery))
		t.Logf("the desktop viewer, try %d: drawn %v, %v (its status: %q)", try, painted, err, status)
	}
	if err != nil || !painted {
		t.Errorf("the desktop viewer in Chromium: drawn %v, %v (its status: %q)", painted, err, status)
	}
	// serve's WebSocket bridge answers with the VNC server's banner.
	wsURL := strings.Replace(s.url, "http", "ws", 1) + "/api/v1/sandboxes/" + sb.ID + "/desktop/websockify?sbx_token=" + sb.TrafficToken
	ws, _, err := websocket.Dial(context.Background(), wsURL, &websocket.DialOptions{HTTPClient: s.http, Subprotocols: []string{"binary"}})
	if err != nil {
		t.Fatalf("the desktop's WebSocket: %v", err)
	}
	if _, banner, err := ws.Read(context.Background()); err != nil || !strings.HasPrefix(string(banner), "RFB 003.") {
		t.Errorf("the desktop's WebSocket first said %q, %v", banner, err)
	}
	ws.CloseNow()
}

// drawn reports whether img has more than one colour.
func drawn(img image.Image) bool {
	b := img.Bounds()
	r0, g0, b0, _ := img.At(b.Min.X, b.Min.Y).RGBA()
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			if r, g, bl, _ := img.At(x, y).RGBA(); r != r0 || g != g0 || bl != b0 {
				return true
			}
		}
	}
	return false
}
