// Package agentcall is how serve reaches the agent inside a sandbox: the
// transport its proxy uses, the readiness wait, and token rotation.
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
	"syscall"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// retryFor bounds how long a refused connection is retried: an agent that
// has just started (or woken) may not listen yet.
const retryFor = 15 * time.Second

// Transport carries requests to agents. A refused connection is retried
// for a while. Connections are not kept: a hibernated sandbox's connections
// do not survive its wake, and a fresh one into the sandbox costs little.
var Transport = &http.Transport{DialContext: dial, DisableKeepAlives: true}

var client = &http.Client{Transport: Transport}

func dial(ctx context.Context, network, addr string) (net.Conn, error) {
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

func call(ctx context.Context, addr, token, method, path string, body any) error {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, r)
	if err != nil {
		return err
	}
	req.Header.Set(apiv1.AccessTokenHeader, token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("agent %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
