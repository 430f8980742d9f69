package gpu

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Card is one GPU of the host.
type Card struct {
	Index    int    // nvidia-smi's index; DeviceNodes takes /dev/nvidia<Index> as its device node
	UUID     string // stable across reboots, unlike the index
	Name     string // as the driver reports it, e.g. "NVIDIA H100 80GB HBM3"
	Type     string // the lowercase model token sandboxes ask for, e.g. "h100"
	MemoryMB int64  // 0 when unknown (a configured inventory)
}

// Inventory is the host's cards, in index order.
type Inventory []Card

// String summarizes the inventory by type in order of first appearance, e.g.
// "h100 ×2, a10g ×1", or "none".
func (inv Inventory) String() string {
	var types []string
	count := map[string]int{}
	for _, c := range inv {
		if count[c.Type] == 0 {
			types = append(types, c.Type)
		}
		count[c.Type]++
	}
	if len(types) == 0 {
		return "none"
	}
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("%s ×%d", t, count[t])
	}
	return strings.Join(parts, ", ")
}

// typePattern is what a GPU type may look like: the API's pattern, lowercase.
var typePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// ParseInventory reads an inventory written as "type:count,…", e.g.
// "h100:2,a10g:1", for hosts where the operator names the cards and for
// tests. Cards get indices 0…n-1 in the order written, the UUID
// "configured-<index>" and their type as name. Empty or blank text is an
// empty inventory.
func ParseInventory(s string) (Inventory, error) {
	if strings.TrimSpace(s) == "" {
		return Inventory{}, nil
	}
	inv := Inventory{}
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, fmt.Errorf("GPU inventory %q: entry %d is empty; want type:count, e.g. h100:2", s, i+1)
		}
		typ, countText, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, fmt.Errorf("GPU inventory %q: entry %q has no count; want type:count, e.g. %s:1", s, entry, entry)
		}
		typ = strings.ToLower(strings.TrimSpace(typ))
		if !typePattern.MatchString(typ) {
			return nil, fmt.Errorf("GPU inventory %q: entry %q: %q is not a GPU type like h100 or a10g", s, entry, typ)
		}
		count, err := strconv.Atoi(strings.TrimSpace(countText))
		if err != nil || count < 1 {
			return nil, fmt.Errorf("GPU inventory %q: entry %q: count %q must be a whole number of cards, at least 1", s, entry, countText)
		}
		for range count {
			index := len(inv)
			inv = append(inv, Card{Index: index, UUID: fmt.Sprintf("configured-%d", index), Name: typ, Type: typ})
		}
	}
	return inv, nil
}
