// Package pipenet is a network inside one process: listeners named by an
// address (host:port) that only dialers of the same process reach, over
// in-memory pipes. A provider that serves sbx's agent API inside serve
// itself (the e2b provider's bridge to envd) listens here, so that no
// other process on the host can reach what it serves, and serve's agent
// transport (internal/agentcall) dials here before it dials TCP.
package pipenet

import (
	"context"
	"fmt"
	"net"
	"sync"
)

var (
	mu        sync.Mutex
	listeners = map[string]*listener{}
)

// Listen returns a listener at addr, which must be free in this process.
func Listen(addr string) (net.Listener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("pipenet: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if listeners[addr] != nil {
		return nil, fmt.Errorf("pipenet: %s is in use", addr)
	}
	l := &listener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
	listeners[addr] = l
	return l, nil
}

// Dial connects to the listener at addr; ok is false when none listens
// there, for the caller to dial the real network.
func Dial(ctx context.Context, addr string) (conn net.Conn, ok bool, err error) {
	mu.Lock()
	l := listeners[addr]
	mu.Unlock()
	if l == nil {
		return nil, false, nil
	}
	client, server := net.Pipe()
	select {
	case l.conns <- pipeConn{server, l}:
		return pipeConn{client, l}, true, nil
	case <-l.done:
		return nil, true, fmt.Errorf("pipenet: dial %s: %w", addr, net.ErrClosed)
	case <-ctx.Done():
		return nil, true, ctx.Err()
	}
}

type listener struct {
	addr  string
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops the listener and frees its address; connections it made go on.
func (l *listener) Close() error {
	l.once.Do(func() {
		close(l.done)
		mu.Lock()
		if listeners[l.addr] == l {
			delete(listeners, l.addr)
		}
		mu.Unlock()
	})
	return nil
}

func (l *listener) Addr() net.Addr { return addr(l.addr) }

// addr is a pipenet address.
type addr string

func (a addr) Network() string { return "pipe" }
func (a addr) String() string  { return string(a) }

// pipeConn is one end of a pipe, named by its listener's address.
type pipeConn struct {
	net.Conn
	l *listener
}

func (c pipeConn) LocalAddr() net.Addr  { return c.l.Addr() }
func (c pipeConn) RemoteAddr() net.Addr { return c.l.Addr() }
