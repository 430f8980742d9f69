// Package sshgate is sbx's SSH gateway: `ssh -p 2222 SANDBOX@host` reaches
// a sandbox's shell, commands, ports and files with a real SSH client.
// Like the REST API it is a surface that translates only: it authenticates
// a public key or a token through package sshauth (which asks authz and
// lifecycle who reaches which sandbox), reaches the sandbox through
// lifecycle.Manager.Agent, the same resolve-authorize-wake path as the
// agent proxy (a paused sandbox is resumed, a hibernated one woken), and
// speaks to the sandbox's agent through its own API (internal/agentcall):
// a terminal over its PTY WebSocket, a command with stdin, stdout and
// stderr apart, the agent's own SFTP server as a command run as the
// sandbox's user, and local port forwarding to the sandbox's ports through
// AgentConn.PortAddr. Everything a channel carries ends when the sandbox
// stops running, with why.
//
// The user name is the sandbox's ID, as the API takes it (its provider
// sandbox ID or its sbx UUID); a name that is not one, a sandbox that does
// not exist or is another org's, a key or token that does not open it: all
// are the same authentication failure.
package sshgate

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/internal/strictjson"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/sshauth"
	"github.com/sbxdev/sbx/telemetry"
	"golang.org/x/crypto/ssh"
)

// Limits of what one client may hold before it has authenticated, and of
// one connection after.
const (
	handshakeTimeout = 30 * time.Second // from the TCP connection to a successful authentication
	maxHandshakes    = 64               // connections not yet authenticated, at once
	maxChannels      = 64               // open channels of one connection: sessions and forwards
	maxAuthTries     = 6
	lookupTimeout    = 15 * time.Second // one credential's lookup in the ledger
)

// Config is what the gateway is made with.
type Config struct {
	HostKey ssh.Signer // the server's host key (LoadHostKey)
	Clock   sbx.Clock  // default the system's
	Log     *slog.Logger
}

// Gateway serves SSH connections to sandboxes.
type Gateway struct {
	mgr        *lifecycle.Manager
	auth       *sshauth.Service
	hostKey    ssh.Signer
	log        *slog.Logger
	handshakes chan struct{} // a slot per connection not yet authenticated

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	lns    map[net.Listener]struct{}
	conns  map[net.Conn]struct{}
}

// New returns a gateway to mgr's sandboxes, authenticating through an
// sshauth service over store.
func New(mgr *lifecycle.Manager, store sshauth.Store, cfg Config) *Gateway {
	if cfg.Clock == nil {
		cfg.Clock = sbx.SystemClock{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Gateway{
		mgr: mgr, auth: sshauth.New(store, authz.Policy{Store: store}, mgr, cfg.Clock), hostKey: cfg.HostKey, log: cfg.Log,
		handshakes: make(chan struct{}, maxHandshakes), ctx: ctx, cancel: cancel,
		lns: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{},
	}
}

// HostKey is the gateway's host key.
func (g *Gateway) HostKey() ssh.PublicKey { return g.hostKey.PublicKey() }

// ErrClosed is what Serve answers once the gateway is closed.
var ErrClosed = errors.New("sshgate: closed")

// Serve accepts connections on ln until Close, or until ln fails.
func (g *Gateway) Serve(ln net.Listener) error {
	if !track(g, g.lns, ln) {
		ln.Close()
		return ErrClosed
	}
	defer g.wg.Done()
	defer untrack(g, g.lns, ln)
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if g.ctx.Err() != nil {
				return ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() { // out of descriptors, for one: wait, as net/http does
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		if !track(g, g.conns, nc) { // counted in wg too, under the lock Close takes first
			nc.Close()
			return ErrClosed
		}
		go func() {
			defer g.wg.Done()
			defer untrack(g, g.conns, nc)
			defer nc.Close()
			g.serveConn(nc)
		}()
	}
}

// Close stops every listener and ends every connection, and waits for
// their goroutines.
func (g *Gateway) Close() error {
	g.mu.Lock()
	g.closed = true
	for ln := range g.lns {
		ln.Close()
	}
	for c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.cancel()
	g.wg.Wait()
	return nil
}

// track adds v to set, and one to wg, unless the gateway is closed: what
// Close waits for is counted before it can start waiting.
func track[T comparable](g *Gateway, set map[T]struct{}, v T) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	set[v] = struct{}{}
	g.wg.Add(1)
	return true
}

// untrack removes v from set.
func untrack[T comparable](g *Gateway, set map[T]struct{}, v T) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(set, v)
}

// serveConn authenticates one connection, then serves its channels until
// it ends.
func (g *Gateway) serveConn(nc net.Conn) {
	select {
	case g.handshakes <- struct{}{}:
	default:
		g.log.Warn("ssh: too many connections authenticating at once; refused one", "remote", nc.RemoteAddr().String())
		telemetry.SSHConnection("busy")
		return
	}
	nc.SetDeadline(time.Now().Add(handshakeTimeout))
	c := &conn{g: g, ids: map[string]identity{}}
	sconn, chans, reqs, err := ssh.NewServerConn(nc, c.config())
	<-g.handshakes
	if err != nil {
		g.log.Debug("ssh: handshake failed", "remote", nc.RemoteAddr().String(), "user", strictjson.Short(c.user), "err", err)
		telemetry.SSHConnection("handshake_failed")
		return
	}
	nc.SetDeadline(time.Time{})
	id, ok := c.ids[sconn.Permissions.Extensions[identityKey]]
	if !ok { // cannot happen: every callback that admits records who
		sconn.Close()
		return
	}
	c.sconn, c.caller, c.ref, c.how = sconn, id.caller, sconn.User(), id.how
	telemetry.SSHConnection("connected")
	g.log.Info("ssh: connected", "sandbox", c.ref, "org", c.caller.Org.ID, "by", c.how, "remote", nc.RemoteAddr().String())
	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		sconn.Close() // the gateway closed: end the connection
	}()
	go ssh.DiscardRequests(reqs) // global requests (remote forwarding, …): refused
	c.serveChannels(ctx, chans)
	cancel()
	c.wg.Wait()
	g.log.Debug("ssh: disconnected", "sandbox", c.ref, "by", c.how)
}
