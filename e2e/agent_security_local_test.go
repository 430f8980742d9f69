package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
)

// What code in a real gVisor sandbox can learn of and do with the agent's
// access token, and who commands run as: the token is in no process's
// environ or cmdline and in no file of the sandbox (searched as root), nor
// in the bundle on the host; commands run as the template's unprivileged
// user by default, who cannot read PID 1's environment; a command that holds
// the token still cannot rotate it through the agent's own API (on
// loopback or on the sandbox's own address), nor can its holder at the
// runtime URL; the owner's exec works on, across a hibernation too.
func TestAgentTokenStaysOutOfTheSandbox(t *testing.T) {
	s := localServer(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard
	defer cancel()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	sb, err := c.Create(ctx, "base", &client.CreateOptions{WaitReady: true, Timeout: time.Hour, MemoryMB: 512})
	if err != nil {
		t.Fatal(err)
	}
	token := sb.Data().AccessToken
	run := func(cmd string, opts *client.CommandOptions) *client.CommandResult {
		t.Helper()
		res, err := sb.Commands.Run(ctx, cmd, opts)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return res
	}
	// The pattern is put together inside, in /dev/shm (left out of the
	// search), so that no argv or environ holds the token whole.
	halves := map[string]string{"A": token[:len(token)/2], "B": token[len(token)/2:]}
	const search = `printf '%s%s' "$A" "$B" > /dev/shm/pattern
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do grep -qF -f /dev/shm/pattern "$f" 2>/dev/null && echo "found in $f"; done
grep -rlF -f /dev/shm/pattern / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev 2>/dev/null | sed 's/^/found in /'
echo searched $(ls -d /proc/[0-9]* | wc -l) processes`
	searchAll := func(when string) {
		t.Helper()
		res := run(search, &client.CommandOptions{User: "root", Env: halves})
		if strings.Contains(res.Stdout, "found in") || !strings.Contains(res.Stdout, "searched") {
			t.Errorf("%s: the token is readable in the sandbox:\n%s%s", when, res.Stdout, res.Stderr)
		}
	}
	// The search finds the token where it is: a file planted for the purpose.
	run(`printf '%s%s' "$A" "$B" > /var/tmp/planted`, &client.CommandOptions{User: "root", Env: halves})
	if res := run(search, &client.CommandOptions{User: "root", Env: halves}); !strings.Contains(res.Stdout, "found in /var/tmp/planted") {
		t.Fatalf("the search missed a planted token: %q %q", res.Stdout, res.Stderr)
	}
	run("rm /var/tmp/planted", &client.CommandOptions{User: "root"})
	searchAll("after create")
	bundle, err := os.ReadFile(filepath.Join(s.dataDir, "sandboxes", sb.Data().SandboxID, "bundle", "config.json"))
	if err != nil || strings.Contains(string(bundle), token) {
		t.Errorf("the bundle holds the token (%v)", err)
	}

	// Commands, files and PTYs run as the template's user by default.
	if res := run(`id -un; id -u; echo "$HOME"; pwd; cat /proc/1/environ > /dev/null && echo read PID 1`, nil); res.Stdout != "user\n1000\n/home/user\n/workspace\n" {
		t.Errorf("a command's user: %q %q", res.Stdout, res.Stderr)
	}
	if _, err := sb.Files.Write(ctx, "/workspace/made/new.txt", strings.NewReader("hi")); err != nil {
		t.Fatal(err)
	}
	if res := run("stat -c %U /workspace/made /workspace/made/new.txt", nil); res.Stdout != "user\nuser\n" {
		t.Errorf("new files belong to %q", res.Stdout)
	}
	var scr screen
	term, err := sb.Pty.Create(ctx, client.PtyOptions{Cmd: "echo I am $(id -un)", OnData: scr.write})
	if err != nil {
		t.Fatal(err)
	}
	scr.waitFor(t, ctx, "I am user")
	term.Disconnect()
	for user, want := range map[string]string{"root": "root 0", "nobody": "nobody 65534", "0": "root 0"} {
		if res := run("echo $(id -un) $(id -u)", &client.CommandOptions{User: user}); strings.TrimSpace(res.Stdout) != want || res.ExitCode != 0 {
			t.Errorf("--user %s: %+v", user, res)
		}
	}
	if out, errOut, code := s.cli("exec", "--user", "nobody", sb.ID(), "--", "id", "-u"); code != 0 || out != "65534\n" {
		t.Errorf("sbx exec --user nobody: %d %q %q", code, out, errOut)
	}

	// A command that holds the token cannot rotate it, from loopback or
	// from the sandbox's own address.
	const rotate = `for a in 127.0.0.1 $(hostname -I); do
  echo "$a $(curl -s -o /dev/null -w '%{http_code}' -X POST -H "X-Access-Token: $T" -H 'Content-Type: application/json' -d "{\"token\":\"$N\"}" http://$a:49983/token)"
done`
	stolen := strings.Repeat("s", 40)
	res := run(rotate, &client.CommandOptions{Env: map[string]string{"T": token, "N": stolen}})
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) < 2 {
		t.Errorf("the rotation attempts: %q %q", res.Stdout, res.Stderr)
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, " 403") {
			t.Errorf("rotating the token from inside: %q", l)
		}
	}
	runtimeURL := func(method, path, tok, body string) int {
		req, _ := http.NewRequestWithContext(ctx, method, s.url+path, strings.NewReader(body))
		req.Host = strings.TrimPrefix(sb.Data().RuntimeURL, "http://")
		req.Header.Set(apiv1.AccessTokenHeader, tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req) // the agent's own API, which the OpenAPI document does not describe
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := runtimeURL("POST", "/token", token, `{"token":"`+stolen+`"}`); got != http.StatusForbidden {
		t.Errorf("rotating at the runtime URL: %d", got)
	}
	if got := runtimeURL("GET", "/commands", stolen, ""); got != http.StatusUnauthorized {
		t.Errorf("the token set from inside works: %d", got)
	}
	if res := run("echo still mine", nil); res.Stdout != "still mine\n" {
		t.Errorf("the owner's exec after the attempts: %+v", res)
	}

	// An image without /etc/passwd: UIDs still work; names cannot.
	if res := run("mv /etc/passwd /etc/passwd.gone", &client.CommandOptions{User: "root"}); res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	for user, want := range map[string]string{"0": "0", "1000": "1000"} {
		if res, err := sb.Commands.Run(ctx, "id -u", &client.CommandOptions{User: user}); err != nil || res.Stdout != want+"\n" {
			t.Errorf("--user %s without /etc/passwd: %+v %v", user, res, err)
		}
	}
	if _, err := sb.Commands.Run(ctx, "id -u", nil); err == nil || !strings.Contains(err.Error(), "/etc/passwd") {
		t.Errorf("the default user without /etc/passwd: %v", err)
	}
	if res := run("mv /etc/passwd.gone /etc/passwd", &client.CommandOptions{User: "0"}); res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}

	// A wake restores the agent with the token it had.
	if err := sb.Hibernate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sb.Resume(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if res := run("id -un", nil); res.Stdout != "user\n" {
		t.Errorf("after the wake: %+v", res)
	}
	searchAll("after the wake")
}
