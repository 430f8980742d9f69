package sshgate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/agentcall"
	"github.com/sbxdev/sbx/telemetry"
	"golang.org/x/crypto/ssh"
)

// Local port forwarding (ssh -L, direct-tcpip channels, RFC 4254 §7.2): a
// channel to localhost:PORT is a TCP connection to port PORT of the
// sandbox, where serve reaches it (AgentConn.PortAddr: the sandbox's own
// address, so what listens there, or on every address, not on the
// sandbox's loopback only). The agent's port is never forwarded. A sandbox
// that stops ends its forwarded connections.

// forward serves one direct-tcpip channel.
func (c *conn) forward(ctx context.Context, nch ssh.NewChannel) {
	var p struct {
		Host     string
		Port     uint32
		OrigHost string
		OrigPort uint32
	}
	if err := ssh.Unmarshal(nch.ExtraData(), &p); err != nil {
		nch.Reject(ssh.ConnectionFailed, "malformed direct-tcpip request")
		return
	}
	switch {
	case p.Host != "localhost" && p.Host != "127.0.0.1" && p.Host != "::1":
		nch.Reject(ssh.Prohibited, "sbx forwards to the ports of the sandbox only: name localhost (ssh -L 8080:localhost:PORT)")
		return
	case p.Port == 0 || p.Port > 65535:
		nch.Reject(ssh.ConnectionFailed, fmt.Sprintf("port %d is no TCP port", p.Port))
		return
	case p.Port == apiv1.AgentPort:
		nch.Reject(ssh.Prohibited, fmt.Sprintf("port %d is sbx's agent; it is not forwarded", apiv1.AgentPort))
		return
	}
	a, err := c.g.mgr.AgentFor(ctx, c.caller, c.ref, "an SSH port forward")
	if err != nil {
		nch.Reject(ssh.ConnectionFailed, userMessage(c, err))
		return
	}
	defer a.Close()
	id := a.Sandbox.ProviderSandboxID
	addr, err := a.PortAddr(int(p.Port))
	if err != nil {
		nch.Reject(ssh.ConnectionFailed, userMessage(c, err))
		return
	}
	tc, err := agentcall.DialPort(a.Context, "tcp", addr)
	if err != nil {
		why := fmt.Sprintf("port %d of sandbox %s did not answer", p.Port, id)
		if errors.Is(err, syscall.ECONNREFUSED) {
			why = fmt.Sprintf("no process listens on port %d in sandbox %s (on its own address or every address)", p.Port, id)
		}
		nch.Reject(ssh.ConnectionFailed, why)
		return
	}
	defer tc.Close()
	ch, reqs, err := nch.Accept()
	if err != nil {
		return
	}
	defer ch.Close()
	go ssh.DiscardRequests(reqs)
	done := make(chan struct{}, 2)
	go func() { // the client's bytes to the sandbox, then its EOF
		n, _ := io.Copy(tc, ch)
		telemetry.SSHForwarded(true, n)
		if t, ok := tc.(*net.TCPConn); ok {
			t.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() { // the sandbox's bytes to the client, then its EOF
		n, _ := io.Copy(ch, tc)
		telemetry.SSHForwarded(false, n)
		ch.CloseWrite()
		done <- struct{}{}
	}()
	for range 2 {
		select {
		case <-done:
		case <-a.Context.Done(): // the sandbox stopped, or the connection ended
			return
		}
	}
}
