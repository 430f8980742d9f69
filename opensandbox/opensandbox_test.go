package opensandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/agentcall"
	"github.com/sbxdev/sbx/internal/agenttest"
	"github.com/sbxdev/sbx/providertest"
)

// The tests run the provider against a real OpenSandbox server: sbx's own
// /opensandbox, served in-process by agenttest over real agents (which
// serve execd), the server the unmodified OpenSandbox SDK is checked
// against (e2e TestOpenSandboxSDKLocal). Its endpoints name its public
// host (sbx.test); the provider's client reaches every host at the stack.

func newProvider(t *testing.T, stack *agenttest.Stack) *Provider {
	t.Helper()
	addr := strings.TrimPrefix(stack.URL, "http://")
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	p, err := New(Config{APIURL: stack.URL + "/opensandbox", APIKey: stack.Key, Name: "t" + uuid.NewString()[:8],
		Lease: time.Minute, WatchEvery: 100 * time.Millisecond, HTTP: client})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		list, _ := p.List(context.Background())
		for _, in := range list {
			p.Kill(context.Background(), in.Handle)
		}
	})
	return p
}

func TestConformance(t *testing.T) {
	stack := agenttest.Serve(t)
	providertest.Run(t, providertest.Factory{
		New: func(t *testing.T) sbx.Provider { return newProvider(t, stack) },
		Reopen: func(t *testing.T, p sbx.Provider) sbx.Provider {
			q, err := New(p.(*Provider).cfg)
			if err != nil {
				t.Fatal(err)
			}
			return q
		},
		Template: "base",
	})
}

// startSandbox makes one sandbox and answers its bridge's address.
func startSandbox(t *testing.T, p *Provider) (sbx.Instance, string) {
	t.Helper()
	ctx := context.Background()
	in, err := p.Create(ctx, sbx.Spec{SandboxID: uuid.NewString(), TemplateID: "base", Kind: sbx.KindTask, Env: map[string]string{"GREETING": "hello"},
		Resources: sbx.Resources{MilliCPU: 500, MemoryMB: 256}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill(context.Background(), in.Handle) })
	addr, err := p.AgentAddr(ctx, in.Handle)
	if err != nil {
		t.Fatal(err)
	}
	if err := agentcall.Ready(ctx, addr, "unused"); err != nil {
		t.Fatal(err)
	}
	return in, addr
}

