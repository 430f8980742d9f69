package httpapi

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/agentcall"
	"github.com/sbxdev/sbx/lifecycle"
)

// A sandbox's desktop (a template that serves VNC on apiv1.DesktopPort, as
// the catalog's desktop does): GET …/desktop is a noVNC viewer (Debian's
// novnc, whose files sbx serves itself under viewerPrefix from
// Config.NoVNCDir, so the page loads nothing from elsewhere) that reaches
// the VNC server through …/desktop/websockify, a WebSocket serve bridges
// to the sandbox's port. Both take a preview's credentials (package preview
// decides: the traffic token as ?sbx_token=, an API key, a preview link's
// token), and wake a paused sandbox as a preview does. The viewer is view
// only unless ?view_only=false: serve then passes the viewer's keys and
// pointer on; otherwise it drops them (viewOnly), whatever the page does.

// viewerPrefix is where serve serves noVNC's files.
const viewerPrefix = "/desktop-viewer/"

// viewerAssets serves noVNC's files; 404 when serve has none.
func (s *Server) viewerAssets(w http.ResponseWriter, r *http.Request) {
	if s.cfg.NoVNCDir == "" {
		s.error(w, r, sbx.Errorf(sbx.ENotFound, "this server has no desktop viewer (serve --novnc-dir; Debian's novnc package)"))
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.StripPrefix(strings.TrimSuffix(viewerPrefix, "/"), http.FileServer(http.Dir(s.cfg.NoVNCDir))).ServeHTTP(w, r)
}

// desktopPage serves the viewer of sandbox {id}'s desktop.
func (s *Server) desktopPage(w http.ResponseWriter, r *http.Request) {
	a, viewOnly, err := s.openDesktop(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	a.Close()
	if s.cfg.NoVNCDir == "" {
		s.error(w, r, sbx.Errorf(sbx.EUnavailable, "this server has no desktop viewer (serve --novnc-dir; Debian's novnc package)"))
		return
	}
	q := url.Values{}
	if t := r.URL.Query().Get(apiv1.TrafficTokenParam); t != "" {
		q.Set(apiv1.TrafficTokenParam, t)
	}
	q.Set("view_only", fmt.Sprint(viewOnly))
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self' ws: wss:")
	viewerPage.Execute(w, map[string]any{"Sandbox": r.PathValue("id"), "Socket": "websockify?" + q.Encode(), "ViewOnly": viewOnly, "Assets": viewerPrefix})
}

// openDesktop reads a desktop request's ?view_only and opens the sandbox's
// desktop port with the request's preview credentials, as package preview
// decides (waking a paused sandbox as a preview does); the caller closes it.
func (s *Server) openDesktop(r *http.Request) (*lifecycle.AgentConn, bool, error) {
	viewOnly, err := viewOnlyOf(r)
	if err != nil {
		return nil, false, err
	}
	cred, _, err := s.previewCredentials(r, false)
	if err != nil {
		return nil, false, err
	}
	a, err := s.previews.Open(r.Context(), cred, r.PathValue("id"), apiv1.DesktopPort)
	return a, viewOnly, err
}

// viewOnlyOf reads ?view_only (default true).
func viewOnlyOf(r *http.Request) (bool, error) {
	switch v := r.URL.Query().Get("view_only"); v {
	case "", "true":
		return true, nil
	case "false":
		return false, nil
	default:
		return false, sbx.Invalid("view_only", "view_only is true or false, not %q", v)
	}
}

var viewerPage = template.Must(template.New("viewer").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Desktop of {{.Sandbox}}</title>
<style>html,body{margin:0;height:100%;background:#222;color:#ddd;font:13px sans-serif}#status{padding:4px 8px}#screen{height:calc(100% - 24px)}</style>
</head><body><div id="status">connecting to the desktop of {{.Sandbox}}{{if .ViewOnly}} (view only){{end}}…</div><div id="screen"></div>
<script type="module">
import RFB from "{{.Assets}}core/rfb.js";
const socket = new URL({{.Socket}}, location.href.replace(/\/?(\?.*)?$/, "/"));
socket.protocol = location.protocol === "https:" ? "wss:" : "ws:";
const rfb = new RFB(document.getElementById("screen"), socket.href, {shared: true});
rfb.viewOnly = {{.ViewOnly}};
rfb.scaleViewport = true;
const status = document.getElementById("status");
rfb.addEventListener("connect", () => { status.textContent = "desktop of {{.Sandbox}}{{if .ViewOnly}} (view only){{end}}"; document.body.dataset.connected = "true"; });
rfb.addEventListener("disconnect", e => { status.textContent = "disconnected" + (e.detail.clean ? "" : ": the connection failed"); });
</script></body></html>
`))

// desktopSocket bridges a WebSocket (binary messages, as noVNC speaks) to
// the sandbox's VNC port, dropping the viewer's input unless
// ?view_only=false.
func (s *Server) desktopSocket(w http.ResponseWriter, r *http.Request) {
	a, viewOnly, err := s.openDesktop(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	defer a.Close()
	addr, err := a.PortAddr(apiv1.DesktopPort)
	if err != nil {
		s.error(w, r, err)
		return
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	vnc, err := d.DialContext(a.Context, "tcp", agentcall.AddrOf(agentcall.Host(a.Sandbox, addr)))
	if err != nil {
		s.error(w, r, sbx.Errorf(sbx.EConflict, "sandbox %s serves no desktop: nothing answers on port %d (a desktop template's sandbox does)", a.Sandbox.ProviderSandboxID, apiv1.DesktopPort))
		return
	}
	defer vnc.Close()
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"binary"}})
	if err != nil {
		return // Accept answered
	}
	defer ws.CloseNow()
	ctx, cancel := context.WithCancel(a.Context)
	defer cancel()
	conn := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	go func() {
		defer cancel()
		io.Copy(conn, vnc)
	}()
	var toVNC io.Writer = vnc
	if viewOnly {
		toVNC = &viewOnlyFilter{w: vnc}
	}
	io.Copy(toVNC, conn)
}

// viewOnlyFilter passes a VNC viewer's messages (RFB 3.8, RFC 6143 §7.5)
// on to the server without its key, pointer and clipboard events: the
// handshake (version, security type, ClientInit) first, then each message
// whole, parsed by its type.
type viewOnlyFilter struct {
	w    io.Writer
	buf  []byte
	init int // handshake bytes still to pass: version (12), security type (1), ClientInit (1)
}

var errBadRFB = errors.New("the viewer sent a VNC message of an unknown type")

func (f *viewOnlyFilter) Write(p []byte) (int, error) {
	if f.init == 0 && f.buf == nil {
		f.init = 14
	}
	f.buf = append(f.buf, p...)
	for {
		if f.init > 0 {
			n := min(f.init, len(f.buf))
			if n == 0 {
				return len(p), nil
			}
			if _, err := f.w.Write(f.buf[:n]); err != nil {
				return 0, err
			}
			f.buf, f.init = f.buf[n:], f.init-n
			if f.init == 0 {
				f.init = -1 // the handshake is over
			}
			continue
		}
		size, pass, err := rfbMessage(f.buf)
		if err != nil {
			return 0, err
		}
		if size == 0 || len(f.buf) < size {
			return len(p), nil // more to come
		}
		if pass {
			if _, err := f.w.Write(f.buf[:size]); err != nil {
				return 0, err
			}
		}
		f.buf = f.buf[size:]
	}
}

// rfbMessage is the size of the client message that b begins (0: b is too
// short to say) and whether a view-only viewer may send it.
func rfbMessage(b []byte) (size int, pass bool, err error) {
	if len(b) == 0 {
		return 0, false, nil
	}
	switch b[0] {
	case 0: // SetPixelFormat
		return 20, true, nil
	case 2: // SetEncodings
		if len(b) < 4 {
			return 0, false, nil
		}
		return 4 + 4*int(binary.BigEndian.Uint16(b[2:4])), true, nil
	case 3: // FramebufferUpdateRequest
		return 10, true, nil
	case 4: // KeyEvent
		return 8, false, nil
	case 5: // PointerEvent
		return 6, false, nil
	case 6: // ClientCutText
		if len(b) < 8 {
			return 0, false, nil
		}
		return 8 + int(binary.BigEndian.Uint32(b[4:8])), false, nil
	}
	return 0, false, errBadRFB
}

// desktopScreenshot answers a PNG of the sandbox's desktop, taken in the
// sandbox (ImageMagick's import of the display): for agents that drive it.
func (s *Server) desktopScreenshot(w http.ResponseWriter, r *http.Request) {
	png, err := s.mgr.Screenshot(r.Context(), caller(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(png)
}
