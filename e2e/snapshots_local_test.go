package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
)

// sh runs a command line in sb through serve and answers its stdout,
// trimmed; it must exit 0.
func (s *server) sh(sb apiv1.Sandbox, line string) string {
	s.t.Helper()
	ctx := context.Background()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	h, err := c.Connect(ctx, sb.ID, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	res, err := h.Commands.Run(ctx, line, nil)
	if err != nil || res.ExitCode != 0 {
		s.t.Fatalf("%s in %s: %+v %v", line, sb.SandboxID, res, err)
	}
	return strings.TrimSpace(res.Stdout)
}

// counted reads the counter the test started in sb, waiting until it
// reaches at least min.
func (s *server) counted(sb apiv1.Sandbox, min int) int {
	s.t.Helper()
	for range 100 {
		n, _ := strconv.Atoi(s.sh(sb, "cat /tmp/count 2>/dev/null || echo 0"))
		if n >= min {
			return n
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("the counter in %s did not reach %d", sb.SandboxID, min)
	return 0
}

// startCounter starts a process in sb that counts in its memory and
// writes the count to /tmp/count every 50 ms, and writes a file.
func (s *server) startCounter(sb apiv1.Sandbox) {
	s.t.Helper()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	h, err := c.Connect(context.Background(), sb.ID, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := h.Commands.Start(context.Background(), "i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.05; done",
		&client.CommandOptions{Tag: "counter", DiscardOutput: true}); err != nil {
		s.t.Fatal(err)
	}
	s.sh(sb, "echo kept > /workspace/file")
	s.counted(sb, 3)
}

// Snapshots and forks end to end, on real gVisor sandboxes: a counter
// process and a file survive a snapshot into three sandboxes, each going
// on on its own with its own token (serve reaches each child's agent with
// the child's) and env, the source too; a fork of a
// sandbox serving HTTP makes four children, each answering at its own
// preview address; a snapshot is listed, read, hidden from another org,
// and deleted, after which it starts nothing and its children go on.
func TestSnapshotsAndForkLocal(t *testing.T) {
	s := localServer(t, false)
	src := s.create(map[string]any{"waitReady": true, "memoryMB": 256, "diskMB": 1024, "envVars": map[string]string{"FOO": "source", "ONLY_SOURCE": "1"},
		"ports": []int{8080}, "metadata": map[string]string{"team": "a"}})
	s.startCounter(src)
	startEcho(t, s, src, 8080)

	var snap apiv1.Snapshot
	s.call("POST", "/api/v1/sandboxes/"+src.ID+"/snapshots", map[string]any{"name": "warm", "metadata": map[string]string{"k": "v"}}, http.StatusCreated, &snap)
	if snap.State != "ready" || !snap.Memory || snap.SizeBytes <= 0 || snap.SourceSandboxID != src.ID || snap.MemoryMB != 256 || snap.TemplateVersion == "" {
		t.Fatalf("snapshot: %+v", snap)
	}
	at := s.counted(src, 0)
	if later := s.counted(src, at+5); later <= at {
		t.Fatal("the source stopped after its snapshot")
	}

	var children []apiv1.Sandbox
	for i := range 3 {
		var ch apiv1.Sandbox
		s.call("POST", "/api/v1/sandboxes", map[string]any{"snapshotID": snap.ID, "waitReady": true, "timeout": 600,
			"envVars": map[string]string{"FOO": "child" + strconv.Itoa(i)}}, http.StatusCreated, &ch)
		if ch.ID == src.ID || ch.AccessToken == src.AccessToken || ch.SnapshotID != snap.ID || ch.Timeout != 600 || ch.MemoryMB != 256 {
			t.Fatalf("child %d: %+v", i, ch)
		}
		children = append(children, ch)
	}
	for i, ch := range children {
		if got := s.sh(ch, "cat /workspace/file"); got != "kept" {
			t.Errorf("child %d's file: %q", i, got)
		}
		if got := s.sh(ch, `echo "$FOO:$ONLY_SOURCE"`); got != "child"+strconv.Itoa(i)+":" {
			t.Errorf("child %d's env: %q", i, got)
		}
		n := s.counted(ch, 1)
		if later := s.counted(ch, n+5); later <= n {
			t.Errorf("child %d does not count", i)
		}
	}
	s.sh(children[0], "echo mine > /workspace/file")
	if got := s.sh(children[1], "cat /workspace/file"); got != "kept" {
		t.Errorf("one child's write reached another: %q", got)
	}
	if got := s.sh(src, "cat /workspace/file; echo $FOO"); got != "kept\nsource" {
		t.Errorf("the source after its children: %q", got)
	}

	// Listed, read; another org sees none of it.
	var list apiv1.SnapshotList
	s.call("GET", "/api/v1/snapshots?sandboxID="+src.ID, nil, http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].ID != snap.ID || list.Items[0].Name != "warm" {
		t.Errorf("snapshots of the source: %+v", list)
	}
	other := s.otherOrgKey(t)
	s.failKey(other, "GET", "/api/v1/snapshots/"+snap.ID, nil, http.StatusNotFound, "not found")
	s.failKey(other, "POST", "/api/v1/sandboxes", map[string]any{"snapshotID": snap.ID}, http.StatusNotFound, "not found")
	s.failKey(other, "DELETE", "/api/v1/snapshots/"+snap.ID, nil, http.StatusNotFound, "not found")
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"snapshotID": snap.ID, "memoryMB": 512}, http.StatusBadRequest, "snapshot's cpu, memoryMB")

	// Fork ×4 of the source, which serves HTTP on 8080: each child answers
	// at its own preview address.
	p := newPreviews(t, s)
	var fork apiv1.ForkResult
	s.call("POST", "/api/v1/sandboxes/"+src.ID+"/fork", map[string]any{"count": 4}, http.StatusCreated, &fork)
	if len(fork.Children) != 4 || len(fork.Errors) != 0 {
		t.Fatalf("fork: %+v", fork)
	}
	seen := map[string]bool{src.SandboxID: true}
	for _, ch := range fork.Children {
		if seen[ch.SandboxID] || ch.ForkedFrom != src.ID || ch.Metadata["sbx.forkOf"] != src.ID || ch.Metadata["team"] != "a" || ch.State != "running" {
			t.Fatalf("fork child: %+v", ch)
		}
		seen[ch.SandboxID] = true
		if got := p.echo(ch, 8080, map[string]string{apiv1.TrafficTokenHeader: ch.TrafficToken}); got.Port != 8080 || got.Host != p.host(ch, 8080) {
			t.Errorf("child %s's app saw %+v", ch.SandboxID, got)
		}
		if got := s.sh(ch, "echo $FOO; cat /workspace/file"); got != "source\nkept" {
			t.Errorf("fork child's env and file: %q", got)
		}
	}
	if got := p.echo(src, 8080, map[string]string{apiv1.TrafficTokenHeader: src.TrafficToken}); got.Port != 8080 {
		t.Errorf("the parent after its fork: %+v", got)
	}
	parent := s.get(src.ID)
	if !hasStep(parent.Timeline, "forked") || parent.State != "running" {
		t.Errorf("the parent's timeline: %+v", parent.Timeline)
	}
	// The fork's own capture is gone: only the user's snapshot is on disk.
	if dirs, _ := os.ReadDir(filepath.Join(s.dataDir, "snapshots")); len(dirs) != 1 {
		t.Errorf("snapshots on disk after the fork: %v", dirs)
	}

	// Files only: a sandbox from it has the files, not the processes.
	var files apiv1.Snapshot
	s.call("POST", "/api/v1/sandboxes/"+src.ID+"/snapshots", map[string]any{"memory": false}, http.StatusCreated, &files)
	if files.Memory || files.State != "ready" {
		t.Fatalf("a files-only snapshot: %+v", files)
	}
	var booted apiv1.Sandbox
	s.call("POST", "/api/v1/sandboxes", map[string]any{"snapshotID": files.ID, "waitReady": true}, http.StatusCreated, &booted)
	if got := s.sh(booted, "cat /workspace/file; test -e /tmp/count && echo counting; pgrep -c sleep || true"); got != "kept\n0" {
		t.Errorf("a sandbox of a files-only snapshot: %q", got)
	}
	s.call("DELETE", "/api/v1/snapshots/"+files.ID, nil, http.StatusOK, nil)

	// Deleted: it starts nothing more; its children go on.
	var gone apiv1.Snapshot
	s.call("DELETE", "/api/v1/snapshots/"+snap.ID, nil, http.StatusOK, &gone)
	if gone.State != "deleted" {
		t.Errorf("deleted: %+v", gone)
	}
	s.fail("GET", "/api/v1/snapshots/"+snap.ID, nil, http.StatusNotFound, "not found")
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"snapshotID": snap.ID}, http.StatusNotFound, "not found")
	if dirs, _ := os.ReadDir(filepath.Join(s.dataDir, "snapshots")); len(dirs) != 0 {
		t.Errorf("snapshots on disk after the delete: %v", dirs)
	}
	n := s.counted(children[2], 1)
	s.counted(children[2], n+2)
}

