package network

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// sandboxIf is the sandbox end of the veth, inside its namespace.
const sandboxIf = "eth0"

// hostIfName names the host end of a sandbox's veth: "sbx" and 12 hex digits
// of a hash of the instance's table and the ID, within the kernel's 15
// characters, so that instances never name (or remove) each other's. The
// default table hashes the ID alone, as sbx did before instances had names.
func hostIfName(table, id string) string {
	key := table + "/" + id
	if table == defaultTable {
		key = id
	}
	sum := sha256.Sum256([]byte(key))
	return "sbx" + hex.EncodeToString(sum[:6])
}

// createLinks creates a's namespace and veth pair, with the sandbox end
// created as eth0 in the namespace, and brings the host end up with the
// gateway address.
func createLinks(a Attachment) error {
	err := onThrowawayThread(func() error {
		ns, err := netns.NewNamed(filepath.Base(a.Netns)) // enters the namespace too
		if err == nil {
			ns.Close()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("create namespace %s: %w", a.Netns, err)
	}
	ns, err := netns.GetFromPath(a.Netns)
	if err != nil {
		return fmt.Errorf("open namespace %s: %w", a.Netns, err)
	}
	defer ns.Close()
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: a.HostIf},
		PeerName:      sandboxIf,
		PeerNamespace: netlink.NsFd(ns),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("create veth %s: %w", a.HostIf, err)
	}
	host, err := netlink.LinkByName(a.HostIf)
	if err != nil {
		return fmt.Errorf("veth %s: %w", a.HostIf, err)
	}
	if err := netlink.AddrReplace(host, addr(netip.PrefixFrom(a.Gateway, a.Addr.Bits()))); err != nil {
		return fmt.Errorf("address veth %s: %w", a.HostIf, err)
	}
	if err := netlink.LinkSetUp(host); err != nil {
		return fmt.Errorf("bring veth %s up: %w", a.HostIf, err)
	}
	return nil
}

// prepare puts a's address and default route on eth0 in its namespace and
// brings eth0 and lo up.
func prepare(a Attachment) error {
	ns, err := netns.GetFromPath(a.Netns)
	if err != nil {
		return fmt.Errorf("open namespace %s: %w", a.Netns, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", a.Netns, err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		return fmt.Errorf("bring lo up in %s: %w", a.Netns, err)
	}
	eth, err := h.LinkByName(sandboxIf)
	if err != nil {
		return fmt.Errorf("%s in %s: %w", sandboxIf, a.Netns, err)
	}
	if err := h.AddrReplace(eth, addr(a.Addr)); err != nil {
		return fmt.Errorf("address %s in %s: %w", sandboxIf, a.Netns, err)
	}
	if err := h.LinkSetUp(eth); err != nil {
		return fmt.Errorf("bring %s up in %s: %w", sandboxIf, a.Netns, err)
	}
	route := &netlink.Route{LinkIndex: eth.Attrs().Index, Gw: a.Gateway.AsSlice()}
	if err := h.RouteReplace(route); err != nil {
		return fmt.Errorf("default route via %s in %s: %w", a.Gateway, a.Netns, err)
	}
	return nil
}

// removeVeth deletes a veth, which deletes its peer; it may already be gone.
func removeVeth(name string) error {
	link, err := netlink.LinkByName(name)
	if err == nil {
		err = netlink.LinkDel(link)
	}
	if err != nil && !errors.As(err, &netlink.LinkNotFoundError{}) {
		return fmt.Errorf("delete veth %s: %w", name, err)
	}
	return nil
}

// removeNetns unmounts and removes a named namespace; it may already be gone.
func removeNetns(path string) error {
	err := syscall.Unmount(path, syscall.MNT_DETACH)
	if err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("unmount namespace %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove namespace %s: %w", path, err)
	}
	return nil
}

// onThrowawayThread runs f on an OS thread that ends with it, so that f may
// switch the thread's namespace without affecting any goroutine.
func onThrowawayThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		errc <- f()
	}()
	return <-errc
}

func addr(p netip.Prefix) *netlink.Addr {
	return &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}}
}

// shareNetnsDir makes netnsDir a mount point of its own with shared
// propagation before any namespace is mounted in it, as iproute2's `ip
// netns add` does. Otherwise the first `ip netns add` on the host (any
// program's) binds the directory over itself then, hiding the namespaces
// already mounted in it under that bind: they can no longer be unmounted,
// and their files can no longer be removed (EBUSY). A directory that is
// no mount point but already holds namespaces (mounted by an sbx before
// this one) is left as it is: a bind now would hide those.
func shareNetnsDir() error {
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return err
	}
	err := syscall.Mount("", netnsDir, "none", syscall.MS_SHARED|syscall.MS_REC, "")
	if errors.Is(err, syscall.EINVAL) { // not a mount point yet
		if entries, rerr := os.ReadDir(netnsDir); rerr != nil || len(entries) > 0 {
			return rerr
		}
		if err = syscall.Mount(netnsDir, netnsDir, "none", syscall.MS_BIND|syscall.MS_REC, ""); err == nil {
			err = syscall.Mount("", netnsDir, "none", syscall.MS_SHARED|syscall.MS_REC, "")
		}
	}
	if err != nil {
		return fmt.Errorf("make %s a shared mount point: %w", netnsDir, err)
	}
	return nil
}
