package local

import (
	"slices"
	"testing"

	"github.com/sbxdev/sbx"
)

// What differs between the engines, without running either.
func TestEngines(t *testing.T) {
	l := layout{dataDir: "/data", cgroupParent: "sbx"}
	rs, rc := newRunsc(l, "/bin/runsc"), newRunc(l, "runc")

	if got := rs.flags("s1", 512, true); !slices.Equal(got, []string{"--overlay2=root:dir=/data/sandboxes/s1,size=512m"}) {
		t.Errorf("runsc flags %q", got)
	}
	if got := rs.flags("s1", 512, false); !slices.Equal(got, []string{"--overlay2=root:dir=/data/sandboxes/s1,size=512m", "--network=none"}) {
		t.Errorf("runsc flags without a network %q", got)
	}
	if got := rc.flags("s1", 512, false); got != nil {
		t.Errorf("runc flags %q", got)
	}
	if got := rs.passFiles(1); !slices.Equal(got, []string{"--pass-fd", "3:3"}) {
		t.Errorf("runsc passes %q", got)
	}
	if got := rc.passFiles(1); !slices.Equal(got, []string{"--preserve-fds", "1"}) {
		t.Errorf("runc passes %q", got)
	}
	if rs.hibernate() != nil || rs.shareGPUs() != nil {
		t.Error("runsc refuses to hibernate or share GPUs")
	}
	if sbx.ErrorCode(rc.hibernate()) != sbx.EUnsupported || sbx.ErrorCode(rc.shareGPUs()) != sbx.EUnsupported {
		t.Errorf("runc: hibernate %v, GPUs %v", rc.hibernate(), rc.shareGPUs())
	}
	if root, err := rs.root("s1", "/templates/base/rootfs"); root != "/templates/base/rootfs" || err != nil {
		t.Errorf("runsc root %q, %v: runsc lays its own layer over the template's tree", root, err)
	}
	if c := rs.command(); c.Name() != "runsc" || c.Root != "/data/runsc" || c.Path != "/bin/runsc" {
		t.Errorf("runsc command %+v", c)
	}
	if c := rc.command(); c.Name() != "runc" || c.Root != "/data/runc" || c.Path != "runc" {
		t.Errorf("runc command %+v", c)
	}
}