func hasStep(events []apiv1.Event, step string) bool {
	for _, e := range events {
		if e.Step == step {
			return true
		}
	}
	return false
}

// The CLI's snapshot verbs: a snapshot taken, listed, started from, a
// fork, the snapshot removed.
func TestSnapshotCLILocal(t *testing.T) {
	s := localServer(t, false)
	src := s.create(map[string]any{"waitReady": true, "memoryMB": 256, "diskMB": 1024})
	s.startCounter(src)
	out := s.ok("sandbox", "snapshot", src.SandboxID, "--name", "from-cli")
	id, _, _ := strings.Cut(out, " ")
	if !strings.Contains(out, " ready, ") {
		t.Fatalf("sbx sandbox snapshot: %q", out)
	}
	if list := s.ok("snapshot", "list"); !strings.Contains(list, id) || !strings.Contains(list, "from-cli") {
		t.Errorf("sbx snapshot list: %q", list)
	}
	created := s.ok("sandbox", "create", "--snapshot", id, "--wait")
	childID, _, _ := strings.Cut(created, "\n")
	var child apiv1.Sandbox
	s.call("GET", "/api/v1/sandboxes/"+childID, nil, http.StatusOK, &child)
	if child.SnapshotID != id {
		t.Errorf("the CLI's child: %+v", child)
	}
	s.counted(child, 1)
	if _, errOut, code := s.cli("sandbox", "create", "base", "--snapshot", id); code != 2 || !strings.Contains(errOut, "give one of") {
		t.Errorf("a template and a snapshot: exit %d, %q", code, errOut)
	}
	forked := strings.Fields(s.ok("sandbox", "fork", src.SandboxID, "--count", "2"))
	if len(forked) != 2 {
		t.Errorf("sbx sandbox fork: %q", forked)
	}
	if got := s.ok("snapshot", "rm", id); !strings.Contains(got, "deleted") {
		t.Errorf("sbx snapshot rm: %q", got)
	}
	if _, errOut, code := s.cli("snapshot", "get", id); code == 0 || !strings.Contains(errOut, "not found") {
		t.Errorf("sbx snapshot get of a deleted one: exit %d, %q", code, errOut)
	}
}

