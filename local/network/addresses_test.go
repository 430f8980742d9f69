package network

import "testing"

// Addresses counts the sandboxes attached against the pool's /30s.
func TestAddressesCountsThePool(t *testing.T) {
	m := newManager(t, testConfig(t, "10.231.40.0/28"))
	if used, total := m.Addresses(); used != 0 || total != 4 {
		t.Fatalf("an empty /28: %d used of %d, want 0 of 4", used, total)
	}
	attach(t, m, "addr", Policy{})
	if used, total := m.Addresses(); used != 1 || total != 4 {
		t.Errorf("one sandbox attached: %d used of %d, want 1 of 4", used, total)
	}
}
