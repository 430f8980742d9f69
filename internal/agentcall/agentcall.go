// Package agentcall is how serve reaches the agent inside a sandbox: the
// transport its proxy uses, the readiness wait, token rotation, and
// serve's own writes and scripts in a sandbox.
package agentcall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/pipenet"
)

// retryFor bounds how long a refused connection is retried: an agent that
// has just started (or woken) may not listen yet.
const retryFor = 15 * time.Second

// Transport carries requests to agents, and keeps their connections for
// the next request to the same agent: a fresh connection into a gVisor
// sandbox costs about a millisecond. A connection is reused only within one
// incarnation of a sandbox, from its start or its last resume to its next
// pause, because a hibernated sandbox's connections do not survive its wake
// and a killed sandbox's address may go to another: requests name their
// agent with Host, and what a request names changes at every pause.
// A refused connection is retried for a while.
var Transport = &http.Transport{DialContext: dialHost, MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second}

// Host is the URL host under which a request reaches the agent at addr of
// sb as it is now: addr, behind a label naming sb and its last pause.
func Host(sb sbx.Sandbox, addr string) string {
	return fmt.Sprintf("%s-%x.%s", sb.ID, sb.PausedAt.UnixNano(), addr)
}

// client makes serve's own calls (readiness, token rotation): few, often
// right after a wake, so on fresh connections.
var client = &http.Client{Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}

// dialHost connects to the address a Host names.
func dialHost(ctx context.Context, network, host string) (net.Conn, error) {
	return dial(ctx, network, AddrOf(host))
}

// AddrOf is the address a Host names, without its label.
func AddrOf(host string) string {
	_, addr, _ := strings.Cut(host, ".")
	return addr
}

// DialPort connects to a sandbox's port at addr, as a provider's PortAddr
// answers it: a listener of serve's own process there (internal/pipenet:
// a tunnel), else the network, once, within 10 s: a port nothing listens
// on is refused at once, not retried.
func DialPort(ctx context.Context, network, addr string) (net.Conn, error) {
	if conn, ok, err := pipenet.Dial(ctx, addr); ok {
		return conn, err
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	return d.DialContext(ctx, network, addr)
}

// dial connects to addr: a listener of serve's own process there
// (internal/pipenet), else the network.
func dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if conn, ok, err := pipenet.Dial(ctx, addr); ok {
		return conn, err
	}
	var d net.Dialer
	deadline := time.Now().Add(retryFor)
	for {
		conn, err := d.DialContext(ctx, network, addr)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			return conn, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Ready waits until the agent at addr answers GET /ready with 200, or ctx ends.
func Ready(ctx context.Context, addr, token string) error {
	for {
		err := call(ctx, addr, token, http.MethodGet, "/ready", nil)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the agent at %s is not ready: %w", addr, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// SetToken replaces the agent's access token old with new.
func SetToken(ctx context.Context, addr, old, new string) error {
	return call(ctx, addr, old, http.MethodPost, "/token", apiv1.TokenRequest{Token: new})
}

// Adopt gives the agent of a sandbox restored from a snapshot, which holds
// its source's token old and environment, its own: token new, the
// variables of env, and none of unset (the source's).
func Adopt(ctx context.Context, addr, old, new string, env map[string]string, unset []string) error {
	return call(ctx, addr, old, http.MethodPost, "/token", apiv1.TokenRequest{Token: new, Env: env, Unset: nonNil(unset)})
}

// Offer has the agent at addr, whose token is token, take next too from
// now on: its first use makes it the only one.
func Offer(ctx context.Context, addr, token, next string) error {
	return call(ctx, addr, token, http.MethodPost, "/token", apiv1.TokenRequest{Token: token, Next: next})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func call(ctx context.Context, addr, token, method, path string, body any) error {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(data)
	}
	resp, err := do(ctx, addr, token, method, path, "application/json", r)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
