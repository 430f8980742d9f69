package network

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

func TestSandboxReachesTheInternetOnly(t *testing.T) {
	cfg := testConfig(t, "10.231.1.0/24")
	m := newManager(t, cfg)
	newWorld(t, cfg.Pool)
	a := attach(t, m, "egress-a", Policy{})
	b := attach(t, m, "egress-b", Policy{})
	bPort := listen(t, b.Netns, "0.0.0.0:0")
	hostPort := listen(t, "", "0.0.0.0:0")

	if seen := reach(t, a.Netns, worldPublic, 80); seen != worldHost.String() {
		t.Errorf("the internet sees the sandbox as %s; want %s (masquerade)", seen, worldHost)
	}
	reach(t, a.Netns, worldPrivate, 53) // the nameserver, though private

	// Each listener is reachable from the host, but not from the sandbox.
	reach(t, "", worldPrivate, 80)
	dropped(t, a.Netns, worldPrivate, 80)
	reach(t, "", b.Addr.Addr(), bPort)
	dropped(t, a.Netns, b.Addr.Addr(), bPort)
	reach(t, "", a.Gateway, hostPort)
	dropped(t, a.Netns, a.Gateway, hostPort)
	dropped(t, a.Netns, worldHost, hostPort)
}

func TestOnlyTheHostConnectsIntoASandbox(t *testing.T) {
	cfg := testConfig(t, "10.231.2.0/24")
	m := newManager(t, cfg)
	world := newWorld(t, cfg.Pool)
	a := attach(t, m, "inbound", Policy{})
	port := listen(t, a.Netns, "0.0.0.0:0")

	if seen := reach(t, "", a.Addr.Addr(), port); seen != a.Gateway.String() {
		t.Errorf("the sandbox sees the host as %s; want %s", seen, a.Gateway)
	}
	dropped(t, world, a.Addr.Addr(), port)
}

// None reaches nothing, not even the nameserver; an allow-list reaches what
// it names (and the nameserver only when it names a domain), never a
// private range or another sandbox, whatever it names; a deny-list wins.
func TestPolicies(t *testing.T) {
	cfg := testConfig(t, "10.231.3.0/24")
	m := newManager(t, cfg)
	newWorld(t, cfg.Pool)
	none := attach(t, m, "none", Policy{DenyAll: true})
	allowed := attach(t, m, "allow", Policy{DenyAll: true, Allow: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}})
	private := attach(t, m, "allow-private", Policy{DenyAll: true, Allow: []netip.Prefix{
		netip.MustParsePrefix("10.233.0.0/16"), netip.MustParsePrefix("10.233.0.1/32"), // overlapping
		none.Addr.Masked(), // another sandbox
	}})
	denied := attach(t, m, "deny", Policy{Deny: []netip.Prefix{netip.PrefixFrom(worldPublic, 32)}})
	allowDenied := attach(t, m, "allow-deny", Policy{DenyAll: true, Allow: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")},
		Deny: []netip.Prefix{netip.PrefixFrom(worldPublic2, 32)}})
	nonePort := listen(t, none.Netns, "0.0.0.0:0")

	dropped(t, none.Netns, worldPublic, 80)
	dropped(t, none.Netns, worldPrivate, 53) // not even the nameserver
	reach(t, allowed.Netns, worldPublic, 80)
	reach(t, allowed.Netns, worldPublic2, 80)
	dropped(t, allowed.Netns, worldPrivate, 53) // names no domain: no DNS
	dropped(t, private.Netns, worldPrivate, 80)
	dropped(t, private.Netns, none.Addr.Addr(), nonePort)
	dropped(t, denied.Netns, worldPublic, 80)
	reach(t, denied.Netns, worldPublic2, 80)
	reach(t, denied.Netns, worldPrivate, 53) // the internet's DNS
	reach(t, allowDenied.Netns, worldPublic, 80)
	dropped(t, allowDenied.Netns, worldPublic2, 80)
}

