// Package pricing prices sandbox time: the rate table, and what a sandbox
// owes for an interval in a state. Prices are integers, in nano-credits per
// second (1 credit = 10^9 nano-credits); the package holds no state and
// touches no database.
package pricing

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
)

// Resource is what a rate prices.
type Resource string

// The resources. CPU is per vCPU, Memory, PausedStorage and SnapshotStorage
// per GiB, GPU per card at a share; all per second.
const (
	CPU           Resource = "cpu"            // while running
	Memory        Resource = "memory"         // while running
	GPU           Resource = "gpu"            // while running
	PausedStorage Resource = "paused_storage" // while paused: the held state, the sandbox's memory size
	// SnapshotStorage is what a snapshot holds on disk, while it is held.
	SnapshotStorage Resource = "snapshot_storage"
	// VolumeStorage is a volume's cap, while the volume lives.
	VolumeStorage Resource = "volume_storage"
)

// Resources lists the resources.
var Resources = []Resource{CPU, Memory, GPU, PausedStorage, SnapshotStorage, VolumeStorage}

// Shares are the GPU shares a rate may name; 0 names the price of a whole
// card, which a share without its own rate pays in proportion.
var Shares = []int{0, 25, 50, 75, 100}

// Rate is a price from EffectiveAt on.
type Rate struct {
	// Provider is the provider whose sandboxes pay it; "" is any provider
	// without a rate of its own for the resource (cpu, memory, gpu and
	// paused_storage: what sandboxes pay).
	Provider       string
	Resource       Resource
	GPUType        string // GPU only; "" is any type without its own rate
	GPUShare       int    // GPU only: one of Shares
	NanosPerSecond int64
	EffectiveAt    time.Time
}

// Check says what is wrong with r, if anything.
func (r Rate) Check() error {
	switch r.Resource {
	case CPU, Memory, PausedStorage, SnapshotStorage, VolumeStorage:
		if r.GPUType != "" || r.GPUShare != 0 {
			return sbx.Invalid("gpu_type", "a %s rate names no GPU type or share", r.Resource)
		}
	case GPU:
		if !validShare(r.GPUShare) {
			return sbx.Invalid("gpu_share", "gpu_share %d: want 25, 50, 75 or 100 (or 0: the price of a whole card)", r.GPUShare)
		}
	default:
		return sbx.Invalid("resource", "resource %q: want one of cpu, memory, gpu, paused_storage, snapshot_storage, volume_storage", r.Resource)
	}
	if r.Provider != "" && (r.Resource == SnapshotStorage || r.Resource == VolumeStorage) {
		return sbx.Invalid("provider", "a %s rate names no provider: it prices what is held, not a sandbox", r.Resource)
	}
	if len(r.Provider) > 64 || strings.ContainsFunc(r.Provider, func(c rune) bool { return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') }) {
		return sbx.Invalid("provider", "provider %q: want a provider's name (lowercase letters, digits and '-')", r.Provider)
	}
	if r.NanosPerSecond < 0 {
		return sbx.Invalid("credits_per_second", "a price cannot be negative")
	}
	return nil
}

func validShare(s int) bool {
	for _, v := range Shares {
		if s == v {
			return true
		}
	}
	return false
}

// Default is the table a ledger starts with, effective since always: about
// E2B's and Modal's list prices at one credit per US dollar.
func Default() Table {
	return Table{
		{Resource: CPU, NanosPerSecond: 14_000},                     // 0.000014 per vCPU-second
		{Resource: Memory, NanosPerSecond: 4_500},                   // 0.0000045 per GiB-second
		{Resource: PausedStorage, NanosPerSecond: 40},               // 0.00000004 per GiB-second, about 0.10 per GiB-month
		{Resource: SnapshotStorage, NanosPerSecond: 40},             // the same: about 0.10 per GiB-month
		{Resource: VolumeStorage, NanosPerSecond: 40},               // the same
		{Resource: GPU, NanosPerSecond: 1_100_000},                  // any other type: as an H100
		{Resource: GPU, GPUType: "h100", NanosPerSecond: 1_100_000}, // about 3.96 an hour
		{Resource: GPU, GPUType: "a100", NanosPerSecond: 700_000},   // about 2.52 an hour
		{Resource: GPU, GPUType: "l40s", NanosPerSecond: 540_000},   // about 1.94 an hour
		{Resource: GPU, GPUType: "a10g", NanosPerSecond: 310_000},   // about 1.12 an hour
		{Resource: GPU, GPUType: "l4", NanosPerSecond: 230_000},     // about 0.83 an hour
		{Resource: GPU, GPUType: "t4", NanosPerSecond: 165_000},     // about 0.59 an hour
	}
}

// Table is every rate ever set, in any order.
type Table []Rate

// Charge is what an interval costs, per resource, in nano-credits.
type Charge struct {
	CPU, Memory, GPU, Storage int64
}

// Total is the sum of the resources.
func (c Charge) Total() int64 { return c.CPU + c.Memory + c.GPU + c.Storage }

// Cost prices [from, to) of a sandbox of provider holding res in state:
// running pays CPU, memory and GPU; paused pays storage for its memory;
// other states nothing. Each part of the interval pays the rates effective
// then, the provider's own where it has one, else any provider's.
func (t Table) Cost(provider string, res sbx.Resources, state sbx.State, from, to time.Time) Charge {
	var c Charge
	if !to.After(from) || (state != sbx.StateRunning && state != sbx.StatePaused) {
		return c
	}
	cuts := []time.Time{from}
	for _, r := range t {
		if r.EffectiveAt.After(from) && r.EffectiveAt.Before(to) {
			cuts = append(cuts, r.EffectiveAt)
		}
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i].Before(cuts[j]) })
	cuts = append(cuts, to)
	for i := 0; i+1 < len(cuts); i++ {
		at, micros := cuts[i], uint64(cuts[i+1].Sub(cuts[i]).Microseconds())
		if micros == 0 {
			continue
		}
		if state == sbx.StatePaused {
			c.Storage += cost(t.price(provider, PausedStorage, "", 0, at), uint64(res.MemoryMB), micros, 1024)
			continue
		}
		c.CPU += cost(t.price(provider, CPU, "", 0, at), uint64(res.MilliCPU), micros, 1000)
		c.Memory += cost(t.price(provider, Memory, "", 0, at), uint64(res.MemoryMB), micros, 1024)
		if g := res.GPU; g != nil && g.Count > 0 {
			share := g.Fraction
			if share == 0 {
				share = 100
			}
			c.GPU += cost(t.gpuPrice(provider, g.Type, share, at), uint64(g.Count)*uint64(share), micros, 100)
		}
	}
	return c
}

