package e2e

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/docker/dockertest"
)

// One serve, one ledger, four providers: gVisor on this host (the
// default), and beside it a Docker daemon, an E2B installation and an
// OpenSandbox server (another serve's E2B and OpenSandbox APIs)
// (--also-provider docker,e2b,opensandbox). A create names its provider or
// takes the default; each sandbox runs commands on its own; serve
// SIGKILLed and restarted adopts them all, processes and all; the list,
// the summary (availability and capabilities) and the wallet (spending by
// provider, at docker's own price) show them; a fork of any but the local
// sandbox is a 501 naming its provider.
func TestProvidersInOneLedger(t *testing.T) {
	host := dockertest.Host(t)
	b, keyFile := installation(t)
	args := append([]string{"--also-provider", "docker,e2b,opensandbox", "--docker-host", host}, e2bArgs(b, keyFile)...)
	s := localServer(t, false, append(args, openSandboxArgs(b, keyFile)...)...)
	var rate apiv1.Rate // docker's vCPUs cost a credit a second from now on; local's keep the default
	s.call("POST", "/api/v1/admin/rates", map[string]any{"provider": "docker", "resource": "cpu", "credits_per_second": "1"}, http.StatusCreated, &rate)
	if rate.Provider != "docker" {
		t.Fatalf("the rate: %+v", rate)
	}
	s.fail("POST", "/api/v1/admin/rates", map[string]any{"provider": "docker", "resource": "volume_storage", "credits_per_second": "1"},
		http.StatusBadRequest, "names no provider")
	onLocal := s.create(map[string]any{"waitReady": true})
	onDocker := s.create(map[string]any{"waitReady": true, "provider": "docker"})
	t.Cleanup(func() { s.do("DELETE", "/api/v1/sandboxes/"+onDocker.ID, nil) })
	onE2B := s.create(map[string]any{"waitReady": true, "provider": "e2b"})
	onOSB := s.create(map[string]any{"waitReady": true, "provider": "opensandbox"})
	if onLocal.Provider != "local" || onDocker.Provider != "docker" || onE2B.Provider != "e2b" || onOSB.Provider != "opensandbox" {
		t.Fatalf("providers: %s, %s, %s and %s", onLocal.Provider, onDocker.Provider, onE2B.Provider, onOSB.Provider)
	}
	all := []apiv1.Sandbox{onLocal, onDocker, onE2B, onOSB}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	defer cancel()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	for _, sb := range all { // e2b's and opensandbox's are the installation's sandboxes, sbx ones too
		res, err := c.Commands(sb.ID).Run(ctx, "tr '\\0' ' ' < /proc/1/cmdline", nil)
		if err != nil || !strings.HasPrefix(res.Stdout, "/.sbx/sbx agent") {
			t.Errorf("a command on %s: %+v %v", sb.Provider, res, err)
		}
	}
	// serve SIGKILLed and restarted: every sandbox is adopted, running,
	// with its processes.
	// (By PID: opensandbox's execd lists no commands, so a tag is known
	// only to the serve that started it.)
	kept := map[string]int{}
	for _, sb := range all {
		h, err := c.Commands(sb.ID).Start(ctx, "sleep 600", &client.CommandOptions{Tag: "kept"})
		if err != nil {
			t.Fatalf("a background command on %s: %v", sb.Provider, err)
		}
		kept[sb.ID] = h.PID()
		h.Disconnect()
	}
	s.restart(serverOpts{bin: sbxBin, args: s.opts.args})
	for _, sb := range all {
		if got := s.get(sb.ID); got.State != "running" {
			t.Errorf("after the restart the %s sandbox is %s", sb.Provider, got.State)
		}
		if info, err := c.Commands(sb.ID).Get(ctx, strconv.Itoa(kept[sb.ID])); err != nil || !info.Running {
			t.Errorf("after the restart the %s sandbox's command: %+v %v", sb.Provider, info, err)
		}
	}
	seen := map[string]bool{}
	for _, sb := range s.listAll("") {
		seen[sb.Provider] = true
	}
	if !seen["local"] || !seen["docker"] || !seen["e2b"] || !seen["opensandbox"] {
		t.Errorf("the list shows providers %v", seen)
	}
	var sum apiv1.Summary
	s.call("GET", "/api/v1/observability/summary", nil, http.StatusOK, &sum)
	caps := map[string]apiv1.ProviderStatus{}
	for _, p := range sum.Providers {
		caps[p.Name] = p
	}
	if l := caps["local"]; !l.Available || !l.Default || !l.Capabilities.Fork {
		t.Errorf("the summary's local provider: %+v", l)
	}
	for _, sb := range all[1:] {
		if p := caps[sb.Provider]; !p.Available || p.Default || p.Capabilities.Fork || !p.Capabilities.MemoryPause {
			t.Errorf("the summary's %s provider: %+v", sb.Provider, p)
		}
		s.fail("POST", "/api/v1/sandboxes/"+sb.ID+"/fork", map[string]any{"count": 1}, http.StatusNotImplemented, "provider "+sb.Provider)
	}
	for _, sb := range all {
		s.call("DELETE", "/api/v1/sandboxes/"+sb.ID, nil, http.StatusOK, nil)
	}
	var sp apiv1.Spending
	s.call("GET", "/api/v1/org/default/credits/spending", nil, http.StatusOK, &sp)
	local, _ := strconv.ParseFloat(sp.ByProvider["local"], 64)
	dock, _ := strconv.ParseFloat(sp.ByProvider["docker"], 64)
	e2bSpent, _ := strconv.ParseFloat(sp.ByProvider["e2b"], 64)
	osbSpent, _ := strconv.ParseFloat(sp.ByProvider["opensandbox"], 64)
	if local <= 0 || e2bSpent <= 0 || osbSpent <= 0 || dock < 1000*local { // the same seconds, at 70 000 times the price
		t.Errorf("the wallet's spending by provider: %+v", sp.ByProvider)
	}
}
