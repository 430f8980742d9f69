package local

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/local/network"
	"github.com/sbxdev/sbx/template"
)

// The stand-in internet of this package's tests is 203.0.113.0/24: two
// web servers, at inet1 and inet2, in a namespace beyond the host; a
// private network is a second one at 10.237.0.1.
var (
	inet1 = netip.MustParseAddr("203.0.113.1")
	inet2 = netip.MustParseAddr("203.0.113.2")
)

// theInternet builds the stand-in internet and answers the URLs of its two
// servers.
func theInternet(t *testing.T) (url1, url2 string) {
	o := testenv.NewOutside(t, "sbxtinet", netip.MustParseAddr("203.0.113.254"), inet1, inet2)
	return o.ServeHello(t, inet1.String()+":80"), o.ServeHello(t, inet2.String()+":80")
}

// curl fetches url from inside a sandbox with curl, and says what came
// back: the answer, or "dropped" when the connection timed out.
func (p *Provider) curl(t *testing.T, id, url string) string {
	t.Helper()
	out, err := p.rs.Run(t.Context(), nil, "exec", id, "/usr/bin/curl", "-sS", "--max-time", "2", url)
	if err != nil && strings.Contains(err.Error(), "exit status 28") {
		return "dropped"
	}
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(out))
}

// reaches fails unless a sandbox gets url's answer; dropped unless its
// packets go nowhere.
func (p *Provider) reaches(t *testing.T, id, url string) {
	t.Helper()
	if got := p.curl(t, id, url); !strings.HasPrefix(got, "hello from ") {
		t.Errorf("%s: %s from sandbox %s; want an answer", url, got, id)
	}
}

func (p *Provider) dropped(t *testing.T, id, url string) {
	t.Helper()
	if got := p.curl(t, id, url); got != "dropped" {
		t.Errorf("%s: %q from sandbox %s; want it dropped", url, got, id)
	}
}

// createWith makes a sandbox with an egress policy.
func (p *Provider) createWith(t *testing.T, e sbx.Egress) (string, sbx.Handle) {
	t.Helper()
	spec := p.spec(128)
	spec.Egress = e
	in, err := p.Create(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return spec.ProviderSandboxID, in.Handle
}

// A sandbox that has the internet reaches it, but not a private network,
// not the host, not another sandbox.
func TestEgressPolicy(t *testing.T) {
	p := newProvider(t)
	internet, _ := theInternet(t)
	private := testenv.NewOutside(t, "sbxtpriv", netip.MustParseAddr("10.237.0.2"), netip.MustParseAddr("10.237.0.1")).
		ServeHello(t, "10.237.0.1:80")
	a, _ := p.create(t, 128)
	b, _ := p.create(t, 128)
	p.reaches(t, a, internet)
	p.dropped(t, a, private)
	hostLn, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hostLn.Close()
	_, port, _ := net.SplitHostPort(hostLn.Addr().String())
	att, _ := p.cfg.Network.Get(a)
	p.dropped(t, a, "http://"+net.JoinHostPort(att.Gateway.String(), port)+"/")
	p.dropped(t, a, "http://203.0.113.254:"+port+"/") // the host's address on the internet's side
	other, _ := p.cfg.Network.Get(b)
	p.dropped(t, a, "http://"+net.JoinHostPort(other.Addr.Addr().String(), "49983")+"/")
}

// hosts is a Resolver that knows a few names.
type hosts struct {
	mu    sync.Mutex
	names map[string][]netip.Addr
}

func (h *hosts) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a, ok := h.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// Each mode from inside real sandboxes: none reaches nothing; an allow-list
// of a prefix reaches only that, of a domain the address the host resolves
// it to; a deny-list blocks an address the mode allows.
func TestEgressModes(t *testing.T) {
	p := newNetworkProvider(t, EngineRunsc, testenv.NewInstance(t),
		network.Config{Resolver: &hosts{names: map[string][]netip.Addr{"second.test": {inet2}}}})
	url1, url2 := theInternet(t)

	none, _ := p.createWith(t, sbx.Egress{Mode: sbx.EgressNone})
	p.dropped(t, none, url1)
	p.dropped(t, none, url2)

	prefix, _ := p.createWith(t, sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"203.0.113.1/32"}})
	p.reaches(t, prefix, url1)
	p.dropped(t, prefix, url2)

	domain, _ := p.createWith(t, sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"second.test"}})
	p.reaches(t, domain, url2)
	p.dropped(t, domain, url1)

	denied, _ := p.createWith(t, sbx.Egress{Mode: sbx.EgressInternet, Deny: []string{"203.0.113.1/32"}})
	p.dropped(t, denied, url1)
	p.reaches(t, denied, url2)
	deniedName, _ := p.createWith(t, sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"203.0.113.0/24"}, Deny: []string{"second.test"}})
	p.reaches(t, deniedName, url1)
	p.dropped(t, deniedName, url2)
}

// A change of a running sandbox's policy takes effect at once, without a
// restart; a paused and a hibernated sandbox take one too, and wake with
// it.
func TestEgressChanges(t *testing.T) {
	p := newProvider(t)
	url1, url2 := theInternet(t)
	ctx := t.Context()
	id, h := p.createWith(t, sbx.Egress{})
	p.reaches(t, id, url1)

	set := func(e sbx.Egress) {
		t.Helper()
		if err := p.SetEgress(ctx, h, e); err != nil {
			t.Fatal(err)
		}
	}
	set(sbx.Egress{Mode: sbx.EgressNone})
	p.dropped(t, id, url1)
	set(sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"203.0.113.2/32"}})
	p.dropped(t, id, url1)
	p.reaches(t, id, url2)

	if err := p.Pause(ctx, h); err != nil {
		t.Fatal(err)
	}
	set(sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"203.0.113.1/32"}})
	if _, err := p.Resume(ctx, h); err != nil {
		t.Fatal(err)
	}
	p.reaches(t, id, url1)
	p.dropped(t, id, url2)

	if err := p.Hibernate(ctx, h); err != nil {
		t.Fatal(err)
	}
	set(sbx.Egress{Mode: sbx.EgressInternet, Deny: []string{"203.0.113.1/32"}})
	if _, err := p.Resume(ctx, h); err != nil {
		t.Fatal(err)
	}
	p.dropped(t, id, url1)
	p.reaches(t, id, url2)
}

// A template's default policy and ports are what TemplateDefaults
// answers; a template without them answers none, a template not built a
// 404.
func TestTemplateDefaults(t *testing.T) {
	store := template.Store{Dir: t.TempDir()}
	if err := os.Symlink(filepath.Join(templates.Dir, "base"), filepath.Join(store.Dir, "base")); err != nil {
		t.Fatal(err)
	}
	want := sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"pypi.org"}}
	if _, err := store.DeriveWith("locked", "base", template.DeriveOptions{Egress: &want, Ports: []int{8888}}); err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{DataDir: t.TempDir(), Runsc: os.Getenv("SBX_RUNSC"), Templates: store})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.TemplateDefaults(t.Context(), "locked", ""); err != nil || got.Egress == nil || !got.Egress.Equal(want) || !slices.Equal(got.Ports, []int{8888}) {
		t.Errorf("locked: %+v %v; want %+v and port 8888", got, err, want)
	}
	if got, err := p.TemplateDefaults(t.Context(), "base", ""); err != nil || got.Egress != nil || got.Ports != nil {
		t.Errorf("base: %+v %v; want none", got, err)
	}
	if _, err := p.TemplateDefaults(t.Context(), "nope", ""); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Errorf("a template not built: %v", err)
	}
}