// serve SIGKILLed while it takes a snapshot, and while it forks, then
// restarted: no snapshot is left creating, no capture or checkpoint
// directory stays that no ready snapshot owns, no sandbox is left starting
// or with an operation in progress, and runsc holds exactly the sandboxes
// the ledger says run or are paused.
func TestSnapshotAndForkSurviveServeKilled(t *testing.T) {
	s := localServer(t, false)
	src := s.create(map[string]any{"waitReady": true, "memoryMB": 512, "diskMB": 1024})
	s.startCounter(src)
	s.sh(src, "head -c 300000000 /dev/zero > /tmp/fill") // a checkpoint that takes a while

	for _, op := range []struct{ path, body string }{
		{"/api/v1/sandboxes/" + src.ID + "/snapshots", `{}`},
		{"/api/v1/sandboxes/" + src.ID + "/fork", `{"count":3}`},
	} {
		req, _ := http.NewRequest("POST", s.url+op.path, strings.NewReader(op.body))
		req.Header.Set("Authorization", "Bearer "+s.key)
		req.Header.Set("Content-Type", "application/json")
		go http.DefaultClient.Do(req) // cut short by the kill
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if dirs, _ := os.ReadDir(filepath.Join(s.dataDir, "snapshots")); len(dirs) > s.readySnapshots() {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		s.restart(serverOpts{bin: sbxBin, args: s.opts.args})

		if dirs, _ := os.ReadDir(filepath.Join(s.dataDir, "snapshots")); len(dirs) != s.readySnapshots() {
			t.Errorf("after %s: %d snapshot directories, %d ready snapshots", op.path, len(dirs), s.readySnapshots())
		}
		running := map[string]bool{}
		for _, sb := range s.listAll("") {
			if sb.State == "starting" {
				t.Errorf("after %s: sandbox %s is still starting", op.path, sb.SandboxID)
			}
			if sb.State == "running" || sb.State == "paused" {
				running[sb.SandboxID] = true
			}
		}
		list, err := s.runsc("list", "--quiet")
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range strings.Fields(list) {
			if !running[id] {
				t.Errorf("after %s: runsc holds %s, which the ledger does not run", op.path, id)
			}
			delete(running, id)
		}
		if len(running) > 0 {
			t.Errorf("after %s: the ledger runs %v, which runsc does not hold", op.path, running)
		}
		if got := s.get(src.ID); got.State != "running" {
			t.Fatalf("the source after %s: %s %s", op.path, got.State, got.Diagnostic)
		}
		s.counted(src, s.counted(src, 0)+2)
	}
}

// readySnapshots counts the server's ready snapshots.
func (s *server) readySnapshots() int {
	s.t.Helper()
	var list apiv1.SnapshotList
	s.call("GET", "/api/v1/snapshots?limit=1000", nil, http.StatusOK, &list)
	n := 0
	for _, sn := range list.Items {
		if sn.State == "ready" {
			n++
		}
	}
	return n
}
