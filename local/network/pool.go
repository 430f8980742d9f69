package network

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Each sandbox gets a /30 of the pool: the network address, the gateway
// (.1, the host end of the veth), the sandbox (.2) and the broadcast address.

// checkPool reports why p cannot be split into /30s, if it cannot.
func checkPool(p netip.Prefix) error {
	switch {
	case !p.Addr().Is4():
		return fmt.Errorf("network: pool %s is not IPv4", p)
	case p.Bits() > 30:
		return fmt.Errorf("network: pool %s is smaller than a /30", p)
	case p.Masked() != p:
		return fmt.Errorf("network: pool %s has host bits set; want %s", p, p.Masked())
	}
	return nil
}

// allocate returns the sandbox address and gateway of the first /30 of pool
// that no attachment uses.
func allocate(pool netip.Prefix, attached map[string]Attachment) (netip.Prefix, netip.Addr, error) {
	used := make(map[netip.Addr]bool, len(attached))
	for _, a := range attached {
		used[a.Gateway] = true
	}
	base := binary.BigEndian.Uint32(pool.Addr().AsSlice())
	blocks := uint32(1) << (30 - pool.Bits())
	for i := range blocks {
		gw := addr4(base + 4*i + 1)
		if !used[gw] {
			return netip.PrefixFrom(gw.Next(), 30), gw, nil
		}
	}
	return netip.Prefix{}, netip.Addr{}, fmt.Errorf("network: pool %s is full (%d sandboxes)", pool, blocks)
}

// checkBlock reports why a recorded attachment's addresses are not a /30 of
// pool, if they are not.
func checkBlock(a Attachment, pool netip.Prefix) error {
	block := a.Addr.Masked()
	if a.Addr.Bits() != 30 || !pool.Contains(block.Addr()) ||
		a.Gateway != block.Addr().Next() || a.Addr.Addr() != a.Gateway.Next() {
		return fmt.Errorf("address %s and gateway %s are not a /30 of pool %s", a.Addr, a.Gateway, pool)
	}
	return nil
}

func addr4(v uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

// Addresses answers how many sandboxes have addresses of the pool now, and
// how many the pool has room for (a /30 each).
func (m *Manager) Addresses() (used, total int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.attached), 1 << (30 - m.cfg.Pool.Bits())
}
