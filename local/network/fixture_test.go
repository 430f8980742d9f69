package network

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// The tests build real networks: every name carries runTag so that they
// cannot meet anything else on the host, and every test removes what it made.

var (
	runTag      = randomTag()
	tableNumber atomic.Int32
)

func randomTag() string {
	b := make([]byte, 3)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// sandboxID returns a sandbox ID unique to this test run.
func sandboxID(name string) string { return "nt" + runTag + "-" + name }

// needHost ends the test unless the host can build networks.
func needHost(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root (network namespaces, veth pairs, nftables)")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		testenv.Missing(t, "nft (apt-get install nftables)")
	}
}

// testConfig is a Config with its own table and state directory, a pool
// from 10.231.0.0/16, and the world's private address as nameserver.
func testConfig(t *testing.T, pool string) Config {
	return Config{
		Pool:        netip.MustParsePrefix(pool),
		StateDir:    t.TempDir(),
		Table:       fmt.Sprintf("sbxtest_%s_%d", runTag, tableNumber.Add(1)),
		Nameservers: []netip.Addr{worldPrivate},
	}
}

// newManager returns a Manager for cfg; at cleanup, every sandbox recorded
// in cfg.StateDir is detached and the table deleted.
func newManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	needHost(t)
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if m, err := New(cfg); err == nil { // sees what any Manager over cfg recorded
			list, _ := m.List()
			for _, a := range list {
				if a.HostIf != "" {
					m.Detach(context.Background(), a.ID)
				}
			}
		}
		exec.Command("nft", "delete", "table", "inet", cfg.Table).Run()
	})
	return m
}

func attach(t *testing.T, m *Manager, name string, p Policy) Attachment {
	t.Helper()
	a, err := m.Attach(t.Context(), sandboxID(name), p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The world is an outside namespace connected to the host by a veth. It
// stands for the internet at worldPublic and worldPublic2 and for a private
// network at worldPrivate; the host end has worldHost and 10.233.0.2.
// Listeners on ports 80 and 53 tell each client the source address they
// see; port 7 echoes.
var (
	worldPublic  = netip.MustParseAddr("198.51.100.1")
	worldPublic2 = netip.MustParseAddr("198.51.100.3")
	worldPrivate = netip.MustParseAddr("10.233.0.1")
	worldHost    = netip.MustParseAddr("198.51.100.2")
)

// newWorld builds the world, with a route back to pool (which the host must
// not forward: only the host may connect into a sandbox); it returns the
// world's namespace path.
func newWorld(t *testing.T, pool netip.Prefix) string {
	t.Helper()
	nsPath, ns := newNetns(t, "nettest-"+runTag+"-world")
	hostIf := "ntw" + runTag
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: hostIf}, PeerName: "eth0", PeerNamespace: netlink.NsFd(ns)}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeVeth(hostIf) })
	host, err := netlink.LinkByName(hostIf)
	check(t, err)
	check(t, netlink.AddrAdd(host, addr(netip.PrefixFrom(worldHost, 24))))
	check(t, netlink.AddrAdd(host, addr(netip.MustParsePrefix("10.233.0.2/24"))))
	check(t, netlink.LinkSetUp(host))

	h, err := netlink.NewHandleAt(ns)
	check(t, err)
	defer h.Close()
	eth, err := h.LinkByName("eth0")
	check(t, err)
	check(t, h.AddrAdd(eth, addr(netip.PrefixFrom(worldPublic, 24))))
	check(t, h.AddrAdd(eth, addr(netip.PrefixFrom(worldPublic2, 24))))
	check(t, h.AddrAdd(eth, addr(netip.PrefixFrom(worldPrivate, 24))))
	check(t, h.LinkSetUp(eth))
	check(t, h.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Dst: addr(pool).IPNet, Gw: worldHost.AsSlice()}))
	listen(t, nsPath, "0.0.0.0:80")
	listen(t, nsPath, "0.0.0.0:53")
	echo(t, nsPath, "0.0.0.0:7")
	return nsPath
}

// newNetns creates a namespace that the test removes at cleanup.
func newNetns(t *testing.T, name string) (string, netns.NsHandle) {
	t.Helper()
	path := filepath.Join(netnsDir, name)
	err := onThrowawayThread(func() error {
		ns, err := netns.NewNamed(name)
		if err == nil {
			ns.Close()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeNetns(path) })
	ns, err := netns.GetFromPath(path)
	check(t, err)
	t.Cleanup(func() { ns.Close() })
	return path, ns
}

// listen serves TCP on address in the namespace at nsPath ("" for the
// host's): it writes each client's source address to it. It returns the
// port.
func listen(t *testing.T, nsPath, address string) int {
	t.Helper()
	var l net.Listener
	err := inNetns(nsPath, func() (err error) {
		l, err = net.Listen("tcp4", address)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, c.RemoteAddr().(*net.TCPAddr).IP)
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// echo serves TCP on address in the namespace at nsPath, echoing.
func echo(t *testing.T, nsPath, address string) {
	t.Helper()
	var l net.Listener
	check(t, inNetns(nsPath, func() (err error) {
		l, err = net.Listen("tcp4", address)
		return err
	}))
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
}

// dialTimeout bounds a connect whose packets are dropped; an allowed one
// completes in well under a millisecond. reachTimeout bounds one that must
// succeed: a guard, long enough for a SYN lost on a loaded host to be sent
// again (after 1 s).
const (
	dialTimeout  = time.Second
	reachTimeout = 10 * time.Second
)

// connect connects from the namespace at nsPath ("" for the host's) to
// addr:port, giving up after timeout.
func connect(nsPath string, addr netip.Addr, port int, timeout time.Duration) (net.Conn, error) {
	var conn net.Conn
	err := inNetns(nsPath, func() (err error) {
		conn, err = net.DialTimeout("tcp4", netip.AddrPortFrom(addr, uint16(port)).String(), timeout)
		return err
	})
	return conn, err
}

// dial connects to a listener and returns the source address it saw.
func dial(nsPath string, addr netip.Addr, port int, timeout time.Duration) (string, error) {
	conn, err := connect(nsPath, addr, port, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line), err
}

// reach connects and returns the source address the listener saw.
func reach(t *testing.T, nsPath string, addr netip.Addr, port int) string {
	t.Helper()
	seen, err := dial(nsPath, addr, port, reachTimeout)
	if err != nil {
		t.Fatalf("from %s, connect to %s:%d: %v", nsName(nsPath), addr, port, err)
	}
	return seen
}

// dropped fails unless a connect's packets are dropped: a connect that
// fails otherwise (refused, unreachable) proves nothing about the rules.
func dropped(t *testing.T, nsPath string, addr netip.Addr, port int) {
	t.Helper()
	_, err := dial(nsPath, addr, port, dialTimeout)
	var netErr net.Error
	switch {
	case err == nil:
		t.Errorf("from %s, connected to %s:%d; want it dropped", nsName(nsPath), addr, port)
	case !errors.As(err, &netErr) || !netErr.Timeout():
		t.Errorf("from %s, connect to %s:%d: %v; want it dropped (a timeout)", nsName(nsPath), addr, port, err)
	}
}

func nsName(nsPath string) string {
	if nsPath == "" {
		return "the host"
	}
	return filepath.Base(nsPath)
}

// inNetns runs f in the namespace at nsPath ("" for the host's).
func inNetns(nsPath string, f func() error) error {
	if nsPath == "" {
		return f()
	}
	return onThrowawayThread(func() error {
		ns, err := netns.GetFromPath(nsPath)
		if err != nil {
			return err
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			return err
		}
		return f()
	})
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