// HeldCost prices holding bytes of storage of resource (SnapshotStorage,
// VolumeStorage) over [from, to), in nano-credits, each part of the
// interval at the rate effective then.
func (t Table) HeldCost(res Resource, bytes int64, from, to time.Time) int64 {
	if !to.After(from) || bytes <= 0 {
		return 0
	}
	cuts := []time.Time{from}
	for _, r := range t {
		if r.Resource == res && r.EffectiveAt.After(from) && r.EffectiveAt.Before(to) {
			cuts = append(cuts, r.EffectiveAt)
		}
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i].Before(cuts[j]) })
	cuts = append(cuts, to)
	var n int64
	mib := uint64((bytes + 1<<20 - 1) >> 20)
	for i := 0; i+1 < len(cuts); i++ {
		n += cost(t.price("", res, "", 0, cuts[i]), mib, uint64(cuts[i+1].Sub(cuts[i]).Microseconds()), 1024)
	}
	return n
}

// cost is nanosPerSecond × quantity/unit × micros/10^6, rounded down,
// computed in 128 bits (whose quotient fits 64 bits for any interval
// shorter than years).
func cost(nanosPerSecond int64, quantity, micros, unit uint64) int64 {
	if nanosPerSecond <= 0 || quantity == 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(nanosPerSecond), quantity)
	hi2, lo2 := bits.Mul64(lo, micros)
	hi = hi*micros + hi2
	q, _ := bits.Div64(hi%(unit*1_000_000), lo2, unit*1_000_000)
	return int64(q)
}

// price is the rate of a resource effective at at for provider's
// sandboxes: of the provider's own rates, else of any provider's, the one
// with the latest EffectiveAt not after it; -1 when there is none.
func (t Table) price(provider string, res Resource, gpuType string, share int, at time.Time) int64 {
	for _, p := range []string{provider, ""} {
		best, found := Rate{}, false
		for _, r := range t {
			if r.Provider == p && r.Resource == res && r.GPUType == gpuType && r.GPUShare == share && !r.EffectiveAt.After(at) &&
				(!found || !r.EffectiveAt.Before(best.EffectiveAt)) {
				best, found = r, true
			}
		}
		if found {
			return best.NanosPerSecond
		}
		if p == "" {
			break
		}
	}
	return -1
}

// gpuPrice is the price per second of share percent of one card of type typ,
// times 100 (cost divides by 100): the type's rate for that share, else its
// whole-card rate in proportion, else the same for any type.
func (t Table) gpuPrice(provider, typ string, share int, at time.Time) int64 {
	for _, ty := range []string{typ, ""} {
		if p := t.price(provider, GPU, ty, share, at); p >= 0 {
			return p * 100 / int64(share)
		}
		if p := t.price(provider, GPU, ty, 0, at); p >= 0 {
			return p
		}
	}
	return 0
}

// FormatNanos writes nano-credits as a decimal number of credits.
func FormatNanos(nanos int64) string { return format(nanos, 9) }

// FormatMicros writes micro-credits as a decimal number of credits.
func FormatMicros(micros int64) string { return format(micros, 6) }

func format(n int64, digits int) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	unit := int64(math.Pow10(digits))
	return fmt.Sprintf("%s%d.%0*d", sign, n/unit, digits, n%unit)
}

// ParseMicros reads a decimal number of credits, at most 6 decimals, as
// micro-credits.
func ParseMicros(s string) (int64, error) { return parse(s, 6) }

// ParseNanos reads a decimal number of credits, at most 9 decimals, as
// nano-credits.
func ParseNanos(s string) (int64, error) { return parse(s, 9) }

func parse(s string, digits int) (int64, error) {
	whole, frac, _ := strings.Cut(s, ".")
	bad := fmt.Errorf("%q is not a number of credits with at most %d decimals", s, digits)
	if whole == "" || len(frac) > digits || strings.HasPrefix(whole, "+") || strings.HasPrefix(whole, "-") {
		return 0, bad
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > math.MaxInt64/int64(math.Pow10(digits))-1 {
		return 0, bad
	}
	f := int64(0)
	if frac != "" {
		if f, err = strconv.ParseInt(frac+strings.Repeat("0", digits-len(frac)), 10, 64); err != nil || f < 0 || strings.ContainsAny(frac, "+-") {
			return 0, bad
		}
	}
	return w*int64(math.Pow10(digits)) + f, nil
}
