package pricing_test

import (
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/pricing"
)

var t0 = time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)

func TestCostByStateAndResource(t *testing.T) {
	table := pricing.Table{
		{Resource: pricing.CPU, NanosPerSecond: 1000},
		{Resource: pricing.Memory, NanosPerSecond: 2048},
		{Resource: pricing.PausedStorage, NanosPerSecond: 1024},
		{Resource: pricing.GPU, GPUType: "h100", NanosPerSecond: 400},
		{Resource: pricing.GPU, GPUType: "h100", GPUShare: 25, NanosPerSecond: 150},
		{Resource: pricing.GPU, NanosPerSecond: 1000},
	}
	res := sbx.Resources{MilliCPU: 1500, MemoryMB: 512}
	ten := t0.Add(10 * time.Second)
	if c := table.Cost("", res, sbx.StateRunning, t0, ten); c != (pricing.Charge{CPU: 15_000, Memory: 10_240}) {
		t.Errorf("running: %+v", c)
	}
	if c := table.Cost("", res, sbx.StatePaused, t0, ten); c != (pricing.Charge{Storage: 5_120}) {
		t.Errorf("paused: %+v", c)
	}
	for _, st := range []sbx.State{sbx.StateStarting, sbx.StateKilled, sbx.StateFailed} {
		if c := table.Cost("", res, st, t0, ten); c.Total() != 0 {
			t.Errorf("%s: %+v, want nothing", st, c)
		}
	}
	for _, tc := range []struct {
		gpu  sbx.GPURequest
		want int64
	}{
		{sbx.GPURequest{Type: "h100", Count: 2, Fraction: 100}, 8_000}, // whole-card rate × 2 cards × 10 s
		{sbx.GPURequest{Type: "h100", Count: 1, Fraction: 50}, 2_000},  // half the whole-card rate
		{sbx.GPURequest{Type: "h100", Count: 1, Fraction: 25}, 1_500},  // the share's own rate
		{sbx.GPURequest{Type: "b200", Count: 1, Fraction: 75}, 7_500},  // any type's rate, in proportion
	} {
		res.GPU = &tc.gpu
		if c := table.Cost("", res, sbx.StateRunning, t0, ten); c.GPU != tc.want {
			t.Errorf("%+v: gpu %d, want %d", tc.gpu, c.GPU, tc.want)
		}
	}
}

// A rate applies from its effective time on: an interval across it pays
// each part at its own price, and earlier time keeps the old one.
func TestRateChangesSplitTheInterval(t *testing.T) {
	table := pricing.Table{
		{Resource: pricing.CPU, NanosPerSecond: 1000},
		{Resource: pricing.CPU, NanosPerSecond: 5000, EffectiveAt: t0.Add(4 * time.Second)},
		{Resource: pricing.CPU, NanosPerSecond: 100, EffectiveAt: t0.Add(time.Hour)},
	}
	res := sbx.Resources{MilliCPU: 1000}
	if c := table.Cost("", res, sbx.StateRunning, t0, t0.Add(10*time.Second)); c.CPU != 4*1000+6*5000 {
		t.Errorf("across the change: %d", c.CPU)
	}
	if c := table.Cost("", res, sbx.StateRunning, t0, t0.Add(4*time.Second)); c.CPU != 4000 {
		t.Errorf("before the change: %d", c.CPU)
	}
}

func TestCostDoesNotOverflow(t *testing.T) {
	table := pricing.Table{{Resource: pricing.GPU, NanosPerSecond: 2_000_000}}
	res := sbx.Resources{GPU: &sbx.GPURequest{Type: "h100", Count: 8, Fraction: 100}}
	month := 30 * 24 * time.Hour
	if c := table.Cost("", res, sbx.StateRunning, t0, t0.Add(month)); c.GPU != 2_000_000*8*int64(month/time.Second) {
		t.Errorf("a month of 8 GPUs: %d", c.GPU)
	}
}

func TestCheck(t *testing.T) {
	for _, r := range []pricing.Rate{
		{Resource: "disk", NanosPerSecond: 1},
		{Resource: pricing.CPU, GPUType: "h100", NanosPerSecond: 1},
		{Resource: pricing.GPU, GPUShare: 30, NanosPerSecond: 1},
		{Resource: pricing.CPU, NanosPerSecond: -1},
	} {
		if err := r.Check(); sbx.ErrorCode(err) != sbx.EInvalid {
			t.Errorf("%+v: %v, want invalid", r, err)
		}
	}
	for _, r := range pricing.Default() {
		if err := r.Check(); err != nil {
			t.Errorf("default %+v: %v", r, err)
		}
	}
}

func TestParseAndFormat(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1": 1_000_000, "0.5": 500_000, "12.000001": 12_000_001, "3.25": 3_250_000} {
		got, err := pricing.ParseMicros(in)
		if err != nil || got != want {
			t.Errorf("ParseMicros(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "+1", "1.0000001", "abc", "1.-5", ".5", "1e3", "99999999999999999"} {
		if _, err := pricing.ParseMicros(in); err == nil {
			t.Errorf("ParseMicros(%q) took it", in)
		}
	}
	if got := pricing.FormatMicros(12_000_001); got != "12.000001" {
		t.Errorf("FormatMicros: %s", got)
	}
	if got := pricing.FormatNanos(14_000); got != "0.000014000" {
		t.Errorf("FormatNanos: %s", got)
	}
	if n, _ := pricing.ParseNanos("0.000014"); n != 14_000 {
		t.Errorf("ParseNanos: %d", n)
	}
}

// A provider's own rate prices its sandboxes from when it takes effect;
// before, and for a resource it has no rate of, and for other providers,
// the rate of any provider does.
func TestProviderRates(t *testing.T) {
	table := pricing.Table{
		{Resource: pricing.CPU, NanosPerSecond: 1000},
		{Resource: pricing.Memory, NanosPerSecond: 1024},
		{Provider: "docker", Resource: pricing.CPU, NanosPerSecond: 500, EffectiveAt: t0.Add(4 * time.Second)},
		{Provider: "docker", Resource: pricing.GPU, NanosPerSecond: 100},
		{Resource: pricing.GPU, NanosPerSecond: 1000},
	}
	res := sbx.Resources{MilliCPU: 1000, MemoryMB: 1024, GPU: &sbx.GPURequest{Count: 1, Fraction: 100}}
	ten := t0.Add(10 * time.Second)
	if c := table.Cost("docker", res, sbx.StateRunning, t0, ten); c != (pricing.Charge{CPU: 4*1000 + 6*500, Memory: 10 * 1024, GPU: 10 * 100}) {
		t.Errorf("docker: %+v", c)
	}
	if c := table.Cost("local", res, sbx.StateRunning, t0, ten); c != (pricing.Charge{CPU: 10 * 1000, Memory: 10 * 1024, GPU: 10 * 1000}) {
		t.Errorf("local: %+v", c)
	}
	for _, bad := range []pricing.Rate{
		{Provider: "docker", Resource: pricing.SnapshotStorage},
		{Provider: "Docker!", Resource: pricing.CPU},
	} {
		if err := bad.Check(); sbx.ErrorCode(err) != sbx.EInvalid {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
