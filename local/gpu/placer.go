package gpu

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sbxdev/sbx"
)

// Share is a percentage of one card held by one owner.
type Share struct {
	Index   int    // the card's index
	UUID    string // the card's UUID: what identifies it across restarts
	Percent int    // 25, 50, 75 or 100
}

// Placement is what one owner holds: shares of one or more cards of a type.
type Placement struct {
	Type   string
	Shares []Share
}

// String describes the placement, e.g. "h100: card 0 50%" or "none".
func (pl Placement) String() string {
	if len(pl.Shares) == 0 {
		return "none"
	}
	parts := make([]string, len(pl.Shares))
	for i, s := range pl.Shares {
		parts[i] = fmt.Sprintf("card %d %d%%", s.Index, s.Percent)
	}
	return pl.Type + ": " + strings.Join(parts, ", ")
}

// CardUsage is how much of one card is placed, and with whom.
type CardUsage struct {
	Card    Card
	Percent int      // the sum of the owners' shares, at most 100
	Owners  []string // sorted
}

// Placer hands out shares of the inventory's cards to owners (sandboxes),
// never more than 100 percent of a card in all. It is safe for concurrent
// use. It keeps its books in memory only: after a restart, the owners' recorded
// placements are given back to a new Placer with Adopt.
type Placer struct {
	inv Inventory

	mu     sync.Mutex
	used   []int                // percent placed, per card (by position in inv)
	owners map[string]Placement // what each owner holds
}

// NewPlacer returns a Placer with inv's cards all free.
func NewPlacer(inv Inventory) *Placer {
	return &Placer{inv: slices.Clone(inv), used: make([]int, len(inv)), owners: map[string]Placement{}}
}

// Inventory returns the cards the Placer places on.
func (p *Placer) Inventory() Inventory { return slices.Clone(p.inv) }

// Place gives owner req.Count cards of type req.Type (matched without regard
// to case), a req.Fraction percent share of each. It picks by best fit: the
// cards with the least free capacity that still take the share, ties broken
// by index, so that whole cards stay free for whole-card requests. Cards in
// prefer (UUIDs, e.g. those the owner held before a pause) that take the
// share come first, in prefer's order.
//
// An owner holds one placement. Placing again for an owner that holds one
// returns that placement if it answers the same request (so a retried call is
// harmless) and is an EConflict error otherwise. A request that does not fit
// is an EConflict error naming what the host has or what is free; a malformed
// one is an EInvalid error.
func (p *Placer) Place(owner string, req sbx.GPURequest, prefer []string) (Placement, error) {
	if err := validate(req); err != nil {
		return Placement{}, err
	}
	typ := strings.ToLower(strings.TrimSpace(req.Type))
	p.mu.Lock()
	defer p.mu.Unlock()
	if held, ok := p.owners[owner]; ok {
		if held.answers(typ, req) {
			return held.clone(), nil
		}
		return Placement{}, sbx.Errorf(sbx.EConflict, "%q already holds GPUs (%s); release them before placing again", owner, held)
	}
	cards := p.cardsOfType(typ)
	if len(cards) == 0 {
		if len(p.inv) == 0 {
			return Placement{}, sbx.Errorf(sbx.EConflict, "no GPU on this host")
		}
		return Placement{}, sbx.Errorf(sbx.EConflict, "no GPU of type %q on this host (it has: %s)", typ, p.inv)
	}
	chosen := p.choose(cards, req.Count, req.Fraction, prefer)
	if chosen == nil {
		return Placement{}, sbx.Errorf(sbx.EConflict, "not enough free %s capacity: asked for %d × %d%%, free: %s",
			typ, req.Count, req.Fraction, p.freeText(cards))
	}
	pl := Placement{Type: typ}
	for _, i := range chosen {
		p.used[i] += req.Fraction
		pl.Shares = append(pl.Shares, Share{Index: p.inv[i].Index, UUID: p.inv[i].UUID, Percent: req.Fraction})
	}
	p.owners[owner] = pl
	return pl.clone(), nil
}

// validate checks a request as the API does, for callers that did not.
func validate(req sbx.GPURequest) error {
	switch {
	case strings.TrimSpace(req.Type) == "":
		return sbx.Invalid("gpu.type", "gpu.type is required, for example \"h100\"")
	case req.Count < 1:
		return sbx.Invalid("gpu.count", "gpu.count must be at least 1, not %d", req.Count)
	case req.Fraction != 25 && req.Fraction != 50 && req.Fraction != 75 && req.Fraction != 100:
		return sbx.Invalid("gpu.fraction", "gpu.fraction must be 25, 50, 75 or 100, not %d", req.Fraction)
	case req.Fraction < 100 && req.Count != 1:
		return sbx.Invalid("gpu.fraction", "gpu.fraction below 100 needs gpu.count 1, not %d", req.Count)
	}
	return nil
}

// answers reports whether pl is what req (of the normalized type typ) asks for.
func (pl Placement) answers(typ string, req sbx.GPURequest) bool {
	if pl.Type != typ || len(pl.Shares) != req.Count {
		return false
	}
	for _, s := range pl.Shares {
		if s.Percent != req.Fraction {
			return false
		}
	}
	return true
}

func (pl Placement) clone() Placement {
	return Placement{Type: pl.Type, Shares: slices.Clone(pl.Shares)}
}

