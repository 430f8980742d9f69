package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testenv"
)

// openSSH runs the real OpenSSH client (ssh, scp) against a serve's SSH
// gateway, with a key of its own and a known_hosts file of its own, and no
// configuration of the host's or the user's. It knows the gateway's host
// key from the API's answer (known_hosts, in dir).
type openSSH struct {
	t    *testing.T
	dir  string
	port string
	key  string // a private key file; "" for none
}

// on is c for test t.
func (c openSSH) on(t *testing.T) *openSSH {
	c.t = t
	return &c
}

// options are the options every ssh and scp run takes.
func (c *openSSH) options() []string {
	opts := []string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=" + filepath.Join(c.dir, "known_hosts"),
		"-o", "ConnectTimeout=30", "-o", "IdentitiesOnly=yes"}
	if c.key != "" {
		opts = append(opts, "-i", c.key, "-o", "BatchMode=yes")
	}
	return opts
}

// command is ssh with these arguments after the common options.
func (c *openSSH) command(args ...string) *exec.Cmd {
	return exec.Command("ssh", append(append(c.options(), "-p", c.port), args...)...)
}

// run runs ssh to its end with stdin, and answers its stdout, stderr and
// exit code.
func (c *openSSH) run(stdin string, args ...string) (string, string, int) {
	c.t.Helper()
	return runCmd(c.t, c.command(args...), stdin)
}

// scp copies with scp (SFTP, OpenSSH's default from 9.0 on).
func (c *openSSH) scp(from, to string) time.Duration {
	c.t.Helper()
	start := time.Now()
	out, errOut, code := runCmd(c.t, exec.Command("scp", append(append(c.options(), "-P", c.port), from, to)...), "")
	if code != 0 {
		c.t.Fatalf("scp %s %s: exit %d\n%s%s", from, to, code, out, errOut)
	}
	return time.Since(start)
}

