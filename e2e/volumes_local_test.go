package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
)

// Volumes end to end, on real gVisor sandboxes: data one sandbox writes is
// read by the next after the first is killed; the cap holds inside (ENOSPC);
// a second read-write mount, a delete and a resize while in use are 409s
// naming the sandbox; another org sees nothing; files go in and out
// without a sandbox (API and CLI); the volume and a hibernated sandbox's
// mount survive a serve restart; a mount point the template lacks is a 400.
func TestVolumesLocal(t *testing.T) {
	s := localServer(t, false)
	var vol apiv1.Volume
	s.call("POST", "/api/v1/volumes", map[string]any{"name": "data", "sizeMB": 64}, http.StatusCreated, &vol)
	s.fail("POST", "/api/v1/volumes", map[string]any{"name": "data", "sizeMB": 64}, http.StatusConflict, "already exists")
	mount := []map[string]any{{"name": "data", "path": "/mnt"}}

	first := s.create(map[string]any{"waitReady": true, "memoryMB": 256, "diskMB": 512, "volumes": mount})
	if len(first.Volumes) != 1 || first.Volumes[0].Path != "/mnt" || first.Volumes[0].ReadOnly {
		t.Fatalf("the sandbox's volumes: %+v", first.Volumes)
	}
	if out := s.ok("sandbox", "get", first.SandboxID); !strings.Contains(out, "Volumes:") || !strings.Contains(out, "data:/mnt") {
		t.Errorf("sbx sandbox get names no volume:\n%s", out)
	}
	s.sh(first, "echo from-first > /mnt/note && mkdir -p /mnt/dir && echo deep > /mnt/dir/f")
	out := s.shStatus(first, "dd if=/dev/zero of=/mnt/big bs=1M count=100 2>&1")
	if !strings.Contains(out, "No space left on device") {
		t.Errorf("writing past the cap: %q", out)
	}
	s.sh(first, "rm -f /mnt/big")
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "volumes": mount}, http.StatusConflict, "mounted read-write by sandbox "+first.SandboxID)
	s.fail("DELETE", "/api/v1/volumes/data", nil, http.StatusConflict, first.SandboxID)
	s.fail("POST", "/api/v1/volumes/data/resize", map[string]any{"sizeMB": 128}, http.StatusConflict, first.SandboxID)
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "volumes": []map[string]any{{"name": "data", "path": "/nowhere", "readOnly": true}}},
		http.StatusBadRequest, "/nowhere")
	reader := s.create(map[string]any{"waitReady": true, "memoryMB": 256, "diskMB": 512, "volumes": []map[string]any{{"name": "data", "path": "/srv", "readOnly": true}}})
	if got := s.sh(reader, "cat /srv/note"); got != "from-first" {
		t.Errorf("a reader sees %q", got)
	}
	if out := s.shStatus(reader, "sh -c 'echo x > /srv/other' 2>&1"); !strings.Contains(out, "Read-only file system") {
		t.Errorf("a read-only mount took a write: %q", out)
	}
	other := s.otherOrgKey(t)
	s.failKey(other, "GET", "/api/v1/volumes/"+vol.ID, nil, http.StatusNotFound, "not found")
	s.failKey(other, "GET", "/api/v1/volumes/"+vol.ID+"/files?path=/note", nil, http.StatusNotFound, "not found")

	// Files without a sandbox, through the API and the CLI.
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	if _, err := c.WriteVolumeFile(context.Background(), "data", "/up/loaded.txt", strings.NewReader("from the API")); err != nil {
		t.Fatal(err)
	}
	if got := s.sh(first, "cat /mnt/up/loaded.txt"); got != "from the API" {
		t.Errorf("the API's write, inside: %q", got)
	}
	if got := s.ok("volume", "get", "data", "/dir/f"); got != "deep\n" {
		t.Errorf("sbx volume get: %q", got)
	}
	local := filepath.Join(t.TempDir(), "in.txt")
	os.WriteFile(local, []byte("from the CLI"), 0o600)
	s.ok("volume", "put", "data", "/cli.txt", local)
	if ls := s.ok("volume", "ls", "data"); !strings.Contains(ls, "cli.txt") || !strings.Contains(ls, "note") {
		t.Errorf("sbx volume ls: %q", ls)
	}
	var entries apiv1.EntryList
	s.call("GET", "/api/v1/volumes/data/files/list?path=/dir", nil, http.StatusOK, &entries)
	if len(entries.Items) != 1 || entries.Items[0].Path != "/dir/f" || entries.Items[0].Size != 5 {
		t.Errorf("the volume's /dir: %+v", entries.Items)
	}
	var vols apiv1.VolumeList
	s.call("GET", "/api/v1/volumes", nil, http.StatusOK, &vols)
	if len(vols.Items) != 1 || vols.Items[0].Name != "data" || vols.Items[0].SizeMB != 64 {
		t.Errorf("volumes: %+v", vols.Items)
	}
	s.fail("GET", "/api/v1/volumes/data/files?path=/../../etc/passwd", nil, http.StatusNotFound, "does not exist")

	// Killed: the next sandbox reads what the first wrote.
	for _, sb := range []apiv1.Sandbox{first, reader} {
		s.call("DELETE", "/api/v1/sandboxes/"+sb.ID, nil, http.StatusOK, nil)
	}
	s.call("POST", "/api/v1/volumes/data/resize", map[string]any{"sizeMB": 160}, http.StatusOK, &vol)
	if vol.SizeMB != 160 {
		t.Errorf("resized: %+v", vol)
	}
	next := s.create(map[string]any{"waitReady": true, "memoryMB": 256, "diskMB": 512, "volumes": mount})
	if got := s.sh(next, "cat /mnt/note /mnt/cli.txt; dd if=/dev/zero of=/mnt/big bs=1M count=100 2>/dev/null && echo grew"); got != "from-first\nfrom the CLIgrew" {
		t.Errorf("the next sandbox: %q", got)
	}

	// Hibernated, then serve restarted: the volume is mounted again, the
	// sandbox wakes with its mount.
	s.call("POST", "/api/v1/sandboxes/"+next.ID+"/pause", map[string]any{"hibernate": true}, http.StatusOK, nil)
	s.restart(serverOpts{bin: sbxBin, args: s.opts.args})
	s.call("POST", "/api/v1/sandboxes/"+next.ID+"/resume", map[string]any{}, http.StatusOK, nil)
	if got := s.sh(next, "cat /mnt/note && echo after > /mnt/after"); got != "from-first" {
		t.Errorf("after a restart and a wake: %q", got)
	}
	s.call("DELETE", "/api/v1/sandboxes/"+next.ID, nil, http.StatusOK, nil)
	if got := s.ok("volume", "get", "data", "/after"); got != "after\n" {
		t.Errorf("written after the wake: %q", got)
	}
	s.ok("volume", "rm", "data")
	s.fail("GET", "/api/v1/volumes/data", nil, http.StatusNotFound, "not found")
	if imgs, _ := filepath.Glob(filepath.Join(s.dataDir, "volumes", "*.img")); len(imgs) != 0 {
		t.Errorf("images left: %v", imgs)
	}
}

// shStatus runs a command line in sb and answers its stdout, whatever its
// exit status.
func (s *server) shStatus(sb apiv1.Sandbox, line string) string {
	s.t.Helper()
	ctx := context.Background()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	h, err := c.Connect(ctx, sb.ID, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	res, err := h.Commands.Run(ctx, line, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	return res.Stdout
}
