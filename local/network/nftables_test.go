package network

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestResolvConfNameservers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "resolv.conf")
	conf := "# written by a test\nsearch example.com\nnameserver 10.255.255.53\nnameserver fd00::53\nnameserver  1.1.1.1 \noptions ndots:2\n"
	check(t, os.WriteFile(file, []byte(conf), 0o644))
	got, err := resolvConfNameservers(file)
	check(t, err)
	want := []netip.Addr{netip.MustParseAddr("10.255.255.53"), netip.MustParseAddr("1.1.1.1")}
	if !slices.Equal(got, want) {
		t.Errorf("nameservers = %v; want %v (IPv4 only)", got, want)
	}
	if got, err := resolvConfNameservers(filepath.Join(t.TempDir(), "missing")); err != nil || len(got) != 0 {
		t.Errorf("missing resolv.conf: %v, %v; want none, no error", got, err)
	}
}