func runCmd(t *testing.T, cmd *exec.Cmd, stdin string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// keygen makes an ed25519 key pair at path and path.pub with ssh-keygen.
func keygen(t *testing.T, path string) {
	t.Helper()
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", filepath.Base(path)+"@test", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
}

// sha256File is a file's SHA-256 in hex.
func sha256File(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// httpdSource is a tiny HTTP server, built static on the host and copied
// into the sandbox, whose base template has no server of its own.
const httpdSource = `package main

import (
	"fmt"
	"net/http"
	"os"
)

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello from the sandbox %s\n", r.URL.Path) })
	if err := http.ListenAndServe(os.Args[1], nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

// The SSH gateway with a real gVisor sandbox and the real OpenSSH client:
// a key registered with sbx ssh-key add; a command's output, stderr and
// exit code, stdin piped, an env var sent; an interactive shell on a
// terminal whose window change takes effect; scp of 50 MB up and back,
// owned by the sandbox's user; ssh -L to an HTTP server in the sandbox, the
// agent's port refused; another org's key, an unknown sandbox and a wrong
// or expired token refused; sbx sandbox ssh's token; a hibernated sandbox
// woken by a connection; a session ended, saying why, by the sandbox's
// deletion.
func TestSSHGatewayLocal(t *testing.T) {
	for _, tool := range []string{"ssh", "scp", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool+" (Debian's openssh-client)")
		}
	}
	s := localServer(t, false)
	dir := t.TempDir()
	_, port, _ := strings.Cut(s.sshAddr, ":")
	key := filepath.Join(dir, "id")
	keygen(t, key)
	if out := s.ok("ssh-key", "add", "--project", "default", key+".pub"); !strings.Contains(out, "SHA256:") {
		t.Fatalf("sbx ssh-key add: %s", out)
	}
	c := &openSSH{t: t, dir: dir, port: port, key: key}
	sb := s.create(map[string]any{"waitReady": true, "timeout": 3600})
	var access apiv1.SSHAccess
	s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/ssh", nil, http.StatusCreated, &access)
	if err := os.WriteFile(filepath.Join(dir, "known_hosts"), []byte(access.KnownHosts+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dest := sb.SandboxID + "@127.0.0.1"

	t.Run("exec", func(t *testing.T) {
		c := c.on(t)
		out, errOut, code := c.run("", dest, "echo hi; echo oops >&2; exit 3")
		if out != "hi\n" || errOut != "oops\n" || code != 3 {
			t.Errorf("ssh host cmd: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		cmd := c.command("-o", "SendEnv=GREETING", dest, `tr a-z A-Z; echo "$GREETING"; id -un; pwd`)
		cmd.Env = append(os.Environ(), "GREETING=hej")
		out, errOut, code = runCmd(t, cmd, "hello\nworld\n")
		if out != "HELLO\nWORLD\nhej\nuser\n/workspace\n" || code != 0 {
			t.Errorf("stdin piped, env sent: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if out, errOut, code := c.run("", sb.ID+"@127.0.0.1", "echo by uuid"); out != "by uuid\n" || code != 0 {
			t.Errorf("by the sandbox's UUID: exit %d, %q %q", code, out, errOut)
		}
		// A command that ends while ssh's stdin stays open (a terminal's,
		// say) ends the session all the same.
		cmd = c.command(dest, "echo done; exit 2")
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		keep, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		defer keep.Close()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ended := make(chan error, 1)
		go func() { ended <- cmd.Wait() }()
		select {
		case <-ended:
			if code := cmd.ProcessState.ExitCode(); code != 2 || stdout.String() != "done\n" {
				t.Errorf("with stdin open: exit %d, %q", code, stdout.String())
			}
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			t.Error("a command that ended with ssh's stdin open did not end the session")
		}
	})

	t.Run("terminal", func(t *testing.T) {
		c := c.on(t)
		cmd := c.command("-tt", dest)
		tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
		if err != nil {
			t.Fatal(err)
		}
		defer tty.Close()
		var out syncBuffer
		go io.Copy(&out, tty)
		waitOut := func(re string) {
			t.Helper()
			r := regexp.MustCompile(re)
			for deadline := time.Now().Add(time.Minute); !r.MatchString(out.String()); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("no %s in the terminal's output:\n%q", re, out.String())
				}
			}
		}
		io.WriteString(tty, "tty; stty size\n")
		waitOut(`/dev/pts/\d+\r?\n`)
		waitOut(`[\r\n]24 80\r\n`)
		if err := pty.Setsize(tty, &pty.Winsize{Rows: 40, Cols: 100}); err != nil { // ssh gets SIGWINCH and sends a window-change
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		io.WriteString(tty, "stty size; exit 5\n")
		waitOut(`[\r\n]40 100\r\n`)
		err = cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 5 {
			t.Errorf("the shell's exit: %d (%v)\n%q", code, err, out.String())
		}
	})

	t.Run("scp", func(t *testing.T) {
		c := c.on(t)
		big := filepath.Join(dir, "big.bin")
		data := make([]byte, 50<<20)
		rand.Read(data)
		if err := os.WriteFile(big, data, 0o600); err != nil {
			t.Fatal(err)
		}
		sum := sha256File(t, big)
		up := c.scp(big, dest+":big.bin")
		out, errOut, code := c.run("", dest, "sha256sum big.bin; stat -c '%U %s' big.bin")
		if code != 0 || out != sum+"  big.bin\nuser 52428800\n" {
			t.Errorf("the file in the sandbox: exit %d, %q %q; want sha256 %s, owned by user", code, out, errOut, sum)
		}
		back := filepath.Join(dir, "back.bin")
		down := c.scp(dest+":big.bin", back)
		if got := sha256File(t, back); got != sum {
			t.Errorf("scp back: sha256 %s, want %s", got, sum)
		}
		t.Logf("scp of 50 MB through the gateway: up %s, down %s", up.Round(time.Millisecond), down.Round(time.Millisecond))
	})

	t.Run("forward", func(t *testing.T) {
		c := c.on(t)
		src := filepath.Join(dir, "httpd.go")
		os.WriteFile(src, []byte(httpdSource), 0o600)
		bin := filepath.Join(dir, "httpd")
		build := exec.Command("go", "build", "-o", bin, src)
		build.Dir, build.Env = dir, append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the sandbox's HTTP server: %v\n%s", err, out)
		}
		c.scp(bin, dest+":httpd")
		if out, errOut, code := c.run("", dest, "chmod +x httpd && (nohup ./httpd 0.0.0.0:8000 >httpd.log 2>&1 &)"); code != 0 {
			t.Fatalf("starting the server: exit %d %q %q", code, out, errOut)
		}
		local := freeAddr(t)
		fwd := c.command("-N", "-o", "ExitOnForwardFailure=yes", "-L", local+":localhost:8000", dest)
		var fwdErr syncBuffer
		fwd.Stderr = &fwdErr
		if err := fwd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { fwd.Process.Kill(); fwd.Wait() }()
		var body string
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			resp, err := http.Get("http://" + local + "/through/ssh")
			if err == nil {
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if body = string(data); resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("nothing through ssh -L: %v %q; ssh said %q", err, body, fwdErr.String())
			}
		}
		if body != "hello from the sandbox /through/ssh\n" {
			t.Errorf("through ssh -L: %q", body)
		}
		_, errOut, code := c.run("", "-W", "localhost:49983", dest)
		if code != 255 || !strings.Contains(errOut, "administratively prohibited") || !strings.Contains(errOut, "port 49983 is sbx's agent") {
			t.Errorf("forwarding to the agent's port: exit %d, %q", code, errOut)
		}
		out, errOut, code := c.run("GET /w HTTP/1.0\r\n\r\n", "-W", "localhost:8000", dest)
		if code != 0 || !strings.Contains(out, "hello from the sandbox /w") {
			t.Errorf("ssh -W to the server: exit %d, %q %q", code, out, errOut)
		}
	})

	t.Run("refused", func(t *testing.T) {
		own := c.on(t)
		var other apiv1.CreatedOrg
		s.call("POST", "/api/v1/admin/orgs", map[string]any{"name": "other", "kyc_status": "verified", "credits": "100"}, http.StatusCreated, &other)
		otherKey := filepath.Join(dir, "other")
		keygen(t, otherKey)
		pub, _ := os.ReadFile(otherKey + ".pub")
		s.callKey(other.Secret, "POST", "/api/v1/org/other/ssh-keys", apiv1.AddSSHKeyRequest{PublicKey: string(pub), ProjectID: other.Project.ID}, http.StatusCreated, nil)
		stranger := &openSSH{t: t, dir: dir, port: port, key: otherKey}
		for _, c := range []struct {
			what string
			c    *openSSH
			dest string
		}{
			{"another org's key", stranger, dest},
			{"a sandbox that does not exist", own, "inosuchsandbox@127.0.0.1"},
			{"a name that is no sandbox's", own, "root@127.0.0.1"},
		} {
			if out, errOut, code := c.c.run("", c.dest, "echo in"); code != 255 || !strings.Contains(errOut, "Permission denied") {
				t.Errorf("%s: exit %d, %q %q", c.what, code, out, errOut)
			}
		}
	})

	t.Run("token", func(t *testing.T) {
		config := t.TempDir() // sbx's known_hosts goes there
		sbxSSH := func(args ...string) (string, string, int) {
			t.Helper()
			cmd := exec.Command(sbxBin, append([]string{"sandbox", "ssh"}, args...)...)
			cmd.Env = append(os.Environ(), "SBX_URL="+s.url, "SBX_DATA_DIR="+s.dataDir, "SBX_API_KEY=", "XDG_CONFIG_HOME="+config)
			return runCmd(t, cmd, "")
		}
		out, errOut, code := sbxSSH(sb.SandboxID, "--", "echo via-token; exit 4")
		if out != "via-token\n" || code != 4 {
			t.Errorf("sbx sandbox ssh ID -- cmd: exit %d, %q %q", code, out, errOut)
		}
		if known, err := os.ReadFile(filepath.Join(config, "sbx", "known_hosts")); err != nil || !strings.HasPrefix(string(known), "[127.0.0.1]:"+port+" ssh-ed25519 ") {
			t.Errorf("sbx's known_hosts: %q %v", known, err)
		}
		out, errOut, code = sbxSSH("--print", "--json", "--expires", "5s", sb.SandboxID)
		var access apiv1.SSHAccess
		if code != 0 || json.Unmarshal([]byte(out), &access) != nil {
			t.Fatalf("sbx sandbox ssh --print --json: exit %d, %q %q", code, out, errOut)
		}
		// Any OpenSSH client with the token as its password (answered here
		// by sbx as askpass, as sbx sandbox ssh has it answered).
		withToken := func(token string) (string, string, int) {
			t.Helper()
			tc := &openSSH{t: t, dir: dir, port: port}
			cmd := tc.command("-o", "PreferredAuthentications=keyboard-interactive,password", "-o", "PubkeyAuthentication=no",
				"-o", "NumberOfPasswordPrompts=1", dest, "echo token-in")
			cmd.Env = append(os.Environ(), "SSH_ASKPASS="+sbxBin, "SSH_ASKPASS_REQUIRE=force", "SBX_SSH_ASKPASS=1", "SBX_SSH_TOKEN="+token)
			return runCmd(t, cmd, "")
		}
		if out, errOut, code := withToken(access.Token); out != "token-in\n" || code != 0 {
			t.Errorf("the token: exit %d, %q %q", code, out, errOut)
		}
		if out, errOut, code := withToken(access.Token + "0"); code != 255 || !strings.Contains(errOut, "Permission denied") {
			t.Errorf("a wrong token: exit %d, %q %q", code, out, errOut)
		}
		time.Sleep(time.Until(access.ExpiresAt) + time.Second)
		if out, errOut, code := withToken(access.Token); code != 255 || !strings.Contains(errOut, "Permission denied") {
			t.Errorf("an expired token: exit %d, %q %q", code, out, errOut)
		}
	})

	t.Run("wake", func(t *testing.T) {
		c := c.on(t)
		var p apiv1.Sandbox
		s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/pause", map[string]any{"hibernate": true}, http.StatusOK, &p)
		if p.State != "paused" || !p.Hibernated {
			t.Fatalf("hibernated: %+v", p)
		}
		if out, errOut, code := c.run("", dest, "echo awake; sha256sum big.bin | cut -c1-8"); !strings.HasPrefix(out, "awake\n") || code != 0 {
			t.Errorf("ssh to a hibernated sandbox: exit %d, %q %q", code, out, errOut)
		}
		got := s.get(sb.ID)
		if got.State != "running" {
			t.Errorf("after the connection: %s", got.State)
		}
		if !slices.ContainsFunc(got.Timeline, func(e apiv1.Event) bool { return e.Detail == "woken by an SSH session" }) {
			t.Errorf("the timeline does not say an SSH session woke it: %+v", got.Timeline)
		}
	})

	t.Run("deleted", func(t *testing.T) {
		c := c.on(t)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "ssh", append(append(c.options(), "-p", c.port), dest, "echo started; sleep 600")...)
		var out, errOut syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), "started"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the session did not start: %q %q", out.String(), errOut.String())
			}
		}
		s.call("DELETE", "/api/v1/sandboxes/"+sb.ID, nil, http.StatusOK, nil)
		cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 255 || !strings.Contains(errOut.String(), "sbx: sandbox "+sb.SandboxID+" was deleted") {
			t.Errorf("a session whose sandbox is deleted: exit %d, stderr %q", code, errOut.String())
		}
	})
}
