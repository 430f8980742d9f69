package testenv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/vishvananda/netns"
)

// Outside is a network namespace standing for the internet beyond this
// host, for tests of what sandboxes reach: a veth whose host end has Host
// and whose far end has the addresses it was made with, each in a /24, so
// that the host routes to them as to any neighbour and masquerades a
// sandbox's traffic to them. Tests reach only this machine: give each test
// package a /24 of its own, since packages run at once: ranges public to
// sandboxes and never routed elsewhere, such as 198.51.100.0/24,
// 203.0.113.0/24 or 198.18.0.0/24 (not 192.0.2.0/24, which some of these
// machines use for their own network). NewOutside refuses a /24 one of the
// host's own networks overlaps.
type Outside struct {
	Name string     // the namespace, /run/netns/<Name>
	Host netip.Addr // the host end's address
}

// NewOutside builds the namespace name (at most 14 characters: it names
// the veth too), removed at cleanup.
func NewOutside(t testing.TB, name string, host netip.Addr, addrs ...netip.Addr) *Outside {
	t.Helper()
	far := name + "x"
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	exec.Command("ip", "netns", "del", name).Run() // what a crashed run left
	exec.Command("ip", "link", "del", name).Run()
	mine := netip.PrefixFrom(host, 24).Masked()
	own, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range own {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Masked().Overlaps(mine) {
			t.Fatalf("the stand-in internet %s overlaps this host's own network %s: give the test another range", mine, p)
		}
	}
	run("netns", "add", name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	run("link", "add", name, "type", "veth", "peer", "name", far, "netns", name)
	t.Cleanup(func() { exec.Command("ip", "link", "del", name).Run() })
	run("addr", "add", host.String()+"/24", "dev", name)
	run("link", "set", name, "up")
	for _, a := range addrs {
		run("-n", name, "addr", "add", a.String()+"/24", "dev", far)
	}
	run("-n", name, "link", "set", far, "up")
	run("-n", name, "link", "set", "lo", "up")
	return &Outside{Name: name, Host: host}
}

// in runs f inside the namespace, on a thread of its own.
func (o *Outside) in(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine, namespace and all
		ns, err := netns.GetFromName(o.Name)
		if err == nil {
			defer ns.Close()
			err = netns.Set(ns)
		}
		if err == nil {
			err = f()
		}
		errc <- err
	}()
	return <-errc
}

// Listen opens a TCP listener in the namespace, closed at cleanup.
func (o *Outside) Listen(t testing.TB, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := o.in(func() (err error) { ln, err = net.Listen("tcp4", addr); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// ServeHello serves HTTP on addr (host:port) in the namespace: every
// request is answered "hello from <addr>". It returns the URL.
func (o *Outside) ServeHello(t testing.TB, addr string) string {
	t.Helper()
	ln := o.Listen(t, addr)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s\n", ln.Addr())
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/"
}

// ServeDNS answers DNS queries on UDP addr (host:port) in the namespace
// from names: an A query for a name it holds gets its addresses, any other
// query of such a name no answer, and a name it does not hold does not
// exist. Names may change as the test goes (SetName).
func (o *Outside) ServeDNS(t testing.TB, addr string, names map[string][]netip.Addr) *DNS {
	t.Helper()
	var pc net.PacketConn
	if err := o.in(func() (err error) { pc, err = net.ListenPacket("udp4", addr); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	d := &DNS{names: map[string][]netip.Addr{}}
	for n, a := range names {
		d.SetName(n, a...)
	}
	go d.serve(pc)
	return d
}

// DNS is a nameserver ServeDNS runs.
type DNS struct {
	mu    sync.Mutex
	names map[string][]netip.Addr
}

// SetName makes name resolve to addrs (none: it exists, with no address).
func (d *DNS) SetName(name string, addrs ...netip.Addr) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.names[strings.ToLower(strings.TrimSuffix(name, "."))] = addrs
}

func (d *DNS) serve(pc net.PacketConn) {
	buf := make([]byte, 512)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if answer, err := d.answer(buf[:n]); err == nil {
			pc.WriteTo(answer, from)
		}
	}
}

// answer is the response to one query: the question echoed, with an A
// record per address (TTL 1 s) or none.
func (d *DNS) answer(q []byte) ([]byte, error) {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil, errors.New("not a query of one question")
	}
	var labels []string
	i := 12
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if l > 63 || i+1+l > len(q) {
			return nil, errors.New("bad name")
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil, errors.New("short question")
	}
	qtype := binary.BigEndian.Uint16(q[i+1 : i+3])
	question := q[12 : i+5]
	d.mu.Lock()
	addrs, known := d.names[strings.ToLower(strings.Join(labels, "."))]
	d.mu.Unlock()
	out := make([]byte, 12, 512)
	copy(out, q[:2])                                                 // the ID
	flags := uint16(0x8400) | binary.BigEndian.Uint16(q[2:4])&0x0100 // response, authoritative, recursion desired as asked
	if !known {
		flags |= 3 // NXDOMAIN
	}
	binary.BigEndian.PutUint16(out[2:], flags)
	binary.BigEndian.PutUint16(out[4:], 1)
	out = append(out, question...)
	if qtype == 1 {
		binary.BigEndian.PutUint16(out[6:], uint16(len(addrs)))
		for _, a := range addrs {
			out = append(out, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4) // the question's name, A, IN, TTL 1, 4 bytes
			out = append(out, a.AsSlice()...)
		}
	}
	return out, nil
}