// cardsOfType returns the positions of the cards of type typ.
func (p *Placer) cardsOfType(typ string) []int {
	var cards []int
	for i, c := range p.inv {
		if c.Type == typ {
			cards = append(cards, i)
		}
	}
	return cards
}

// choose returns count of cards with percent free, preferred ones first,
// then best fit; nil when fewer than count have room.
func (p *Placer) choose(cards []int, count, percent int, prefer []string) []int {
	rank := func(i int) int { // a card's place in prefer, or after all of them
		if r := slices.Index(prefer, p.inv[i].UUID); r >= 0 {
			return r
		}
		return len(prefer)
	}
	var fits []int
	for _, i := range cards {
		if p.used[i]+percent <= 100 {
			fits = append(fits, i)
		}
	}
	if len(fits) < count {
		return nil
	}
	slices.SortFunc(fits, func(a, b int) int {
		return cmp.Or(
			cmp.Compare(rank(a), rank(b)),
			cmp.Compare(100-p.used[a], 100-p.used[b]),
			cmp.Compare(p.inv[a].Index, p.inv[b].Index),
		)
	})
	return fits[:count]
}

// freeText lists the free capacity of cards, e.g. "card 0 50%, card 1 0%".
func (p *Placer) freeText(cards []int) string {
	parts := make([]string, len(cards))
	for n, i := range cards {
		parts[n] = fmt.Sprintf("card %d %d%%", p.inv[i].Index, 100-p.used[i])
	}
	return strings.Join(parts, ", ")
}

// Release frees what owner holds. Releasing an owner that holds nothing does
// nothing.
func (p *Placer) Release(owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	held, ok := p.owners[owner]
	if !ok {
		return
	}
	for _, s := range held.Shares {
		p.used[p.position(s.UUID)] -= s.Percent
	}
	delete(p.owners, owner)
}

// position returns the position in the inventory of the card with uuid, or -1.
func (p *Placer) position(uuid string) int {
	return slices.IndexFunc(p.inv, func(c Card) bool { return c.UUID == uuid })
}

// Adopt gives owner a placement recorded before a restart. Cards are matched
// by UUID, and the Placer keeps the card's current index. It is an EConflict
// error, and nothing is placed, when a share names a card the inventory lacks
// or of another type, names a card twice, or no longer fits beside what is
// placed already. Adopting what owner already holds again does nothing.
func (p *Placer) Adopt(owner string, pl Placement) error {
	typ := strings.ToLower(strings.TrimSpace(pl.Type))
	p.mu.Lock()
	defer p.mu.Unlock()
	if held, ok := p.owners[owner]; ok {
		if held.sameCards(pl) {
			return nil
		}
		return sbx.Errorf(sbx.EConflict, "adopting %s for %s: it already holds %s", pl, owner, held)
	}
	if len(pl.Shares) == 0 {
		return sbx.Errorf(sbx.EConflict, "adopting a GPU placement for %s: it has no shares", owner)
	}
	adopted := Placement{Type: typ}
	seen := map[int]bool{}
	for _, s := range pl.Shares {
		i := p.position(s.UUID)
		switch {
		case i < 0:
			return sbx.Errorf(sbx.EConflict, "adopting %s for %s: card %s (index %d) is not on this host (it has: %s)", pl, owner, s.UUID, s.Index, p.inv)
		case p.inv[i].Type != typ:
			return sbx.Errorf(sbx.EConflict, "adopting %s for %s: card %s is of type %s now", pl, owner, s.UUID, p.inv[i].Type)
		case seen[i]:
			return sbx.Errorf(sbx.EConflict, "adopting %s for %s: card %s is named twice", pl, owner, s.UUID)
		case s.Percent < 1 || s.Percent > 100:
			return sbx.Errorf(sbx.EConflict, "adopting %s for %s: a share of %d%% is not a share of a card", pl, owner, s.Percent)
		case p.used[i]+s.Percent > 100:
			return sbx.Errorf(sbx.EConflict, "adopting %s for %s: card %d has only %d%% free", pl, owner, p.inv[i].Index, 100-p.used[i])
		}
		seen[i] = true
		adopted.Shares = append(adopted.Shares, Share{Index: p.inv[i].Index, UUID: s.UUID, Percent: s.Percent})
	}
	for _, s := range adopted.Shares {
		p.used[p.position(s.UUID)] += s.Percent
	}
	p.owners[owner] = adopted
	return nil
}

// sameCards reports whether pl holds the same shares of the same cards as b.
func (pl Placement) sameCards(b Placement) bool {
	return strings.EqualFold(pl.Type, b.Type) && slices.EqualFunc(pl.Shares, b.Shares, func(x, y Share) bool {
		return x.UUID == y.UUID && x.Percent == y.Percent
	})
}

// Usage returns each card with the share of it placed and its owners, in
// inventory order.
func (p *Placer) Usage() []CardUsage {
	p.mu.Lock()
	defer p.mu.Unlock()
	usage := make([]CardUsage, len(p.inv))
	for i, c := range p.inv {
		usage[i] = CardUsage{Card: c, Percent: p.used[i]}
	}
	for owner, pl := range p.owners {
		for _, s := range pl.Shares {
			u := &usage[p.position(s.UUID)]
			u.Owners = append(u.Owners, owner)
		}
	}
	for i := range usage {
		slices.Sort(usage[i].Owners)
	}
	return usage
}
