package e2e

import (
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testenv"
)

// The stand-in internet of the end-to-end tests is 198.18.0.0/24: web
// servers at .1 and .2 and a nameserver at .53 (second.test is .2), in a
// namespace beyond the host, whose end is .254.
var (
	e2eInet1 = netip.MustParseAddr("198.18.0.1")
	e2eInet2 = netip.MustParseAddr("198.18.0.2")
	e2eDNS   = netip.MustParseAddr("198.18.0.53")
	e2eHost  = netip.MustParseAddr("198.18.0.254")
)

// curlIn fetches url with curl from inside a sandbox (runsc exec, as root)
// and says what came back: the answer, or "dropped" when the connection
// timed out.
func (s *server) curlIn(sb apiv1.Sandbox, url string) string {
	s.t.Helper()
	out, err := s.runsc("exec", sb.SandboxID, "/usr/bin/curl", "-sS", "--max-time", "2", url)
	if err != nil && strings.Contains(err.Error(), "exit status 28") {
		return "dropped"
	}
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(out)
}

func (s *server) reaches(sb apiv1.Sandbox, url, what string) {
	s.t.Helper()
	if got := s.curlIn(sb, url); !strings.HasPrefix(got, "hello from ") {
		s.t.Errorf("%s: %s from sandbox %s (egress %s); want an answer", what, got, sb.SandboxID, egressLine(sb.Egress))
	}
}

func (s *server) dropped(sb apiv1.Sandbox, url, what string) {
	s.t.Helper()
	if got := s.curlIn(sb, url); got != "dropped" {
		s.t.Errorf("%s: %q from sandbox %s (egress %s); want it dropped", what, got, sb.SandboxID, egressLine(sb.Egress))
	}
}

func egressLine(e *apiv1.Egress) string {
	if e == nil {
		return "none recorded"
	}
	data, _ := json.Marshal(e)
	return string(data)
}

