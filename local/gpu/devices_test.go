package gpu

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDeviceNodes(t *testing.T) {
	inv := Inventory{{Index: 0, UUID: "GPU-a", Type: "h100"}, {Index: 1, UUID: "GPU-b", Type: "h100"}, {Index: 2, UUID: "GPU-c", Type: "h100"}}
	pl := Placement{Type: "h100", Shares: []Share{
		{Index: 2, UUID: "GPU-c", Percent: 100},
		{Index: 5, UUID: "GPU-b", Percent: 100}, // recorded when GPU-b was card 5
		{Index: 7, UUID: "GPU-gone", Percent: 100},
	}}
	want := []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia2", "/dev/nvidia1", "/dev/nvidia7"}
	if got := DeviceNodes(pl, inv); !reflect.DeepEqual(got, want) {
		t.Fatalf("DeviceNodes = %q, want %q", got, want)
	}
	if got := DeviceNodes(Placement{}, inv); got != nil {
		t.Fatalf("DeviceNodes of no placement = %q, want none", got)
	}
}

func TestOCIDevices(t *testing.T) {
	devices, err := OCIDevices([]string{"/dev/null", "/dev/zero"})
	if err != nil {
		t.Fatal(err)
	}
	if len(devices) != 2 {
		t.Fatalf("OCIDevices = %+v, want two devices", devices)
	}
	// /dev/null and /dev/zero are character devices 1:3 and 1:5 on Linux.
	for i, want := range []struct {
		path         string
		major, minor int64
	}{{"/dev/null", 1, 3}, {"/dev/zero", 1, 5}} {
		d := devices[i]
		if d.Path != want.path || d.Type != "c" || d.Major != want.major || d.Minor != want.minor {
			t.Errorf("device %d = %s %s %d:%d, want %s c %d:%d", i, d.Path, d.Type, d.Major, d.Minor, want.path, want.major, want.minor)
		}
		if d.FileMode == nil || *d.FileMode != 0o666 || d.UID == nil || *d.UID != 0 || d.GID == nil || *d.GID != 0 {
			t.Errorf("device %s: mode %v, uid %v, gid %v; want 0666 owned by root", d.Path, d.FileMode, d.UID, d.GID)
		}
	}
}

func TestOCIDevicesRefusesWhatIsNotACharacterDevice(t *testing.T) {
	file := filepath.Join(t.TempDir(), "nvidia0")
	if err := os.WriteFile(file, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/dev/sbx-no-such-nvidia0": "GPU device /dev/sbx-no-such-nvidia0: no such file or directory",
		file:                       "GPU device " + file + " is not a character device",
	} {
		if _, err := OCIDevices([]string{"/dev/null", path}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("OCIDevices(%s) = %v; want an error containing %q", path, err, want)
		}
	}
}