// call makes one request of the bridge at addr and answers its status and body.
func call(t *testing.T, addr, method, path, contentType string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+agentcall.Host(sbx.Sandbox{ID: "test"}, addr)+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := (&http.Client{Transport: agentcall.Transport}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

func TestBridgeCommands(t *testing.T) {
	stack := agenttest.Serve(t)
	p := newProvider(t, stack)
	in, addr := startSandbox(t, p)
	if sb, err := stack.Store.GetSandbox(context.Background(), "", in.ProviderSandboxID); err != nil || sb.Resources.MilliCPU != 500 || sb.Resources.MemoryMB != 256 {
		t.Errorf("the server's sandbox: %+v %v", sb.Resources, err)
	}
	agent := agentcall.For(sbx.Sandbox{ID: in.SandboxID, AccessToken: "unused"}, addr)
	ctx := context.Background()

	var stdout, stderr bytes.Buffer
	end, err := agent.Run(ctx, apiv1.StartCommandRequest{Cmd: `echo "$GREETING it's"; echo oops >&2; exit 3`}, agentcall.Streams{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "hello it's\n" || stderr.String() != "oops\n" || end.ExitCode == nil || *end.ExitCode != 3 {
		t.Fatalf("stdout %q, stderr %q, end %+v", stdout.String(), stderr.String(), end)
	}

	// A background command: listed, streamed, interrupted.
	info, err := agent.Start(ctx, apiv1.StartCommandRequest{Cmd: "echo started; sleep 600", Tag: "sleeper"})
	if err != nil {
		t.Fatal(err)
	}
	code, body := call(t, addr, "GET", "/commands", "", nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"tag":"sleeper"`) {
		t.Fatalf("list: %d %s", code, body)
	}
	if code, body := call(t, addr, "POST", "/commands/sleeper/signal", "application/json", []byte(`{"signal":"USR1"}`)); code != http.StatusBadRequest || !strings.Contains(string(body), "interrupts") {
		t.Fatalf("USR1: %d %s", code, body)
	}
	waitOutput(t, addr, "sleeper", "started\n")
	code, body = call(t, addr, "DELETE", "/commands/sleeper", "", nil)
	var killed apiv1.CommandInfo
	if code != http.StatusOK || json.Unmarshal(body, &killed) != nil || killed.Running || killed.PID != info.PID {
		t.Fatalf("kill: %d %s", code, body)
	}
	if code, body := call(t, addr, "GET", "/commands/sleeper/stream", "", nil); code != http.StatusOK || !strings.Contains(string(body), b64("started\n")) || !strings.Contains(string(body), `"type":"end"`) {
		t.Fatalf("stream: %d %s", code, body)
	}

	// A timeout ends a command and says so.
	end, err = agent.Run(ctx, apiv1.StartCommandRequest{Cmd: "sleep 30", Timeout: 1}, agentcall.Streams{})
	if err != nil || end.ExitCode == nil || *end.ExitCode != -1 || !strings.Contains(end.Error, "timed out") {
		t.Fatalf("timeout: %+v %v", end, err)
	}

	// What execd lacks is a 501 naming the provider.
	if _, err := agent.Start(ctx, apiv1.StartCommandRequest{Cmd: "sleep 600", Tag: "idle"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/pty", `{"cols":80,"rows":24}`},
		{"POST", "/commands/idle/stdin", `x`},
		{"GET", "/files/watch?path=/tmp", ""},
		{"POST", "/code/execute", `{"code":"1"}`},
	} {
		if code, body := call(t, addr, c.method, c.path, "application/json", []byte(c.body)); code != http.StatusNotImplemented || !strings.Contains(string(body), "opensandbox") {
			t.Errorf("%s %s: %d %s", c.method, c.path, code, body)
		}
	}
}

// waitOutput waits until a running command's stream holds want.
func waitOutput(t *testing.T, addr, ref, want string) {
	t.Helper()
	client := &http.Client{Transport: agentcall.Transport, Timeout: 200 * time.Millisecond}
	for range 100 {
		resp, err := client.Get("http://" + agentcall.Host(sbx.Sandbox{ID: "test"}, addr) + "/commands/" + ref + "/stream")
		if err == nil {
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(data), b64(want)) {
				return
			}
		}
	}
	t.Fatalf("command %s never wrote %q", ref, want)
}

func b64(s string) string {
	data, _ := json.Marshal([]byte(s))
	return strings.Trim(string(data), `"`)
}

func TestBridgeFiles(t *testing.T) {
	stack := agenttest.Serve(t)
	p := newProvider(t, stack)
	_, addr := startSandbox(t, p)
	dir := t.TempDir()
	q := func(path string, kv ...string) string {
		v := url.Values{"path": {path}}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return "?" + v.Encode()
	}
	code, body := call(t, addr, "PUT", "/files"+q(dir+"/a/b.txt", "mode", "600"), "", []byte("contents"))
	var info apiv1.EntryInfo
	if code != http.StatusOK || json.Unmarshal(body, &info) != nil || info.Type != "file" || info.Size != 8 || info.Mode != "0600" || info.Name != "b.txt" {
		t.Fatalf("put: %d %s", code, body)
	}
	if code, body := call(t, addr, "GET", "/files"+q(dir+"/a/b.txt"), "", nil); code != http.StatusOK || string(body) != "contents" {
		t.Fatalf("get: %d %q", code, body)
	}
	if code, body := call(t, addr, "POST", "/files/mkdir", "application/json", []byte(`{"path":"`+dir+`/c"}`)); code != http.StatusCreated {
		t.Fatalf("mkdir: %d %s", code, body)
	}
	if code, body := call(t, addr, "POST", "/files/mkdir", "application/json", []byte(`{"path":"`+dir+`/c"}`)); code != http.StatusOK {
		t.Fatalf("mkdir again: %d %s", code, body)
	}
	if code, body := call(t, addr, "POST", "/files/move", "application/json", []byte(`{"from":"`+dir+`/a/b.txt","to":"`+dir+`/c/d.txt"}`)); code != http.StatusOK || !strings.Contains(string(body), `"name":"d.txt"`) {
		t.Fatalf("move: %d %s", code, body)
	}
	code, body = call(t, addr, "GET", "/files/list"+q(dir, "depth", "2"), "", nil)
	var list apiv1.EntryList
	if code != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Items) != 3 || list.Items[2].Path != dir+"/c/d.txt" {
		t.Fatalf("list: %d %s", code, body)
	}
	if code, body := call(t, addr, "DELETE", "/files"+q(dir+"/c"), "", nil); code != http.StatusNoContent {
		t.Fatalf("delete a directory: %d %s", code, body)
	}
	if code, body := call(t, addr, "DELETE", "/files"+q(dir+"/a"), "", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, body)
	}
	if code, body := call(t, addr, "GET", "/files/stat"+q(dir+"/c"), "", nil); code != http.StatusNotFound {
		t.Fatalf("stat of the deleted: %d %s", code, body)
	}
}

func TestWatchRenewsAndReportsTheGone(t *testing.T) {
	stack := agenttest.Serve(t)
	p := newProvider(t, stack)
	in, _ := startSandbox(t, p)
	other, _ := startSandbox(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	died := make(chan sbx.Died, 4)
	before := expiry(t, stack, in.ProviderSandboxID)
	go p.Watch(ctx, func(d sbx.Died) { died <- d })
	if err := p.Kill(ctx, other.Handle); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // renewals are to the second
	if after := expiry(t, stack, in.ProviderSandboxID); !after.After(before) {
		t.Errorf("the lease was not renewed: expiry %s, then %s", before, after)
	}
	req, _ := http.NewRequest("DELETE", stack.URL+"/opensandbox/v1/sandboxes/"+in.ProviderSandboxID, nil)
	req.Header.Set("OPEN-SANDBOX-API-KEY", stack.Key)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete on the server: %v %v", resp, err)
	}
	d := <-died
	if d.ProviderSandboxID != in.ProviderSandboxID || !strings.Contains(d.Diagnostic, "gone from the OpenSandbox server") {
		t.Fatalf("died %+v", d)
	}
	select {
	case d := <-died:
		t.Fatalf("also reported %+v", d)
	case <-time.After(300 * time.Millisecond):
	}
}

func expiry(t *testing.T, stack *agenttest.Stack, id string) time.Time {
	t.Helper()
	sb, err := stack.Store.GetSandbox(context.Background(), "", id)
	if err != nil {
		t.Fatal(err)
	}
	return sb.ExpiresAt
}
