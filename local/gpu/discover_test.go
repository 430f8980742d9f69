package gpu

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// smiOutput is what nvidia-smi prints for queryArgs on a host with two
// H100s and an A100.
const smiOutput = `0, GPU-5a3f6a2e-9a8c-3f1d-b2c4-7e0d1f2a3b4c, NVIDIA H100 80GB HBM3, 81559
1, GPU-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0, NVIDIA H100 80GB HBM3, 81559
2, GPU-9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0, NVIDIA A100-SXM4-40GB, 40960
`

func TestParseNvidiaSMI(t *testing.T) {
	inv, err := parseNvidiaSMI(smiOutput)
	if err != nil {
		t.Fatal(err)
	}
	want := Inventory{
		{Index: 0, UUID: "GPU-5a3f6a2e-9a8c-3f1d-b2c4-7e0d1f2a3b4c", Name: "NVIDIA H100 80GB HBM3", Type: "h100", MemoryMB: 81559},
		{Index: 1, UUID: "GPU-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", Name: "NVIDIA H100 80GB HBM3", Type: "h100", MemoryMB: 81559},
		{Index: 2, UUID: "GPU-9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0", Name: "NVIDIA A100-SXM4-40GB", Type: "a100", MemoryMB: 40960},
	}
	if !reflect.DeepEqual(inv, want) {
		t.Fatalf("parseNvidiaSMI = %+v\nwant %+v", inv, want)
	}
	for _, tc := range []struct{ out, want string }{
		{"0, GPU-1, NVIDIA L4\n", "wrong number of fields"},
		{"x, GPU-1, NVIDIA L4, 23034\n", `index "x" is not a number`},
		{"0, GPU-1, NVIDIA L4, [N/A]\n", `memory.total "[N/A]" is not a number`},
	} {
		if _, err := parseNvidiaSMI(tc.out); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseNvidiaSMI(%q) = %v; want an error containing %q", tc.out, err, tc.want)
		}
	}
}

func TestNormalizeType(t *testing.T) {
	for name, want := range map[string]string{
		"NVIDIA H100 80GB HBM3":   "h100",
		"NVIDIA H100 PCIe":        "h100",
		"NVIDIA A100-SXM4-40GB":   "a100",
		"NVIDIA A100 80GB PCIe":   "a100",
		"Tesla T4":                "t4",
		"Tesla V100-SXM2-16GB":    "v100",
		"NVIDIA A10G":             "a10g",
		"NVIDIA L4":               "l4",
		"NVIDIA L40S":             "l40s",
		"NVIDIA H200":             "h200",
		"NVIDIA GeForce RTX 4090": "4090",
		"NVIDIA RTX A6000":        "a6000",
		"Quadro RTX 8000":         "8000",
		"NVIDIA":                  "nvidia",
	} {
		if got := normalizeType(name); got != want {
			t.Errorf("normalizeType(%q) = %q, want %q", name, got, want)
		}
	}
}

// fakeSMI writes an executable shell script standing in for nvidia-smi.
func fakeSMI(t *testing.T, script string) string {
	path := filepath.Join(t.TempDir(), "nvidia-smi")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDiscoverRunsNvidiaSMI(t *testing.T) {
	smi := fakeSMI(t, `[ "$*" = "--query-gpu=index,uuid,name,memory.total --format=csv,noheader,nounits" ] || { echo "unexpected arguments: $*" >&2; exit 2; }
cat <<'END'
`+smiOutput+`END
`)
	inv, err := DiscoverWith(context.Background(), smi)
	if err != nil {
		t.Fatal(err)
	}
	if got := inv.String(); got != "h100 ×2, a100 ×1" {
		t.Fatalf("DiscoverWith found %s", got)
	}
}

func TestDiscoverWithoutNvidiaSMIFindsNothing(t *testing.T) {
	for _, path := range []string{filepath.Join(t.TempDir(), "nvidia-smi"), "sbx-no-such-nvidia-smi"} {
		inv, err := DiscoverWith(context.Background(), path)
		if err != nil || inv == nil || len(inv) != 0 {
			t.Errorf("DiscoverWith(%q) = %v, %v; want an empty inventory and no error", path, inv, err)
		}
	}
}

func TestDiscoverWithoutCardsFindsNothing(t *testing.T) {
	inv, err := DiscoverWith(context.Background(), fakeSMI(t, "echo 'No devices were found'\nexit 6\n"))
	if err != nil || len(inv) != 0 {
		t.Fatalf("DiscoverWith = %v, %v; want an empty inventory and no error", inv, err)
	}
}

func TestDiscoverReportsAFailingNvidiaSMI(t *testing.T) {
	smi := fakeSMI(t, "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"\nexit 9\n")
	_, err := DiscoverWith(context.Background(), smi)
	if err == nil || !strings.Contains(err.Error(), "couldn't communicate with the NVIDIA driver") || !strings.Contains(err.Error(), "exit status 9") {
		t.Fatalf("DiscoverWith = %v; want an error with nvidia-smi's output and exit status", err)
	}
}