// A change of policy takes effect at once, on the connections already
// open too; one the new policy allows again reaches again.
func TestSetPolicyTakesEffectAtOnce(t *testing.T) {
	cfg := testConfig(t, "10.231.12.0/24")
	m := newManager(t, cfg)
	newWorld(t, cfg.Pool)
	a := attach(t, m, "change", Policy{})
	conn, err := connect(a.Netns, worldPublic, 7, reachTimeout)
	check(t, err)
	defer conn.Close()
	echoes := func() error {
		check(t, conn.SetDeadline(time.Now().Add(dialTimeout)))
		buf := []byte("ping")
		if _, err := conn.Write(buf); err != nil {
			return err
		}
		_, err := io.ReadFull(conn, buf)
		return err
	}
	check(t, echoes())

	check(t, m.SetPolicy(t.Context(), a.ID, Policy{DenyAll: true}))
	dropped(t, a.Netns, worldPublic, 80)
	dropped(t, a.Netns, worldPrivate, 53)
	if err := echoes(); err == nil {
		t.Error("a connection opened before the change to none still echoes")
	}
	check(t, m.SetPolicy(t.Context(), a.ID, Policy{DenyAll: true, Allow: []netip.Prefix{netip.PrefixFrom(worldPublic2, 32)}}))
	dropped(t, a.Netns, worldPublic, 80)
	reach(t, a.Netns, worldPublic2, 80)
	check(t, m.SetPolicy(t.Context(), a.ID, Policy{Deny: []netip.Prefix{netip.PrefixFrom(worldPublic2, 32)}}))
	reach(t, a.Netns, worldPublic, 80)
	dropped(t, a.Netns, worldPublic2, 80)
	if got, _ := m.Get(a.ID); !reflect.DeepEqual(got.Policy, Policy{Deny: []netip.Prefix{netip.PrefixFrom(worldPublic2, 32)}}) {
		t.Errorf("Get's policy = %+v", got.Policy)
	}
	restarted, err := New(cfg)
	check(t, err)
	if got, _ := restarted.Get(a.ID); !reflect.DeepEqual(got.Policy, Policy{Deny: []netip.Prefix{netip.PrefixFrom(worldPublic2, 32)}}) {
		t.Errorf("after a restart, the policy is %+v", got.Policy)
	}
	dropped(t, a.Netns, worldPublic2, 80)

	if err := m.SetPolicy(t.Context(), sandboxID("never-attached"), Policy{}); err == nil || !strings.Contains(err.Error(), "not attached") {
		t.Errorf("SetPolicy of a sandbox never attached: %v", err)
	}
	if err := m.SetPolicy(t.Context(), a.ID, Policy{DenyAll: true, Allow: []netip.Prefix{netip.MustParsePrefix("fd00::/8")}}); err == nil {
		t.Error("SetPolicy took an IPv6 prefix")
	}
}

// names is a Resolver for tests: what each name resolves to, changed as
// a test goes; a name it does not hold does not exist.
type names struct {
	mu    sync.Mutex
	addrs map[string][]netip.Addr
	fail  bool
}

func (n *names) set(name string, addrs ...netip.Addr) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.addrs[name] = addrs
}

func (n *names) failing(fail bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fail = fail
}

func (n *names) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if network != "ip4" {
		return nil, fmt.Errorf("looked up %s for %s; want ip4", network, host)
	}
	if n.fail {
		return nil, &net.DNSError{Err: "server misbehaving", Name: host, IsTemporary: true}
	}
	addrs, ok := n.addrs[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return addrs, nil
}

