package agentbridge

import (
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sbxdev/sbx/internal/pipenet"
)

// Hosts are the bridges of one provider's sandboxes, each served on an
// internal/pipenet listener of its own, whose address is what the
// provider's AgentAddr answers: only serve's process reaches it.
type Hosts struct {
	name string // the provider's
	mu   sync.Mutex
	m    map[string]*hosted // by provider sandbox ID
}

type hosted struct {
	addr   string
	server *http.Server
	bridge *Bridge
}

// NewHosts returns the hosts of provider name's sandboxes.
func NewHosts(name string) *Hosts { return &Hosts{name: name, m: map[string]*hosted{}} }

// Addr is the address of sandbox id's bridge, which is started over the
// Remote that remote makes when none runs.
func (h *Hosts) Addr(id string, remote func() (Remote, error)) (string, error) {
	h.mu.Lock()
	x := h.m[id]
	h.mu.Unlock()
	if x != nil {
		return x.addr, nil
	}
	r, err := remote() // unlocked: it may ask the provider's API
	if err != nil {
		return "", err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if x := h.m[id]; x != nil { // another made it meanwhile
		return x.addr, nil
	}
	addr := net.JoinHostPort(id+"."+h.name+".pipe", "80")
	l, err := pipenet.Listen(addr)
	if err != nil {
		return "", err
	}
	x = &hosted{addr: addr, bridge: New(h.name, r)}
	x.server = &http.Server{Handler: x.bridge, ReadHeaderTimeout: 30 * time.Second}
	go x.server.Serve(l)
	h.m[id] = x
	return addr, nil
}

// Close stops sandbox id's bridge, if one runs: its listener, its
// connections and the processes it follows.
func (h *Hosts) Close(id string) {
	h.mu.Lock()
	x := h.m[id]
	delete(h.m, id)
	h.mu.Unlock()
	if x != nil {
		x.server.Close()
		x.bridge.Close()
	}
}
