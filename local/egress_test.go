package local

import (
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netns"
)

// outside builds a namespace standing for a host beyond this one, reached
// through a veth whose host end has hostAddr and whose far end has addr (a
// /24), with a TCP server there that answers "hello". It returns the
// server's address.
func outside(t *testing.T, name, addr, hostAddr string) string {
	t.Helper()
	far := name + "x"
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	run("netns", "add", name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	run("link", "add", name, "type", "veth", "peer", "name", far, "netns", name)
	t.Cleanup(func() { exec.Command("ip", "link", "del", name).Run() })
	run("addr", "add", hostAddr+"/24", "dev", name)
	run("link", "set", name, "up")
	run("-n", name, "addr", "add", addr+"/24", "dev", far)
	run("-n", name, "link", "set", far, "up")
	run("-n", name, "link", "set", "lo", "up")

	ln := listenIn(t, name, addr+":0")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, "hello")
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// listenIn opens a TCP listener inside a named network namespace.
func listenIn(t *testing.T, name, addr string) net.Listener {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if err := netns.Set(ns); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	netns.Set(orig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// dial connects from inside a sandbox to addr with bash's /dev/tcp and says
// what came back: "hello", or "dropped" when the connection timed out.
func (p *Provider) dial(t *testing.T, id, addr string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	out, err := p.rs.Run(t.Context(), nil, "exec", id, "/usr/bin/timeout", "2", "/bin/bash", "-c",
		fmt.Sprintf("exec 3<>/dev/tcp/%s/%s && cat <&3", host, port))
	if err != nil && strings.Contains(err.Error(), "exit status 124") {
		return "dropped"
	}
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(out))
}

// A sandbox reaches the internet but not a private network, not the host,
// not another sandbox.
func TestEgressPolicy(t *testing.T) {
	p := newProvider(t)
	internet := outside(t, "sbxtinet", "203.0.113.1", "203.0.113.2")
	private := outside(t, "sbxtpriv", "10.237.0.1", "10.237.0.2")
	a, _ := p.create(t, 128)
	b, _ := p.create(t, 128)
	if got := p.dial(t, a, internet); got != "hello" {
		t.Errorf("the internet: %s", got)
	}
	if got := p.dial(t, a, private); got != "dropped" {
		t.Errorf("a private address: %s", got)
	}
	hostLn, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hostLn.Close()
	_, port, _ := net.SplitHostPort(hostLn.Addr().String())
	att, _ := p.cfg.Network.Get(a)
	if got := p.dial(t, a, net.JoinHostPort(att.Gateway.String(), port)); got != "dropped" {
		t.Errorf("the host: %s", got)
	}
	other, _ := p.cfg.Network.Get(b)
	if got := p.dial(t, a, net.JoinHostPort(other.Addr.Addr().String(), "80")); got != "dropped" {
		t.Errorf("another sandbox: %s", got)
	}
}