// Names on a policy stand for the addresses the host resolves them to, at
// attach and again at every refresh: an allowed name is reached (with the
// nameserver), a denied one is not; a name that moves is followed, its old
// address kept while it lingers; a failed lookup changes nothing; a name
// that stops existing goes once its addresses linger no more.
func TestNamesAreResolvedAndKeptCurrent(t *testing.T) {
	cfg := testConfig(t, "10.231.13.0/24")
	dns := &names{addrs: map[string][]netip.Addr{"world.test": {worldPublic}, "bad.test": {worldPublic}}}
	cfg.Resolver, cfg.ResolveLinger = dns, time.Hour
	m := newManager(t, cfg)
	newWorld(t, cfg.Pool)
	allowed := attach(t, m, "names-allow", PolicyOf(sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"world.test"}}))
	denied := attach(t, m, "names-deny", PolicyOf(sbx.Egress{Mode: sbx.EgressInternet, Deny: []string{"bad.test"}}))

	reach(t, allowed.Netns, worldPublic, 80)
	dropped(t, allowed.Netns, worldPublic2, 80)
	reach(t, allowed.Netns, worldPrivate, 53) // to find the name's addresses
	dropped(t, denied.Netns, worldPublic, 80)
	reach(t, denied.Netns, worldPublic2, 80)

	dns.set("world.test", worldPublic2)
	dns.set("bad.test", worldPublic2)
	check(t, m.Refresh(t.Context()))
	reach(t, allowed.Netns, worldPublic2, 80)
	reach(t, allowed.Netns, worldPublic, 80) // lingers
	dropped(t, denied.Netns, worldPublic2, 80)
	dropped(t, denied.Netns, worldPublic, 80) // lingers too

	m.cfg.ResolveLinger = time.Nanosecond
	dns.failing(true)
	check(t, m.Refresh(t.Context()))
	reach(t, allowed.Netns, worldPublic, 80)  // a failed lookup takes nothing away…
	dropped(t, denied.Netns, worldPublic, 80) // …and opens nothing

	dns.failing(false)
	check(t, m.Refresh(t.Context()))
	dropped(t, allowed.Netns, worldPublic, 80) // lingered long enough
	reach(t, allowed.Netns, worldPublic2, 80)
	reach(t, denied.Netns, worldPublic, 80)
	dropped(t, denied.Netns, worldPublic2, 80)
	if got, _ := m.Get(allowed.ID); len(got.Resolved["world.test"]) != 1 || got.Resolved["world.test"][0].Addr != worldPublic2 {
		t.Errorf("world.test resolved to %+v; want %s", got.Resolved, worldPublic2)
	}

	restarted, err := New(cfg) // the record holds what the names resolved to
	check(t, err)
	if got, _ := restarted.Get(allowed.ID); len(got.Resolved["world.test"]) != 1 {
		t.Errorf("after a restart, world.test resolves to %+v", got.Resolved)
	}
	reach(t, allowed.Netns, worldPublic2, 80)

	dns.set("world.test") // exists, with no address
	delete(dns.addrs, "bad.test")
	check(t, m.Refresh(t.Context()))
	dropped(t, allowed.Netns, worldPublic2, 80)
	reach(t, denied.Netns, worldPublic2, 80)

	// KeepCurrent refreshes on its own.
	m.cfg.ResolveEvery = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	kept := make(chan struct{})
	defer func() { cancel(); <-kept }()
	go func() { m.KeepCurrent(ctx); close(kept) }()
	dns.set("world.test", worldPublic)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := dial(allowed.Netns, worldPublic, 80, dialTimeout); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("KeepCurrent did not follow world.test to its new address")
		}
	}
}

// Attaches add to the table, detaches and restarts replace it; established
// connections and their NAT live in conntrack and carry on.
func TestConnectionsSurviveRuleChanges(t *testing.T) {
	cfg := testConfig(t, "10.231.10.0/24")
	m := newManager(t, cfg)
	newWorld(t, cfg.Pool)
	a := attach(t, m, "survive", Policy{})
	conn, err := connect(a.Netns, worldPublic, 7, reachTimeout)
	check(t, err)
	defer conn.Close()
	roundTrip := func() {
		t.Helper()
		check(t, conn.SetDeadline(time.Now().Add(5*time.Second))) // a guard against hanging, not a measurement
		buf := []byte("ping")
		if _, err := conn.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(conn, buf); err != nil {
			t.Fatalf("echo after rule changes: %v", err)
		}
	}

	roundTrip()
	attach(t, m, "survive-other", Policy{})
	check(t, m.Detach(t.Context(), sandboxID("survive-other")))
	_, err = New(cfg) // a restart
	check(t, err)
	roundTrip()
}

func TestPrepareRestoresWhatRunscRemoves(t *testing.T) {
	cfg := testConfig(t, "10.231.4.0/24")
	m := newManager(t, cfg)
	newWorld(t, cfg.Pool)
	a := attach(t, m, "prepare", Policy{})

	// runsc takes eth0 over and removes its address from the namespace.
	ns, err := netns.GetFromPath(a.Netns)
	check(t, err)
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	check(t, err)
	defer h.Close()
	eth, err := h.LinkByName("eth0")
	check(t, err)
	check(t, h.AddrDel(eth, addr(a.Addr)))
	if _, err := dial(a.Netns, worldPublic, 80, dialTimeout); err == nil {
		t.Fatal("connected without an address")
	}

	for range 2 { // idempotent
		if err := m.Prepare(a); err != nil {
			t.Fatal(err)
		}
		reach(t, a.Netns, worldPublic, 80)
	}
}

