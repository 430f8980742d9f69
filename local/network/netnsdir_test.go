package network

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/sbxdev/sbx/internal/testenv"
)

// childEnv makes the test binary run TestNamespacesOutliveIPNetnsAdd's
// child half, in a mount namespace of its own.
const childEnv = "SBX_NETNS_DIR_CHILD"

// On a host where /run/netns is not yet a mount point, a sandbox's
// namespace made before another program's first `ip netns add` (which binds
// the directory over itself) is still removed whole when the sandbox goes:
// serve made the directory a shared mount point of its own first. Without
// that, the namespace ended up under the bind, and its removal failed with
// EBUSY (a delete answered 502). The host's /run stays untouched: the child
// runs in a mount namespace of its own, on a /run of its own.
func TestNamespacesOutliveIPNetnsAdd(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		namespacesOutliveIPNetnsAdd(t)
		return
	}
	needHost(t)
	for _, cmd := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(cmd); err != nil {
			testenv.Missing(t, cmd+" (util-linux, iproute2)")
		}
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", os.Args[0], "-test.run", "^TestNamespacesOutliveIPNetnsAdd$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("the child: %v\n%s", err, out)
	}
}

func namespacesOutliveIPNetnsAdd(t *testing.T) {
	if err := syscall.Mount("none", "/run", "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, "10.231.77.0/24")
	m := newManager(t, cfg)
	a := attach(t, m, "netnsdir", Policy{})
	other := "sbxtest-ipadd-" + runTag
	if out, err := exec.Command("ip", "netns", "add", other).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v %s", err, out)
	}
	defer exec.Command("ip", "netns", "del", other).Run()
	if err := m.Detach(context.Background(), a.ID); err != nil {
		t.Fatalf("detach after another program's ip netns add: %v", err)
	}
	if _, err := os.Stat(a.Netns); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there: %v", a.Netns, err)
	}
}
