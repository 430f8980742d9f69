package gpu

import (
	"fmt"
	"os"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// controlNodes are the device nodes every GPU sandbox needs besides its
// cards': the driver's control device and unified memory. They are the only
// ones runsc's nvproxy exposes apart from /dev/nvidia<N> (see
// ShouldExposeNvidiaDevice in gVisor's runsc/cmd/sandboxsetup/gofer_mount.go),
// so /dev/nvidia-uvm-tools and /dev/nvidia-modeset are left out.
var controlNodes = []string{"/dev/nvidiactl", "/dev/nvidia-uvm"}

// DeviceNodes returns the host device paths a sandbox with placement pl
// needs: /dev/nvidiactl and /dev/nvidia-uvm, always (nvproxy turns on when
// /dev/nvidiactl is among the spec's devices, and CUDA cannot run without
// unified memory), then /dev/nvidia<index> for each card, once. A share's
// card is looked up in inv by UUID, so the index is the card's current one;
// a card inv lacks keeps the index recorded in the share. An empty placement
// needs no devices.
//
// The paths are not checked here: OCIDevices fails, naming the path, when
// one is missing (/dev/nvidia-uvm appears only once the nvidia-uvm module is
// loaded, e.g. by nvidia-modprobe -u -c=0).
func DeviceNodes(pl Placement, inv Inventory) []string {
	if len(pl.Shares) == 0 {
		return nil
	}
	paths := slices.Clone(controlNodes)
	for _, s := range pl.Shares {
		index := s.Index
		if i := slices.IndexFunc(inv, func(c Card) bool { return c.UUID == s.UUID }); i >= 0 {
			index = inv[i].Index
		}
		if path := fmt.Sprintf("/dev/nvidia%d", index); !slices.Contains(paths, path) {
			paths = append(paths, path)
		}
	}
	return paths
}

// OCIDevices describes the host's character devices at paths as OCI devices
// for a spec's linux.devices: the same path in the sandbox, the host's major
// and minor numbers, mode 0666, owned by root. A path that is missing or not
// a character device is an error naming it.
func OCIDevices(paths []string) ([]specs.LinuxDevice, error) {
	devices := make([]specs.LinuxDevice, 0, len(paths))
	for _, path := range paths {
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil {
			return nil, fmt.Errorf("GPU device %s: %w", path, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFCHR {
			return nil, fmt.Errorf("GPU device %s is not a character device", path)
		}
		mode := os.FileMode(0o666)
		var root uint32
		devices = append(devices, specs.LinuxDevice{
			Path:     path,
			Type:     "c",
			Major:    int64(unix.Major(uint64(st.Rdev))),
			Minor:    int64(unix.Minor(uint64(st.Rdev))),
			FileMode: &mode,
			UID:      &root,
			GID:      &root,
		})
	}
	return devices, nil
}