func TestDetachRemovesEverything(t *testing.T) {
	cfg := testConfig(t, "10.231.5.0/24")
	m := newManager(t, cfg)
	a := attach(t, m, "detach", Policy{DenyAll: true, Allow: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}})
	record := filepath.Join(cfg.StateDir, a.ID+".json")
	if !strings.Contains(listTable(t, cfg.Table), a.HostIf) {
		t.Fatalf("table %s does not name %s", cfg.Table, a.HostIf)
	}
	if _, err := os.Stat(record); err != nil {
		t.Fatal(err)
	}

	for range 2 { // idempotent
		if err := m.Detach(t.Context(), a.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(a.Netns); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace %s: %v; want it gone", a.Netns, err)
	}
	if _, err := netlink.LinkByName(a.HostIf); !errors.As(err, &netlink.LinkNotFoundError{}) {
		t.Errorf("veth %s: %v; want it gone", a.HostIf, err)
	}
	if table := listTable(t, cfg.Table); strings.Contains(table, a.HostIf) {
		t.Errorf("table %s still names %s:\n%s", cfg.Table, a.HostIf, table)
	}
	if _, err := os.Stat(record); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("record %s: %v; want it gone", record, err)
	}
	if _, ok := m.Get(a.ID); ok {
		t.Error("Get still knows the sandbox")
	}
	if next := attach(t, m, "detach-next", Policy{}); next.Addr != a.Addr {
		t.Errorf("next sandbox got %s; want the freed %s", next.Addr, a.Addr)
	}
}

func TestRestartKeepsAttachments(t *testing.T) {
	cfg := testConfig(t, "10.231.6.0/24")
	m := newManager(t, cfg)
	newWorld(t, cfg.Pool)
	a := attach(t, m, "restart", Policy{DenyAll: true, Allow: []netip.Prefix{netip.MustParsePrefix("198.51.100.1/32")}})
	orphanID := sandboxID("orphan")
	orphan, _ := newNetns(t, cfg.Table+"-"+orphanID)

	restarted, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := restarted.Get(a.ID); !ok || !reflect.DeepEqual(got, a) {
		t.Errorf("after restart, Get = %+v, %v; want %+v", got, ok, a)
	}
	list, err := restarted.List()
	check(t, err)
	listed := func(want Attachment) bool {
		return slices.ContainsFunc(list, func(got Attachment) bool { return reflect.DeepEqual(got, want) })
	}
	if !listed(a) {
		t.Errorf("List lacks %s: %+v", a.ID, list)
	}
	if !listed(Attachment{ID: orphanID, Netns: orphan}) {
		t.Errorf("List lacks the orphan namespace %s: %+v", orphan, list)
	}
	if b := attach(t, restarted, "restart-b", Policy{}); b.Addr == a.Addr {
		t.Errorf("after restart, %s got %s again", b.ID, b.Addr)
	}
	if seen := reach(t, a.Netns, worldPublic, 80); seen != worldHost.String() { // allowed, masqueraded
		t.Errorf("the internet sees the sandbox as %s; want %s", seen, worldHost)
	}
	dropped(t, a.Netns, worldPrivate, 53) // still denied

	if _, err := restarted.Attach(t.Context(), orphanID, Policy{}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("Attach over the orphan namespace: %v; want it to say the namespace exists", err)
	}
	if _, err := os.Stat(orphan); err != nil {
		t.Errorf("a failed Attach removed the namespace it did not create: %v", err)
	}
	check(t, restarted.Detach(t.Context(), orphanID))
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan namespace %s: %v; want Detach to remove it", orphan, err)
	}
}

func TestConcurrentAttachesGetDistinctAddresses(t *testing.T) {
	cfg := testConfig(t, "10.231.7.0/24")
	m := newManager(t, cfg)
	var wg sync.WaitGroup
	got := make([]Attachment, 16)
	errs := make([]error, len(got))
	for i := range got {
		wg.Go(func() {
			got[i], errs[i] = m.Attach(t.Context(), sandboxID("many-"+string(rune('a'+i))), Policy{})
		})
	}
	wg.Wait()
	check(t, errors.Join(errs...))
	seen := map[netip.Prefix]string{}
	for _, a := range got {
		if other, dup := seen[a.Addr]; dup {
			t.Errorf("%s and %s both got %s", other, a.ID, a.Addr)
		}
		seen[a.Addr] = a.ID
	}
}

