package network

import (
	"errors"
	"io"
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

func TestDenyAllAndAllow(t *testing.T) {
	cfg := testConfig(t, "10.231.3.0/24")
	m := newManager(t, cfg)
	newWorld(t, cfg.Pool)
	denied := attach(t, m, "deny", Policy{DenyAll: true})
	allowed := attach(t, m, "deny-allow", Policy{DenyAll: true, Allow: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}})
	private := attach(t, m, "allow-private", Policy{Allow: []netip.Prefix{
		netip.MustParsePrefix("10.233.0.0/16"), netip.MustParsePrefix("10.233.0.1/32"), // overlapping
		denied.Addr.Masked(), // another sandbox, whose replies pass though it is denied all
	}})
	deniedPort := listen(t, denied.Netns, "0.0.0.0:0")

	dropped(t, denied.Netns, worldPublic, 80)
	dropped(t, denied.Netns, worldPrivate, 53) // not even the nameserver
	reach(t, allowed.Netns, worldPublic, 80)
	dropped(t, allowed.Netns, worldPrivate, 53)
	reach(t, private.Netns, worldPrivate, 80)
	reach(t, private.Netns, denied.Addr.Addr(), deniedPort)
}

// Attaches add to the table, detaches and restarts replace it; established
// connections and their NAT live in conntrack and carry on.
func TestConnectionsSurviveRuleChanges(t *testing.T) {
	cfg := testConfig(t, "10.231.10.0/24")
	m := newManager(t, cfg)
	newWorld(t, cfg.Pool)
	a := attach(t, m, "survive", Policy{})
	conn, err := connect(a.Netns, worldPublic, 7)
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
	if _, err := dial(a.Netns, worldPublic, 80); err == nil {
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
	if err == nil || !strings.Contains(err.Error(), "allow fd00::/8: want an IPv4 prefix") {
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
