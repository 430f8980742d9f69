package local

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/local/network"
	"github.com/vishvananda/netlink"
)

// Two providers on one host, as two serve processes with names and pools
// of their own run them (serve --name, --pool). B creates a sandbox with
// the very ID of A's, kills it, leaves another dead behind and reconciles
// (kills whatever it lists, as with an empty ledger): A's sandbox still
// runs, with its cgroup, namespace, veth, address and table entry, and A
// lists it as before. A third instance whose pool overlaps A's is refused.
func TestInstancesLeaveEachOthersSandboxesAlone(t *testing.T) {
	ctx := context.Background()
	instA := testenv.NewInstance(t)
	a := newInstanceProvider(t, EngineRunsc, instA)
	b := newProvider(t)
	id, _ := a.create(t, 128)
	attA, _ := a.checkSandbox(t, id, 128)

	spec := sbx.Spec{SandboxID: uuid.NewString(), ProviderSandboxID: id, TemplateID: "base", Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 128}}
	inB, err := b.Create(ctx, spec)
	if err != nil {
		t.Fatalf("B's sandbox with A's ID: %v", err)
	}
	if attB, _ := b.cfg.Network.Get(id); attB.HostIf == attA.HostIf || attB.Netns == attA.Netns || attB.Addr.Overlaps(attA.Addr) {
		t.Fatalf("A's and B's sandboxes share an interface, namespace or address: %+v, %+v", attA, attB)
	}
	if err := b.Kill(ctx, inB.Handle); err != nil {
		t.Fatal(err)
	}
	other, _ := b.create(t, 128)
	b.execIn(t, other, "true")
	if _, err := b.rs.Run(ctx, nil, "kill", other, "KILL"); err != nil {
		t.Fatalf("killing B's other sandbox behind its back: %v", err)
	}
	list, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range list {
		if in.ProviderSandboxID != other {
			t.Errorf("B lists %s, not its own", in.ProviderSandboxID)
		}
		if err := b.Kill(ctx, in.Handle); err != nil {
			t.Errorf("B's reconcile: %v", err)
		}
	}

	if got := a.execIn(t, id, "hostname", "-I"); strings.TrimSpace(got) != attA.Addr.Addr().String() {
		t.Errorf("A's sandbox lost its address %s: %q", attA.Addr, got)
	}
	if !a.alive(id) {
		t.Error("A's sandbox has no processes in its cgroup")
	}
	if _, err := os.Stat(attA.Netns); err != nil {
		t.Errorf("A's namespace: %v", err)
	}
	if _, err := netlink.LinkByName(attA.HostIf); err != nil {
		t.Errorf("A's veth: %v", err)
	}
	if out, err := exec.Command("nft", "list", "set", "inet", instA.Name, "sandboxes").CombinedOutput(); err != nil || !strings.Contains(string(out), `"`+attA.HostIf+`"`) {
		t.Errorf("A's table lacks its sandbox: %v\n%s", err, out)
	}
	list, err = a.List(ctx)
	if err != nil || len(list) != 1 || list[0].ProviderSandboxID != id || list[0].Status != sbx.InstanceRunning {
		t.Errorf("A lists %+v, %v; want its one sandbox running", list, err)
	}

	_, err = network.New(network.Config{Pool: instA.Pool, StateDir: t.TempDir(), Table: testenv.NewInstance(t).Name, Nameservers: []netip.Addr{}})
	if err == nil || !strings.Contains(err.Error(), "overlaps pool "+instA.Pool.String()+` of sbx instance "`+instA.Name+`"`) {
		t.Errorf("an instance on A's pool: %v; want it refused naming A", err)
	}
}
