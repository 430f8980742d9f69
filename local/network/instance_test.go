package network

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

// Two instances on one host. A pool that overlaps another sbx table's is
// refused, naming that instance, and so is a name that another instance's
// table holds with other state; a restart on the same state is not, nor is
// the name once that table is gone. Instances name their interfaces apart:
// the same sandbox ID attached in both is two sandboxes, and detaching it
// in one leaves the other's namespace, veth, rules and route alone. A
// table with no record (an sbx from before the records) belongs to the
// state that records its sandboxes.
func TestInstancesKeepApart(t *testing.T) {
	a := testConfig(t, "10.231.11.0/24")
	ma := newManager(t, a)

	overlapping := testConfig(t, "10.231.11.128/25")
	_, err := New(overlapping)
	want := fmt.Sprintf("pool 10.231.11.128/25 overlaps pool 10.231.11.0/24 of sbx instance %q (nftables table inet %s, network state in %s)", a.Table, a.Table, a.StateDir)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("New with an overlapping pool: %v; want an error with %q", err, want)
	}
	if out, err := exec.Command("nft", "list", "table", "inet", overlapping.Table).CombinedOutput(); err == nil {
		t.Errorf("the refused instance installed its table:\n%s", out)
	}
	sameName := a
	sameName.StateDir = t.TempDir()
	_, err = New(sameName)
	want = fmt.Sprintf("instance name %q is in use by another sbx instance on this host, whose network state is in %s", a.Table, a.StateDir)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("New with another's name: %v; want an error with %q", err, want)
	}
	if _, err := New(a); err != nil {
		t.Errorf("a restart on the same state: %v", err)
	}

	b := testConfig(t, "10.231.12.0/24")
	mb := newManager(t, b)
	inA := attach(t, ma, "both", Policy{})
	port := listen(t, inA.Netns, "0.0.0.0:0")
	inB := attach(t, mb, "both", Policy{})
	if inA.HostIf == inB.HostIf || inA.Netns == inB.Netns {
		t.Fatalf("both instances named the sandbox's interface %s and namespace %s", inA.HostIf, inA.Netns)
	}
	check(t, mb.Detach(t.Context(), inB.ID))
	if list, err := mb.List(); err != nil || len(list) != 0 {
		t.Errorf("B lists %v, %v after its only sandbox left; want nothing", list, err)
	}
	if _, err := os.Stat(inA.Netns); err != nil {
		t.Errorf("A's namespace: %v", err)
	}
	if _, err := netlink.LinkByName(inA.HostIf); err != nil {
		t.Errorf("A's veth: %v", err)
	}
	if table := listTable(t, a.Table); !strings.Contains(table, `"`+inA.HostIf+`"`) {
		t.Errorf("A's table lacks its sandbox's interface %s:\n%s", inA.HostIf, table)
	}
	reach(t, "", inA.Addr.Addr(), port)

	// A's table as an sbx from before instance records left it: the
	// sandboxes in it that another state does not record tell it apart.
	check(t, os.Remove(instanceFile(a.Table)))
	_, err = New(sameName)
	want = fmt.Sprintf("its nftables table inet %s holds sandbox interfaces that %s does not record (%s)", a.Table, sameName.StateDir, inA.HostIf)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("New with the name of a table without a record: %v; want an error with %q", err, want)
	}
	if _, err := New(a); err != nil {
		t.Errorf("a restart on the state that records the table's sandboxes: %v", err)
	}

	check(t, ma.Detach(t.Context(), inA.ID))
	if out, err := exec.Command("nft", "delete", "table", "inet", a.Table).CombinedOutput(); err != nil {
		t.Fatalf("nft delete table: %v %s", err, out)
	}
	newManager(t, sameName) // A is gone: its name is free
}
