package gpu

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sbxdev/sbx"
)

func gpus(typ string, count, fraction int) sbx.GPURequest {
	return sbx.GPURequest{Type: typ, Count: count, Fraction: fraction}
}

func inventory(t *testing.T, text string) Inventory {
	t.Helper()
	inv, err := ParseInventory(text)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// step is one call to a Placer: Place for owner (or Release of release), and
// the placement (as its String) or the error it must give.
type step struct {
	owner   string
	req     sbx.GPURequest
	prefer  []string
	release string
	want    string   // the placement, e.g. "h100: card 0 50%"
	err     string   // or the error message
	code    sbx.Code // and its code
}

func TestPlace(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inventory string
		steps     []step
	}{
		{"fractions add up to one card", "h100:1", []step{
			{owner: "a", req: gpus("h100", 1, 50), want: "h100: card 0 50%"},
			{owner: "b", req: gpus("h100", 1, 25), want: "h100: card 0 25%"},
			{owner: "c", req: gpus("h100", 1, 25), want: "h100: card 0 25%"},
			{owner: "d", req: gpus("h100", 1, 25), code: sbx.EConflict,
				err: "not enough free h100 capacity: asked for 1 × 25%, free: card 0 0%"},
		}},
		{"four quarters fill a card, the fifth is refused", "h100:1", []step{
			{owner: "a", req: gpus("h100", 1, 25), want: "h100: card 0 25%"},
			{owner: "b", req: gpus("h100", 1, 25), want: "h100: card 0 25%"},
			{owner: "c", req: gpus("h100", 1, 25), want: "h100: card 0 25%"},
			{owner: "d", req: gpus("h100", 1, 25), want: "h100: card 0 25%"},
			{owner: "e", req: gpus("h100", 1, 25), code: sbx.EConflict,
				err: "not enough free h100 capacity: asked for 1 × 25%, free: card 0 0%"},
		}},
		{"whole cards", "h100:3", []step{
			{owner: "a", req: gpus("h100", 1, 50), want: "h100: card 0 50%"},
			{owner: "b", req: gpus("h100", 2, 100), want: "h100: card 1 100%, card 2 100%"},
			{owner: "c", req: gpus("h100", 1, 100), code: sbx.EConflict,
				err: "not enough free h100 capacity: asked for 1 × 100%, free: card 0 50%, card 1 0%, card 2 0%"},
		}},
		{"more cards than free", "h100:2", []step{
			{owner: "a", req: gpus("h100", 1, 50), want: "h100: card 0 50%"},
			{owner: "b", req: gpus("h100", 1, 75), want: "h100: card 1 75%"},
			{owner: "c", req: gpus("h100", 2, 100), code: sbx.EConflict,
				err: "not enough free h100 capacity: asked for 2 × 100%, free: card 0 50%, card 1 25%"},
		}},
		{"type matched without regard to case, among others", "a10g:1,h100:2", []step{
			{owner: "a", req: gpus("H100", 1, 100), want: "h100: card 1 100%"},
			{owner: "b", req: gpus("a10g", 1, 100), want: "a10g: card 0 100%"},
		}},
		{"a type the host lacks", "a10g:1", []step{
			{owner: "a", req: gpus("h100", 1, 100), code: sbx.EConflict,
				err: `no GPU of type "h100" on this host (it has: a10g ×1)`},
		}},
		{"a host without GPUs", "", []step{
			{owner: "a", req: gpus("h100", 1, 25), code: sbx.EConflict, err: "no GPU on this host"},
		}},
		{"release frees the share", "h100:1", []step{
			{owner: "a", req: gpus("h100", 1, 100), want: "h100: card 0 100%"},
			{owner: "b", req: gpus("h100", 1, 25), code: sbx.EConflict, err: "free: card 0 0%"},
			{release: "a"},
			{release: "a"},
			{release: "never-placed"},
			{owner: "b", req: gpus("h100", 1, 25), want: "h100: card 0 25%"},
			{owner: "a", req: gpus("h100", 1, 75), want: "h100: card 0 75%"},
		}},
		{"best fit packs partly used cards first", "h100:3", []step{
			{owner: "a", req: gpus("h100", 1, 50), want: "h100: card 0 50%"},
			{owner: "b", req: gpus("h100", 1, 25), want: "h100: card 0 25%"},
			{owner: "c", req: gpus("h100", 1, 75), want: "h100: card 1 75%"},
			{owner: "d", req: gpus("h100", 1, 25), want: "h100: card 0 25%"},
			{owner: "e", req: gpus("h100", 1, 25), want: "h100: card 1 25%"},
			{owner: "f", req: gpus("h100", 1, 100), want: "h100: card 2 100%"},
		}},
		{"preferred cards come first when they fit", "h100:3", []step{
			{owner: "a", req: gpus("h100", 1, 50), want: "h100: card 0 50%"},
			{owner: "b", req: gpus("h100", 1, 50), prefer: []string{"configured-2"}, want: "h100: card 2 50%"},
			{owner: "c", req: gpus("h100", 1, 75), prefer: []string{"configured-0", "configured-2"}, want: "h100: card 1 75%"},
			{owner: "d", req: gpus("h100", 2, 100), prefer: []string{"configured-1", "GPU-elsewhere"}, code: sbx.EConflict,
				err: "free: card 0 50%, card 1 25%, card 2 50%"},
			{release: "a"},
			{release: "b"},
			{owner: "d", req: gpus("h100", 2, 100), prefer: []string{"configured-2", "configured-1"}, want: "h100: card 2 100%, card 0 100%"},
		}},
		{"placing again for an owner", "h100:2", []step{
			{owner: "a", req: gpus("h100", 1, 50), want: "h100: card 0 50%"},
			{owner: "a", req: gpus("H100", 1, 50), want: "h100: card 0 50%"},
			{owner: "a", req: gpus("h100", 1, 100), code: sbx.EConflict,
				err: `"a" already holds GPUs (h100: card 0 50%); release them before placing again`},
			{owner: "b", req: gpus("h100", 1, 75), want: "h100: card 1 75%"},
		}},
		{"malformed requests", "h100:2", []step{
			{owner: "a", req: gpus("", 1, 100), code: sbx.EInvalid, err: "gpu.type is required"},
			{owner: "a", req: gpus("h100", 0, 100), code: sbx.EInvalid, err: "gpu.count must be at least 1, not 0"},
			{owner: "a", req: gpus("h100", 1, 0), code: sbx.EInvalid, err: "gpu.fraction must be 25, 50, 75 or 100, not 0"},
			{owner: "a", req: gpus("h100", 1, 30), code: sbx.EInvalid, err: "gpu.fraction must be 25, 50, 75 or 100, not 30"},
			{owner: "a", req: gpus("h100", 2, 50), code: sbx.EInvalid, err: "gpu.fraction below 100 needs gpu.count 1, not 2"},
			{owner: "a", req: gpus("h100", 2, 100), want: "h100: card 0 100%, card 1 100%"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPlacer(inventory(t, tc.inventory))
			for n, s := range tc.steps {
				if s.release != "" {
					p.Release(s.release)
					continue
				}
				pl, err := p.Place(s.owner, s.req, s.prefer)
				switch {
				case s.err == "" && err != nil:
					t.Fatalf("step %d: Place(%s, %+v) = %v", n+1, s.owner, s.req, err)
				case s.err == "" && pl.String() != s.want:
					t.Fatalf("step %d: Place(%s, %+v) = %s, want %s", n+1, s.owner, s.req, pl, s.want)
				case s.err != "" && (err == nil || !strings.Contains(err.Error(), s.err) || sbx.ErrorCode(err) != s.code):
					t.Fatalf("step %d: Place(%s, %+v) = %s, %v; want a %s error containing %q", n+1, s.owner, s.req, pl, err, s.code, s.err)
				}
			}
			checkBooks(t, p)
		})
	}
}

// checkBooks checks the Placer's invariant: no card is placed beyond 100%.
func checkBooks(t *testing.T, p *Placer) {
	t.Helper()
	for _, u := range p.Usage() {
		if u.Percent > 100 || u.Percent < 0 {
			t.Fatalf("card %d is %d%% placed (owners %v)", u.Card.Index, u.Percent, u.Owners)
		}
	}
}

func TestUsage(t *testing.T) {
	p := NewPlacer(inventory(t, "h100:2"))
	for _, owner := range []string{"b", "a"} {
		if _, err := p.Place(owner, gpus("h100", 1, 25), nil); err != nil {
			t.Fatal(err)
		}
	}
	card1 := p.Inventory()[1]
	want := []CardUsage{
		{Card: p.Inventory()[0], Percent: 50, Owners: []string{"a", "b"}},
		{Card: card1, Percent: 0},
	}
	if got := p.Usage(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Usage = %+v\nwant %+v", got, want)
	}
}

func TestAdoptAfterRestart(t *testing.T) {
	inv := inventory(t, "h100:3")
	before := NewPlacer(inv)
	recorded := map[string]Placement{}
	for _, r := range []struct {
		owner string
		req   sbx.GPURequest
	}{{"a", gpus("h100", 1, 50)}, {"b", gpus("h100", 2, 100)}} {
		pl, err := before.Place(r.owner, r.req, nil)
		if err != nil {
			t.Fatal(err)
		}
		recorded[r.owner] = pl
	}
	if recorded["a"].String() != "h100: card 0 50%" || recorded["b"].String() != "h100: card 1 100%, card 2 100%" {
		t.Fatalf("placed before the restart: %v", recorded)
	}

	after := NewPlacer(inv)
	for owner, pl := range recorded {
		if err := after.Adopt(owner, pl); err != nil {
			t.Fatalf("Adopt(%s, %s) = %v", owner, pl, err)
		}
	}
	if err := after.Adopt("a", recorded["a"]); err != nil {
		t.Fatalf("adopting the same placement again: %v", err)
	}
	if !reflect.DeepEqual(after.Usage(), before.Usage()) {
		t.Fatalf("after adopting, Usage = %+v\nwant %+v", after.Usage(), before.Usage())
	}
	if _, err := after.Place("c", gpus("h100", 1, 75), nil); sbx.ErrorCode(err) != sbx.EConflict {
		t.Fatalf("75%% more beside the adopted placements: %v; want a conflict", err)
	}
	if pl, err := after.Place("c", gpus("h100", 1, 50), nil); err != nil || pl.String() != "h100: card 0 50%" {
		t.Fatalf("50%% beside the adopted placements: %s, %v", pl, err)
	}
	after.Release("b")
	if pl, err := after.Place("d", gpus("h100", 2, 100), nil); err != nil || len(pl.Shares) != 2 {
		t.Fatalf("after releasing an adopted placement: %s, %v", pl, err)
	}
}

func TestAdoptKeepsTheCurrentIndex(t *testing.T) {
	inv := Inventory{{Index: 0, UUID: "GPU-b", Type: "h100"}, {Index: 1, UUID: "GPU-a", Type: "h100"}}
	p := NewPlacer(inv)
	// Recorded when GPU-a was card 0.
	if err := p.Adopt("x", Placement{Type: "h100", Shares: []Share{{Index: 0, UUID: "GPU-a", Percent: 50}}}); err != nil {
		t.Fatal(err)
	}
	if pl, err := p.Place("x", gpus("h100", 1, 50), nil); err != nil || pl.String() != "h100: card 1 50%" {
		t.Fatalf("the adopted placement is %s, %v; want it on card 1, GPU-a's index now", pl, err)
	}
}

func TestAdoptRefusesWhatNoLongerFits(t *testing.T) {
	p := NewPlacer(inventory(t, "h100:2,a10g:1"))
	if err := p.Adopt("x", Placement{Type: "h100", Shares: []Share{{Index: 0, UUID: "configured-0", Percent: 75}}}); err != nil {
		t.Fatal(err)
	}
	share := func(uuid string, percent int) Share { return Share{UUID: uuid, Percent: percent} }
	for _, tc := range []struct {
		pl   Placement
		want string
	}{
		{Placement{Type: "h100", Shares: []Share{share("configured-1", 100), share("configured-0", 50)}}, "card 0 has only 25% free"},
		{Placement{Type: "h100", Shares: []Share{share("GPU-gone", 100)}}, "card GPU-gone (index 0) is not on this host (it has: h100 ×2, a10g ×1)"},
		{Placement{Type: "h100", Shares: []Share{share("configured-2", 100)}}, "card configured-2 is of type a10g now"},
		{Placement{Type: "h100", Shares: []Share{share("configured-1", 25), share("configured-1", 25)}}, "card configured-1 is named twice"},
		{Placement{Type: "h100", Shares: []Share{share("configured-1", 0)}}, "a share of 0% is not a share of a card"},
		{Placement{Type: "h100"}, "it has no shares"},
	} {
		err := p.Adopt("y", tc.pl)
		if err == nil || !strings.Contains(err.Error(), tc.want) || sbx.ErrorCode(err) != sbx.EConflict {
			t.Errorf("Adopt(%s) = %v; want a conflict containing %q", tc.pl, err, tc.want)
		}
	}
	if err := p.Adopt("x", Placement{Type: "h100", Shares: []Share{share("configured-1", 25)}}); err == nil || !strings.Contains(err.Error(), "it already holds h100: card 0 75%") {
		t.Errorf("adopting a second placement for x: %v", err)
	}
	// Nothing of the refused placements stuck: card 1 is whole.
	if pl, err := p.Place("z", gpus("h100", 1, 100), nil); err != nil || pl.String() != "h100: card 1 100%" {
		t.Fatalf("after the refusals: %s, %v", pl, err)
	}
}

// TestConcurrentPlacementNeverOvercommits places and releases from many
// goroutines, each holding up to two placements at a time, while keeping its
// own books of what each card holds between a Place and its Release: they
// must never pass 100%.
func TestConcurrentPlacementNeverOvercommits(t *testing.T) {
	p := NewPlacer(inventory(t, "h100:2,a10g:1"))
	var held [3]atomic.Int64 // per card, what returned and not yet released placements hold
	var placed, refused atomic.Int64
	requests := []sbx.GPURequest{gpus("h100", 1, 25), gpus("h100", 1, 50), gpus("h100", 1, 75), gpus("h100", 2, 100), gpus("a10g", 1, 50), gpus("a10g", 1, 100)}
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			owners := [2]string{fmt.Sprintf("sandbox-%d-a", g), fmt.Sprintf("sandbox-%d-b", g)}
			var mine [2]Placement
			release := func(k int) { // off the books first, then off the Placer's
				for _, s := range mine[k].Shares {
					held[s.Index].Add(-int64(s.Percent))
				}
				mine[k] = Placement{}
				p.Release(owners[k])
			}
			for i := range 200 {
				this, other := i%2, (i+1)%2
				pl, err := p.Place(owners[this], requests[(g+i)%len(requests)], nil)
				switch {
				case err == nil:
					placed.Add(1)
					mine[this] = pl
					for _, s := range pl.Shares {
						if total := held[s.Index].Add(int64(s.Percent)); total > 100 {
							t.Errorf("card %d holds %d%%", s.Index, total)
						}
					}
				case sbx.ErrorCode(err) == sbx.EConflict:
					refused.Add(1)
				default:
					t.Errorf("Place: %v", err)
					return
				}
				release(other)
			}
			release(0)
			release(1)
		})
	}
	wg.Wait()
	if placed.Load() == 0 || refused.Load() == 0 {
		t.Fatalf("%d placed, %d refused: the test did not contend", placed.Load(), refused.Load())
	}
	for _, u := range p.Usage() {
		if u.Percent != 0 || len(u.Owners) != 0 {
			t.Fatalf("after every release, card %d is %d%% placed (owners %v)", u.Card.Index, u.Percent, u.Owners)
		}
	}
}
