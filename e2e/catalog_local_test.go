package e2e

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testtemplates"
)

// Every template of the curated catalog builds from Debian's packages on
// this host (once per host and recipe: testtemplates.Catalog keeps it) and
// a gVisor sandbox of it passes a smoke check: its Python modules import,
// Node runs, PyTorch adds, and the desktop serves VNC on 5900 and draws a
// screen that is not blank.
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
// banner, and a screenshot of its display is a PNG of more than one colour.
func checkDesktop(t *testing.T, s *server, sb apiv1.Sandbox) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for s.shStatus(sb, "exec bash -c ': </dev/tcp/127.0.0.1/5900' 2>/dev/null && echo up") != "up" {
		if time.Now().After(deadline) {
			t.Fatalf("the desktop's VNC port did not open; its processes:\n%s", s.sh(sb, "ps -eo args"))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if banner := s.sh(sb, "exec 3<>/dev/tcp/127.0.0.1/5900; head -c 12 <&3"); !strings.HasPrefix(banner, "RFB 003.") {
		t.Errorf("the VNC server's banner: %q", banner)
	}
	time.Sleep(2 * time.Second) // the terminal's first frame
	shot := s.sh(sb, "DISPLAY=:1 import -window root png:- | base64 -w0")
	data, err := base64.StdEncoding.DecodeString(shot)
	if err != nil {
		t.Fatalf("the screenshot: %v (%.200q)", err, shot)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	b := img.Bounds()
	first := img.At(b.Min.X, b.Min.Y)
	r0, g0, b0, _ := first.RGBA()
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			if r, g, bl, _ := img.At(x, y).RGBA(); r != r0 || g != g0 || bl != b0 {
				return // drawn
			}
		}
	}
	t.Errorf("the desktop's screenshot (%dx%d) is one colour", b.Dx(), b.Dy())
}
