package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/internal/echoserver"
	"github.com/sbxdev/sbx/internal/testenv"
)

// previews reaches a local serve's preview hosts: every connection goes to
// serve, whatever host a URL names, as wildcard DNS would send it.
type previews struct {
	t    *testing.T
	s    *server
	http *http.Client
}

func newPreviews(t *testing.T, s *server) *previews {
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, s.addr)
	}}
	return &previews{t: t, s: s, http: &http.Client{Transport: tr, Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// host is the preview host of port of sb.
func (p *previews) host(sb apiv1.Sandbox, port int) string {
	return fmt.Sprintf("%d-%s.sbx.localhost", port, sb.SandboxID)
}

// get sends GET url with headers and answers the status, the body and the response.
func (p *previews) get(rawURL string, headers map[string]string) (int, string, *http.Response) {
	p.t.Helper()
	req, err := http.NewRequest("GET", rawURL, nil)
	if err != nil {
		p.t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		p.t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp
}

// echo GETs /echo on port of sb with headers, which must answer 200, and
// answers what the app saw.
func (p *previews) echo(sb apiv1.Sandbox, port int, headers map[string]string) echoserver.Request {
	p.t.Helper()
	status, body, _ := p.get("http://"+p.host(sb, port)+"/echo", headers)
	if status != http.StatusOK {
		p.t.Fatalf("GET /echo on port %d: %d %s", port, status, body)
	}
	var out echoserver.Request
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		p.t.Fatalf("%v: %s", err, body)
	}
	return out
}

// refused checks that GET rawURL with headers answers status with a
// detail holding detail.
func (p *previews) refused(rawURL string, headers map[string]string, status int, detail string) *http.Response {
	p.t.Helper()
	got, body, resp := p.get(rawURL, headers)
	var e apiv1.Error
	json.Unmarshal([]byte(body), &e)
	if got != status || !strings.Contains(e.Detail, detail) {
		p.t.Errorf("GET %s: %d %s, want %d with %q", rawURL, got, body, status, detail)
	}
	return resp
}

// startEcho starts the echo server on ports in sb and waits until the
// first answers.
func startEcho(t *testing.T, s *server, sb apiv1.Sandbox, ports ...int) {
	t.Helper()
	ctx := context.Background()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	h, err := c.Connect(ctx, sb.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"/.sbx/sbx", "agent", "echo"}
	for _, p := range ports {
		args = append(args, fmt.Sprint(p))
	}
	if _, err := h.Commands.StartArgs(ctx, args, &client.CommandOptions{Tag: "echo", DiscardOutput: true}); err != nil {
		t.Fatal(err)
	}
	res, err := h.Commands.Run(ctx, fmt.Sprintf("for i in $(seq 100); do curl -sf localhost:%d/ && exit 0; sleep 0.1; done; exit 1", ports[0]), nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("the echo server never answered: %+v %v", res, err)
	}
}

// Preview URLs end to end, on real gVisor sandboxes: any port, by host
// and by path, HTTP and WebSocket; private previews open with the traffic
// token (header, or query exchanged for a cookie), an API key that reaches
// the sandbox, or a link (revoked and expired ones refused); public ones
// and the Host the app sees; reserved ports, closed ports, ended sandboxes;
// traffic wakes a hibernated sandbox once however many requests come, and
// leaves it paused, with a 409 and Retry-After, when its preview says so.
func TestPreviewsLocal(t *testing.T) {
	s := localServer(t, false)
	p := newPreviews(t, s)
	sb := s.create(map[string]any{"waitReady": true, "memoryMB": 256, "ports": []int{8080, 3000}})
	if len(sb.Ports) != 2 || sb.Ports[0].Port != 8080 || sb.Ports[0].URL != strings.Replace(sb.PreviewURL, "{port}", "8080", 1) {
		t.Errorf("the ports it serves: %+v", sb.Ports)
	}
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "ports": []int{22}}, http.StatusBadRequest, "SSH's 22")
	if sb.TrafficToken == "" || sb.Preview.Access != "private" || sb.Preview.Host != "preview" || sb.Preview.Wake == nil || !*sb.Preview.Wake {
		t.Fatalf("a new sandbox's preview: %+v %q", sb.Preview, sb.TrafficToken)
	}
	if want := "http://{port}-" + sb.SandboxID + ".sbx.localhost:"; !strings.HasPrefix(sb.PreviewURL, want) {
		t.Errorf("previewURL %q, want %s…", sb.PreviewURL, want)
	}
	startEcho(t, s, sb, 8080, 3000)
	token := map[string]string{apiv1.TrafficTokenHeader: sb.TrafficToken}
	other := s.otherOrgKey(t)
	base := "http://" + p.host(sb, 8080)

	// Private: nothing, a wrong token, another org's key are refused.
	p.refused(base+"/echo", nil, http.StatusUnauthorized, "is private")
	p.refused(base+"/echo", map[string]string{apiv1.TrafficTokenHeader: "sbt_wrong"}, http.StatusUnauthorized, "does not open port 8080")
	p.refused(base+"/echo", map[string]string{apiv1.TrafficTokenHeader: sb.AccessToken}, http.StatusUnauthorized, "does not open")
	p.refused(base+"/echo", map[string]string{"X-API-Key": other}, http.StatusNotFound, "not found")

	// The traffic token in a header; the app sees the preview host and none
	// of sbx's credentials, but its own Authorization and cookies.
	got := p.echo(sb, 8080, map[string]string{apiv1.TrafficTokenHeader: sb.TrafficToken, "Authorization": "Bearer app", "Cookie": "app=1"})
	if got.Port != 8080 || got.Host != p.host(sb, 8080) || got.Path != "/echo" {
		t.Errorf("the app saw %+v", got)
	}
	if got.Headers[apiv1.TrafficTokenHeader] != nil || got.Headers["Authorization"][0] != "Bearer app" || strings.Join(got.Cookies, ",") != "app" {
		t.Errorf("the app's headers %v, cookies %v", got.Headers, got.Cookies)
	}
	if got := p.echo(sb, 3000, token); got.Port != 3000 {
		t.Errorf("port 3000 reached %d", got.Port)
	}
	// An API key of the sandbox's org.
	if got := p.echo(sb, 8080, map[string]string{"X-API-Key": s.key}); got.Headers["X-Api-Key"] != nil {
		t.Errorf("the app saw the API key: %v", got.Headers)
	}

	// The real curl, as a user's script would call it.
	if _, err := exec.LookPath("curl"); err != nil {
		testenv.Missing(t, "curl")
	}
	out, err := exec.Command("curl", "-sS", "--fail-with-body", "--connect-to", "::"+s.addr, "-H", apiv1.TrafficTokenHeader+": "+sb.TrafficToken,
		base+"/echo?from=curl").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"query":"from=curl"`) {
		t.Errorf("curl: %v %s", err, out)
	}

	// The token in the URL: a cookie for this host, and a redirect without it.
	_, _, resp := p.get(base+"/echo?a=1&"+apiv1.TrafficTokenParam+"="+url.QueryEscape(sb.TrafficToken), nil)
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/echo?a=1" || len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].Path != "/" {
		t.Fatalf("the token in the URL: %d %q %+v", resp.StatusCode, resp.Header.Get("Location"), cookies)
	}
	withCookie := cookies[0].Name + "=" + cookies[0].Value + "; app=2"
	got = p.echo(sb, 8080, map[string]string{"Cookie": withCookie})
	if strings.Join(got.Cookies, ",") != "app" {
		t.Errorf("the app saw cookies %v", got.Cookies)
	}
	// The cookie opens the preview for the preview's own pages and for
	// navigations, not for another site's page (every preview host is the
	// same site: another tenant's page could send it).
	p.echo(sb, 8080, map[string]string{"Cookie": withCookie, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"})
	p.echo(sb, 8080, map[string]string{"Cookie": withCookie, "Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate"})
	p.refused(base+"/echo", map[string]string{"Cookie": withCookie, "Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors"}, http.StatusForbidden, "another site")
	if _, _, resp := p.get(base+"//evil.example/x?"+apiv1.TrafficTokenParam+"="+url.QueryEscape(sb.TrafficToken), nil); resp.Header.Get("Location") != "/evil.example/x" {
		t.Errorf("the redirect after the token in the URL goes to %q", resp.Header.Get("Location"))
	}
	// sbx's API key in Authorization opens it too, and is not passed on.
	if got := p.echo(sb, 8080, map[string]string{"Authorization": "Bearer " + s.key}); got.Headers["Authorization"] != nil {
		t.Errorf("the app saw the API key: %v", got.Headers["Authorization"])
	}

	// By path, for clients without wildcard hosts: in an opaque origin, and
	// never opened by a cookie (any page on the API's host could send it).
	status, body, resp := p.get(s.url+"/api/v1/sandboxes/"+sb.ID+"/ports/8080/echo?x=1", token)
	if status != http.StatusOK || !strings.Contains(body, `"path":"/echo","query":"x=1"`) || !strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("by path: %d %s %v", status, body, resp.Header)
	}
	p.refused(s.url+"/api/v1/sandboxes/"+sb.ID+"/ports/8080/echo", map[string]string{"Cookie": apiv1.TrafficTokenParam + "=" + sb.TrafficToken}, http.StatusUnauthorized, "is private")
	status, body, _ = p.get(s.url+"/api/v1/sandboxes/"+sb.ID+"/ports/8080/echo", map[string]string{apiv1.TrafficTokenHeader: sb.TrafficToken, "Cookie": "other_tenants=1"})
	if status != http.StatusOK || !strings.Contains(body, `"cookies":[]`) {
		t.Errorf("by path, the app saw cookies of the API's host: %d %s", status, body)
	}
	if _, _, resp := p.get(s.url+"/api/v1/sandboxes/"+sb.ID+"/ports/8080/cookie", token); resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("by path, the app set a cookie on the API's host: %q", resp.Header.Get("Set-Cookie"))
	}
	if _, _, resp := p.get(base+"/cookie", token); resp.Header.Get("Set-Cookie") == "" {
		t.Error("on its own host the app cannot set its cookie")
	}

	// Ports never reached, a port nothing listens on, a host that is none.
	p.refused(s.url+"/api/v1/sandboxes/"+sb.ID+"/ports/49983/commands", token, http.StatusForbidden, "never reached through a preview")
	p.refused("http://"+p.host(sb, 22)+"/", token, http.StatusForbidden, "never reached through a preview")
	p.refused("http://"+p.host(sb, 8099)+"/", token, http.StatusBadGateway, "no process listens on port 8099")
	if status, body, _ := p.get("http://elsewhere.test/healthz", nil); status != http.StatusOK {
		t.Errorf("a host that is no preview's does not reach the API: %d %s", status, body)
	}

	// WebSocket, both ways.
	wsEcho := func(headers map[string]string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		h := http.Header{}
		for k, v := range headers {
			h.Set(k, v)
		}
		c, _, err := websocket.Dial(ctx, "ws://"+p.host(sb, 8080)+"/ws", &websocket.DialOptions{HTTPClient: p.http, HTTPHeader: h})
		if err != nil {
			t.Fatalf("WebSocket: %v", err)
		}
		defer c.CloseNow()
		c.SetReadLimit(4 << 20)
		for _, msg := range []string{"one", strings.Repeat("x", 1<<20)} {
			if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			if _, back, err := c.Read(ctx); err != nil || string(back) != msg {
				t.Fatalf("WebSocket echo: %d bytes, %v", len(back), err)
			}
		}
	}
	wsEcho(token)

	// Links: one port, until revoked or expired.
	var link apiv1.PreviewLink
	s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/previews", map[string]any{"port": 8080, "expires": 600}, http.StatusCreated, &link)
	u, err := url.Parse(link.URL)
	if err != nil || u.Host != p.host(sb, 8080)+":"+portOf(s.url) || link.Port != 8080 {
		t.Fatalf("link %+v", link)
	}
	linkToken := u.Query().Get(apiv1.TrafficTokenParam)
	withLink := map[string]string{apiv1.TrafficTokenHeader: linkToken}
	p.echo(sb, 8080, withLink)
	p.refused("http://"+p.host(sb, 3000)+"/echo", withLink, http.StatusUnauthorized, "does not open port 3000")
	var links apiv1.PreviewLinkList
	s.call("GET", "/api/v1/sandboxes/"+sb.ID+"/previews", nil, http.StatusOK, &links)
	if len(links.Items) != 1 || links.Items[0].ID != link.ID || links.Items[0].URL != "" {
		t.Errorf("links: %+v", links)
	}
	s.call("DELETE", "/api/v1/sandboxes/"+sb.ID+"/previews/"+link.ID, nil, http.StatusOK, &link)
	if link.RevokedAt == nil {
		t.Errorf("revoked: %+v", link)
	}
	p.refused(base+"/echo", withLink, http.StatusUnauthorized, "expired or was revoked")
	s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/previews", map[string]any{"port": 8080, "expires": 1}, http.StatusCreated, &link)
	time.Sleep(1100 * time.Millisecond)
	short, _ := url.Parse(link.URL)
	p.refused(base+"/echo", map[string]string{apiv1.TrafficTokenHeader: short.Query().Get(apiv1.TrafficTokenParam)}, http.StatusUnauthorized, "expired or was revoked")
	s.fail("POST", "/api/v1/sandboxes/"+sb.ID+"/previews", map[string]any{"port": 22}, http.StatusBadRequest, "never reached through a preview")
	s.fail("POST", "/api/v1/sandboxes/"+sb.ID+"/previews", map[string]any{"port": 8080, "expires": 700000}, http.StatusBadRequest, "expires")
	s.failKey(other, "POST", "/api/v1/sandboxes/"+sb.ID+"/previews", map[string]any{"port": 8080}, http.StatusNotFound, "not found")

	// Traffic wakes a hibernated sandbox: HTTP, then a WebSocket upgrade;
	// many first requests together wake it once.
	hibernate := func() {
		t.Helper()
		var p apiv1.Sandbox
		s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/pause", map[string]any{"hibernate": true}, http.StatusOK, &p)
		if !p.Hibernated {
			t.Fatalf("not hibernated: %+v", p)
		}
	}
	hibernate()
	p.echo(sb, 8080, token)
	if got := s.get(sb.ID); got.State != "running" || wakes(got) != 1 {
		t.Fatalf("after a request to its preview: %s, %d wakes: %+v", got.State, wakes(got), got.Timeline)
	}
	hibernate()
	wsEcho(token)
	hibernate()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { p.echo(sb, 8080, token) })
	}
	wg.Wait()
	if got := s.get(sb.ID); got.State != "running" || wakes(got) != 3 {
		t.Errorf("8 requests together woke it %d times (3 in all, want): %+v", wakes(got)-2, got.Timeline)
	}

	// Public, with the Host masked; and a preview that does not wake.
	pub := s.create(map[string]any{"waitReady": true, "memoryMB": 256, "preview": map[string]any{"access": "public", "host": "localhost", "wake": false}})
	if pub.Preview.Access != "public" || pub.Preview.Host != "localhost" || *pub.Preview.Wake {
		t.Fatalf("preview %+v", pub.Preview)
	}
	startEcho(t, s, pub, 8080)
	if got := p.echo(pub, 8080, nil); got.Host != "localhost:8080" {
		t.Errorf("the masked host: %q", got.Host)
	}
	s.call("POST", "/api/v1/sandboxes/"+pub.ID+"/pause", map[string]any{}, http.StatusOK, nil)
	resp = p.refused("http://"+p.host(pub, 8080)+"/echo", nil, http.StatusConflict, "is paused")
	if resp.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After on a paused sandbox that previews do not wake")
	}
	if got := s.get(pub.ID); got.State != "paused" {
		t.Errorf("a preview without wake woke it: %s", got.State)
	}
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "preview": map[string]any{"access": "everyone"}}, http.StatusBadRequest, `access "everyone" must be private or public`)

	// An ended sandbox's previews are gone.
	s.call("DELETE", "/api/v1/sandboxes/"+pub.ID, nil, http.StatusOK, nil)
	p.refused("http://"+p.host(pub, 8080)+"/echo", nil, http.StatusNotFound, "has ended")
}

// wakes counts the wakes by preview traffic in sb's timeline.
func wakes(sb apiv1.Sandbox) int {
	n := 0
	for _, e := range sb.Timeline {
		if strings.Contains(e.Detail, "woken by preview traffic to port 8080") {
			n++
		}
	}
	return n
}

// portOf is the port of a URL.
func portOf(raw string) string {
	u, _ := url.Parse(raw)
	return u.Port()
}
