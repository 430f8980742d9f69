package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/agentcall"
	"github.com/sbxdev/sbx/internal/agenttest"
	"github.com/sbxdev/sbx/providertest"
)

// The tests run the provider against a real server of E2B's API: sbx's own
// /e2b, served in-process by agenttest over real agents (which serve envd),
// the server the unmodified E2B SDKs are checked against (e2e
// TestE2BSDKLocal).

// newProvider returns a provider over stack with an instance name of its
// own, so that it lists only what it made.
func newProvider(t *testing.T, stack *agenttest.Stack) *Provider {
	t.Helper()
	p, err := New(Config{APIURL: stack.URL + "/e2b", APIKey: stack.Key, SandboxURL: stack.URL, Name: "t" + uuid.NewString()[:8],
		Lease: time.Minute, WatchEvery: 100 * time.Millisecond})
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

// TestEnvdAtTheSandboxDomain reaches envd as E2B's SDKs do without
// E2B_SANDBOX_URL: at 49983-<id>.<the domain the API answered>, which the
// test's client resolves to the stack (no wildcard DNS here).
func TestEnvdAtTheSandboxDomain(t *testing.T) {
	stack := agenttest.Serve(t)
	addr := strings.TrimPrefix(stack.URL, "http://")
	var hosts []string
	var mu sync.Mutex
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, host string) (net.Conn, error) {
		mu.Lock()
		hosts = append(hosts, host)
		mu.Unlock()
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	p, err := New(Config{APIURL: stack.URL + "/e2b", APIKey: stack.Key, Name: "t" + uuid.NewString()[:8], HTTP: client})
	if err != nil {
		t.Fatal(err)
	}
	in, agent := startSandbox(t, p)
	var out bytes.Buffer
	if end, err := agent.Run(context.Background(), apiv1.StartCommandRequest{Cmd: "echo reached"}, agentcall.Streams{Stdout: &out}); err != nil || out.String() != "reached\n" || *end.ExitCode != 0 {
		t.Fatalf("%q %+v %v", out.String(), end, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "49983-" + in.ProviderSandboxID + ".sbx.localhost:80"; !slices.Contains(hosts, want) {
		t.Errorf("envd was dialled at %v, not %s", hosts, want)
	}
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

// startSandbox makes one e2b sandbox and answers its bridge's address.
func startSandbox(t *testing.T, p *Provider) (sbx.Instance, agentcall.Agent) {
	t.Helper()
	ctx := context.Background()
	in, err := p.Create(ctx, sbx.Spec{SandboxID: uuid.NewString(), TemplateID: "base", Kind: sbx.KindTask, Env: map[string]string{"GREETING": "hello"}})
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
	return in, agentcall.For(sbx.Sandbox{ID: in.SandboxID, AccessToken: "unused"}, addr)
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
	in, agent := startSandbox(t, p)
	addr, _ := p.AgentAddr(context.Background(), in.Handle)
	ctx := context.Background()

	var stdout, stderr bytes.Buffer
	end, err := agent.Run(ctx, apiv1.StartCommandRequest{Cmd: `echo "$GREETING $0"; echo oops >&2; exit 3`}, agentcall.Streams{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	if got := stdout.String(); got != "hello /bin/bash\n" || stderr.String() != "oops\n" || end.ExitCode == nil || *end.ExitCode != 3 {
		t.Fatalf("stdout %q, stderr %q, end %+v", got, stderr.String(), end)
	}

	// stdin streamed to a command, in the background, then its output.
	code, body := call(t, addr, "POST", "/commands", "application/json", []byte(`{"args":["cat"],"stdin":true,"tag":"cat","background":true}`))
	var info apiv1.CommandInfo
	if code != http.StatusCreated || json.Unmarshal(body, &info) != nil || !info.Running {
		t.Fatalf("start: %d %s", code, body)
	}
	if code, body := call(t, addr, "POST", "/commands/cat/stdin", "", []byte("piped\n")); code != http.StatusNoContent {
		t.Fatalf("stdin: %d %s", code, body)
	}
	if code, body := call(t, addr, "DELETE", "/commands/cat/stdin", "", nil); code != http.StatusNoContent {
		t.Fatalf("close stdin: %d %s", code, body)
	}
	code, body = call(t, addr, "GET", "/commands/cat/stream", "", nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"data":"`+b64([]byte("piped\n"))+`"`) || !strings.Contains(string(body), `"type":"end","exitCode":0`) {
		t.Fatalf("stream: %d %s", code, body)
	}
	if code, body := call(t, addr, "GET", "/commands/"+itoa(info.PID), "", nil); code != http.StatusOK || !strings.Contains(string(body), `"running":false`) {
		t.Fatalf("get: %d %s", code, body)
	}

	// kill a running command; a signal envd cannot send is a 400 naming it.
	if _, err := agent.Start(ctx, apiv1.StartCommandRequest{Cmd: "sleep 600", Tag: "sleeper"}); err != nil {
		t.Fatal(err)
	}
	if code, body := call(t, addr, "POST", "/commands/sleeper/signal", "application/json", []byte(`{"signal":"USR1"}`)); code != http.StatusBadRequest || !strings.Contains(string(body), "TERM and KILL") {
		t.Fatalf("USR1: %d %s", code, body)
	}
	code, body = call(t, addr, "GET", "/commands", "", nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"tag":"sleeper"`) {
		t.Fatalf("list: %d %s", code, body)
	}
	code, body = call(t, addr, "DELETE", "/commands/sleeper", "", nil)
	var killed apiv1.CommandInfo
	if code != http.StatusOK || json.Unmarshal(body, &killed) != nil || killed.Running || killed.Signal != "KILL" {
		t.Fatalf("kill: %d %s", code, body)
	}

	// a timeout ends a command and says so.
	end, err = agent.Run(ctx, apiv1.StartCommandRequest{Cmd: "sleep 30", Timeout: 1}, agentcall.Streams{})
	if err != nil || end.Signal != "KILL" || !strings.Contains(end.Error, "timed out") {
		t.Fatalf("timeout: %+v %v", end, err)
	}

	// the code API is not bridged.
	if code, body := call(t, addr, "POST", "/code/execute", "application/json", []byte(`{"code":"1"}`)); code != http.StatusNotImplemented {
		t.Fatalf("code: %d %s", code, body)
	}
}

func TestBridgeFiles(t *testing.T) {
	stack := agenttest.Serve(t)
	p := newProvider(t, stack)
	in, _ := startSandbox(t, p)
	addr, _ := p.AgentAddr(context.Background(), in.Handle)
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
	if code != http.StatusOK || json.Unmarshal(body, &info) != nil || info.Type != "file" || info.Size != 8 || info.Mode != "0600" {
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
	if code, body := call(t, addr, "GET", "/files/stat"+q(dir+"/c"), "", nil); code != http.StatusOK || !strings.Contains(string(body), `"type":"dir"`) {
		t.Fatalf("stat: %d %s", code, body)
	}
	if code, body := call(t, addr, "DELETE", "/files"+q(dir+"/c"), "", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, body)
	}
	if code, body := call(t, addr, "GET", "/files/stat"+q(dir+"/c"), "", nil); code != http.StatusNotFound {
		t.Fatalf("stat of the deleted: %d %s", code, body)
	}
	if code, body := call(t, addr, "PUT", "/files"+q(dir+"/x", "mode", "9"), "", nil); code != http.StatusBadRequest || !strings.Contains(string(body), "mode") {
		t.Fatalf("bad mode: %d %s", code, body)
	}
}

func TestBridgePty(t *testing.T) {
	stack := agenttest.Serve(t)
	p := newProvider(t, stack)
	_, agent := startSandbox(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pty, err := agent.StartPty(ctx, apiv1.StartPtyRequest{Cols: 80, Rows: 24, Cmd: "read line; echo got-$line; stty size"})
	if err != nil {
		t.Fatal(err)
	}
	defer pty.Close()
	if err := pty.Resize(ctx, 100, 30); err != nil {
		t.Fatal(err)
	}
	if err := pty.Write(ctx, []byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	exit, err := pty.Follow(ctx, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "got-ping") || !strings.Contains(out.String(), "30 100") || exit.ExitCode == nil || *exit.ExitCode != 0 {
		t.Fatalf("terminal said %q, exit %+v", out.String(), exit)
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
	go p.Watch(ctx, func(d sbx.Died) { died <- d })
	before := expiry(t, stack, in.ProviderSandboxID)
	// Killed behind the provider's back (on the server), one is reported;
	// the one the provider killed is not.
	if err := p.Kill(ctx, other.Handle); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("DELETE", stack.URL+"/e2b/sandboxes/"+in.ProviderSandboxID, nil)
	time.Sleep(300 * time.Millisecond) // a few rounds of renewals first
	after := expiry(t, stack, in.ProviderSandboxID)
	if !after.After(before) {
		t.Errorf("the lease was not renewed: expiry %s, then %s", before, after)
	}
	req.Header.Set("X-API-KEY", stack.Key)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("kill on the server: %v %v", resp, err)
	}
	d := <-died
	if d.ProviderSandboxID != in.ProviderSandboxID || !strings.Contains(d.Diagnostic, "gone from the E2B server") {
		t.Fatalf("died %+v", d)
	}
	select {
	case d := <-died:
		t.Fatalf("also reported %+v", d)
	case <-time.After(300 * time.Millisecond):
	}
}

// expiry is when the server would end a sandbox.
func expiry(t *testing.T, stack *agenttest.Stack, id string) time.Time {
	t.Helper()
	sb, err := stack.Store.GetSandbox(context.Background(), "", id)
	if err != nil {
		t.Fatal(err)
	}
	return sb.ExpiresAt
}

func itoa(n int) string { return strconv.Itoa(n) }