// Egress policies end to end, from inside real gVisor sandboxes that a
// real serve made through the API: the internet reaches the stand-in
// internet but not the host or another sandbox; none reaches nothing; an
// allow-list of a prefix reaches only that; of a domain, the address the
// host resolves it to (the sandbox resolving it too, through the same
// nameserver); a deny-list blocks what the mode allows; a change takes
// effect at once on a running sandbox and holds across hibernate, resume
// and a restart of serve.
func TestEgressInRealSandboxes(t *testing.T) {
	o := testenv.NewOutside(t, "sbxe2einet", e2eHost, e2eInet1, e2eInet2, e2eDNS)
	url1, url2 := o.ServeHello(t, e2eInet1.String()+":80"), o.ServeHello(t, e2eInet2.String()+":80")
	o.ServeDNS(t, e2eDNS.String()+":53", map[string][]netip.Addr{"second.test": {e2eInet2}})
	byName := "http://second.test/"
	s := localServer(t, false, "--nameservers", e2eDNS.String())
	useNameserver := func(sb apiv1.Sandbox) {
		t.Helper()
		if out, err := s.runsc("exec", sb.SandboxID, "/bin/sh", "-c", "echo nameserver "+e2eDNS.String()+" > /etc/resolv.conf"); err != nil {
			t.Fatalf("resolv.conf in %s: %v %s", sb.SandboxID, err, out)
		}
	}
	create := func(egress any) apiv1.Sandbox {
		t.Helper()
		body := map[string]any{"waitReady": true, "memoryMB": 128, "diskMB": 256}
		if egress != nil {
			body["egress"] = egress
		}
		return s.create(body)
	}

	// The internet, by default.
	open, other := create(nil), create(nil)
	if open.Egress == nil || open.Egress.Mode != "internet" {
		t.Fatalf("the default policy: %+v", open.Egress)
	}
	s.reaches(open, url1, "the internet")
	useNameserver(open)
	s.reaches(open, byName, "the internet by name")
	host, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	go http.Serve(host, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello from the host\n")) }))
	_, port, _ := net.SplitHostPort(host.Addr().String())
	s.dropped(open, "http://"+net.JoinHostPort(e2eHost.String(), port)+"/", "the host")
	var att struct{ Addr, Gateway string }
	data, err := os.ReadFile(filepath.Join(s.dataDir, "network", other.SandboxID+".json"))
	if err == nil {
		err = json.Unmarshal(data, &att)
	}
	if err != nil {
		t.Fatalf("the other sandbox's network record: %v", err)
	}
	s.dropped(open, "http://"+net.JoinHostPort(att.Gateway, port)+"/", "the host, through the other sandbox's gateway")
	otherAddr := strings.Split(att.Addr, "/")[0]
	s.dropped(open, "http://"+net.JoinHostPort(otherAddr, "49983")+"/health", "another sandbox's agent")

	// None.
	none := create(map[string]any{"mode": "none"})
	s.dropped(none, url1, "the internet, with none")
	useNameserver(none)
	if out, err := s.runsc("exec", none.SandboxID, "/usr/bin/timeout", "3", "getent", "hosts", "second.test"); err == nil {
		t.Errorf("none resolved a name: %s", out)
	}

	// An allow-list of a prefix, of a domain.
	prefix := create(map[string]any{"mode": "allow", "allow": []string{e2eInet1.String()}})
	s.reaches(prefix, url1, "the allowed address")
	s.dropped(prefix, url2, "an address not allowed")
	domain := create(map[string]any{"mode": "allow", "allow": []string{"second.test"}})
	useNameserver(domain)
	if got := s.curlIn(domain, byName); got != "hello from "+e2eInet2.String()+":80" {
		t.Errorf("the allowed domain: %q", got)
	}
	s.dropped(domain, url1, "an address the allowed domain does not resolve to")

	// A deny-list.
	denied := create(map[string]any{"mode": "internet", "deny": []string{e2eInet1.String()}})
	s.dropped(denied, url1, "a denied address")
	s.reaches(denied, url2, "the internet less a denied address")
	deniedName := create(map[string]any{"mode": "allow", "allow": []string{"198.18.0.0/24"}, "deny": []string{"second.test"}})
	s.reaches(deniedName, url1, "an allowed prefix")
	s.dropped(deniedName, url2, "a denied domain's address within an allowed prefix")

	// A live change, kept across hibernate, resume and a restart.
	var got apiv1.Sandbox
	s.call("PUT", "/api/v1/sandboxes/"+open.ID+"/egress", apiv1.Egress{Mode: "none"}, http.StatusOK, &got)
	s.dropped(got, url1, "the internet after a change to none")
	s.call("PUT", "/api/v1/sandboxes/"+open.ID+"/egress", apiv1.Egress{Mode: "allow", Allow: []string{"second.test"}}, http.StatusOK, &got)
	s.reaches(got, byName, "the domain allowed by a change")
	s.dropped(got, url1, "an address the change no longer allows")
	s.call("POST", "/api/v1/sandboxes/"+open.ID+"/pause", map[string]any{"hibernate": true}, http.StatusOK, &got)
	s.call("POST", "/api/v1/sandboxes/"+open.ID+"/resume", map[string]any{}, http.StatusOK, &got)
	if got.Egress == nil || got.Egress.Mode != "allow" {
		t.Errorf("after hibernate and resume the policy is %+v", got.Egress)
	}
	s.reaches(got, byName, "the allowed domain after hibernate and resume")
	s.dropped(got, url1, "an address not allowed, after hibernate and resume")
	s.stop(syscall.SIGTERM)
	s.restart(s.opts)
	got = s.get(open.ID)
	if got.State != "running" || got.Egress == nil || got.Egress.Mode != "allow" || got.Egress.Allow[0] != "second.test" {
		t.Fatalf("after a restart: %s %+v", got.State, got.Egress)
	}
	s.reaches(got, byName, "the allowed domain after a restart")
	s.dropped(got, url1, "an address not allowed, after a restart")
}