func TestFullPool(t *testing.T) {
	cfg := testConfig(t, "10.231.8.0/30")
	m := newManager(t, cfg)
	a := attach(t, m, "full", Policy{})
	if a.Addr != netip.MustParsePrefix("10.231.8.2/30") || a.Gateway != netip.MustParseAddr("10.231.8.1") {
		t.Errorf("got %s via %s; want 10.231.8.2/30 via 10.231.8.1", a.Addr, a.Gateway)
	}
	_, err := m.Attach(t.Context(), sandboxID("full-2"), Policy{})
	if err == nil || !strings.Contains(err.Error(), "pool 10.231.8.0/30 is full") {
		t.Errorf("Attach to a full pool: %v; want it to say the pool is full", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Pool: netip.MustParsePrefix("10.231.0.0/31"), StateDir: "x"}, "pool 10.231.0.0/31 is smaller than a /30"},
		{Config{Pool: netip.MustParsePrefix("fd00::/64"), StateDir: "x"}, "pool fd00::/64 is not IPv4"},
		{Config{Pool: netip.MustParsePrefix("10.231.0.1/24"), StateDir: "x"}, "want 10.231.0.0/24"},
		{Config{}, "StateDir is required"},
		{Config{StateDir: "x", Table: "sbx-test"}, `table name "sbx-test"`},
		{Config{StateDir: "x", Nameservers: []netip.Addr{netip.MustParseAddr("fd00::1")}}, "nameserver fd00::1 is not IPv4"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v; want an error with %q", tc.cfg, err, tc.want)
		}
	}
}

func TestAttachRejectsBadInput(t *testing.T) {
	m := newManager(t, testConfig(t, "10.231.9.0/24"))
	for _, id := range []string{"", "Upper", "-dash", "under_score", strings.Repeat("a", 65)} {
		if _, err := m.Attach(t.Context(), id, Policy{}); err == nil || !strings.Contains(err.Error(), "invalid sandbox ID") {
			t.Errorf("Attach(%q): %v; want an invalid ID error", id, err)
		}
	}
	_, err := m.Attach(t.Context(), sandboxID("v6"), Policy{Allow: []netip.Prefix{netip.MustParsePrefix("fd00::/8")}})
	if err == nil || !strings.Contains(err.Error(), "policy entry fd00::/8: want an IPv4 prefix") {
		t.Errorf("Attach with an IPv6 allow: %v; want an error naming it", err)
	}
	attach(t, m, "twice", Policy{})
	if _, err := m.Attach(t.Context(), sandboxID("twice"), Policy{}); err == nil || !strings.Contains(err.Error(), "already attached") {
		t.Errorf("second Attach: %v; want already attached", err)
	}
}

func listTable(t *testing.T, table string) string {
	t.Helper()
	out, err := exec.Command("nft", "list", "table", "inet", table).CombinedOutput()
	if err != nil {
		t.Fatalf("nft list table: %v: %s", err, out)
	}
	return string(out)
}

// An attach adds only its own set elements; when the table is gone (removed
// behind sbx's back), it installs the whole table again.
func TestAttachReinstallsAMissingTable(t *testing.T) {
	cfg := testConfig(t, "10.231.9.0/24")
	m := newManager(t, cfg)
	a := attach(t, m, "reinstall-a", Policy{})
	if out, err := exec.Command("nft", "delete", "table", "inet", cfg.Table).CombinedOutput(); err != nil {
		t.Fatalf("nft delete table: %v %s", err, out)
	}
	b := attach(t, m, "reinstall-b", Policy{DenyAll: true})
	out, err := exec.Command("nft", "list", "table", "inet", cfg.Table).CombinedOutput()
	if err != nil {
		t.Fatalf("nft list table: %v %s", err, out)
	}
	for _, iface := range []string{a.HostIf, b.HostIf} {
		if !strings.Contains(string(out), `"`+iface+`"`) {
			t.Errorf("the table lacks %s:\n%s", iface, out)
		}
	}
}

// With nameservers given, the host asks them for a policy's names (after
// /etc/hosts), over DNS.
func TestNameserversResolveNames(t *testing.T) {
	cfg := testConfig(t, "10.231.14.0/24") // its nameserver: worldPrivate
	m := newManager(t, cfg)
	world := newWorld(t, cfg.Pool)
	(&testenv.Outside{Name: filepath.Base(world)}).ServeDNS(t, netip.AddrPortFrom(worldPrivate, 53).String(),
		map[string][]netip.Addr{"world.test": {worldPublic2}})
	a := attach(t, m, "nameservers", PolicyOf(sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"world.test", "nowhere.test"}}))
	reach(t, a.Netns, worldPublic2, 80)
	dropped(t, a.Netns, worldPublic, 80)
	if got, _ := m.Get(a.ID); len(got.Resolved) != 1 || len(got.Resolved["world.test"]) != 1 {
		t.Errorf("resolved %+v; want world.test's one address", got.Resolved)
	}
}
