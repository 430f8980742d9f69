package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// `sbx sandbox ssh ID` mints a token for the sandbox (POST …/ssh) and runs
// the real ssh in its place: ssh asks its askpass program for the password,
// and sbx, run again as that program (SSH_ASKPASS_REQUIRE=force), answers
// with the token from its environment, where no other user can read it. The
// server's host key, from the API's answer, is the one ssh accepts (a
// known_hosts file of sbx's own), so there is no first-use question and no
// host key to trust blindly. Why a token and not a certificate: a token is a
// password any SSH client can paste (PuTTY, an IDE), it needs no key pair on
// the client and no signing key shared by every serve, and like an API key
// only its hash is stored, in the ledger every serve shares.

// Askpass: the environment `sbx sandbox ssh` gives ssh.
const (
	askpassEnv = "SBX_SSH_ASKPASS" // "1": this process answers ssh's password prompt
	tokenEnv   = "SBX_SSH_TOKEN"   // the token it answers with
	loginEnv   = "SBX_SSH_LOGIN"   // user@host of the gateway: the only password prompt it answers
)

// askpass answers ssh's prompt (args[0]) with the token, when this process
// is sbx run by ssh as its askpass program; it reports whether it was.
func askpass(args []string, stdout io.Writer) (int, bool) {
	token := os.Getenv(tokenEnv)
	if os.Getenv(askpassEnv) != "1" || token == "" || len(args) != 1 {
		return 0, false
	}
	// The gateway's keyboard-interactive question, or its password prompt,
	// and nothing else: a jump host's password prompt (ssh -J) must not get
	// the token.
	prompt := strings.TrimSpace(args[0])
	if !strings.Contains(strings.ToLower(prompt), "sbx token") && prompt != os.Getenv(loginEnv)+"'s password:" {
		return 1, true // a question for a person (a host key, another host's password): no answer
	}
	fmt.Fprintln(stdout, token)
	return 0, true
}

// newSandboxSSH is `sbx sandbox ssh ID [--] [COMMAND [ARG...]]`.
func newSandboxSSH(g *globals) *cobra.Command {
	var expires time.Duration
	var print bool
	var sshArgs []string
	cmd := &cobra.Command{
		Use:   "ssh [flags] ID [--] [COMMAND [ARG...]]",
		Short: "Open an SSH session in a sandbox (a shell, or COMMAND) with a short-lived token, through the SSH gateway",
		Long: "Mint a token that opens the sandbox through serve's SSH gateway and run ssh with it: a shell, or COMMAND " +
			"with its exit code. A paused sandbox wakes. The token works for --expires (default 5 minutes) for new " +
			"connections; a session it opened lasts. --print shows the token, the ssh command line and the host key " +
			"instead, for another SSH client. Flags come before ID: what follows it is the command.",
		Example: "  sbx sandbox ssh ID\n  sbx sandbox ssh ID -- ls -la\n  sbx sandbox ssh --ssh-arg=-L8080:localhost:8000 ID -- sleep 600\n  sbx sandbox ssh --print --expires 30m ID",
		Args: func(cmd *cobra.Command, got []string) error {
			if len(got) < 1 {
				return usagef("%s takes ID and an optional command\nusage: %s", cmd.CommandPath(), cmd.UseLine())
			}
			return nil
		},
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			access, err := c.SSHAccess(ctx, args[0], expires)
			if err != nil {
				return err
			}
			if print {
				return g.show(access, func(w io.Writer) error {
					return fields(w, []field{{"User", access.User}, {"Host", access.Host}, {"Port", strconv.Itoa(access.Port)},
						{"Token", access.Token}, {"Expires", stamp(access.ExpiresAt)}, {"Command", access.Command},
						{"Known host", access.KnownHosts}, {"Note", "give the token as the password; it is shown this once"}})
				})
			}
			return runSSH(access, sshArgs, execArgv(args))
		}),
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // what follows ID is the command's
	f.Var(durationValue{&expires}, "expires", "how long the token opens the sandbox for new connections, in seconds or as 10m (5s to 1h; default the server's, 5m)")
	f.BoolVar(&print, "print", false, "print the token, the ssh command line and the host key instead of running ssh")
	f.StringArrayVar(&sshArgs, "ssh-arg", nil, "an argument for ssh, before the destination (repeat for several): --ssh-arg=-L8080:localhost:8000")
	return cmd
}

// runSSH runs ssh, in this process's place, to the gateway access names,
// with the token answered by this binary as ssh's askpass.
func runSSH(access *apiv1.SSHAccess, sshArgs, command []string) error {
	bin, err := exec.LookPath("ssh")
	if err != nil {
		return errors.New("no ssh on PATH: install OpenSSH's client (Debian: apt install openssh-client), or use --print with another client")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this sbx binary, ssh's askpass: %w", err)
	}
	known, err := rememberHostKey(access.KnownHosts)
	if err != nil {
		return err
	}
	argv := []string{"ssh", "-p", strconv.Itoa(access.Port),
		"-o", "UserKnownHostsFile=" + known, "-o", "StrictHostKeyChecking=yes",
		"-o", "PreferredAuthentications=keyboard-interactive,password", "-o", "PubkeyAuthentication=no",
		"-o", "NumberOfPasswordPrompts=1"}
	argv = append(argv, sshArgs...)
	argv = append(append(argv, "--", access.User+"@"+access.Host), command...)
	env := append(os.Environ(), "SSH_ASKPASS="+self, "SSH_ASKPASS_REQUIRE=force", askpassEnv+"=1", tokenEnv+"="+access.Token, loginEnv+"="+access.User+"@"+access.Host)
	return syscall.Exec(bin, argv, env)
}

// rememberHostKey keeps the gateway's host key line in sbx's own
// known_hosts file (under the user's config directory, replacing an older
// line for the same host), and answers its path.
func rememberHostKey(line string) (string, error) {
	host, _, ok := strings.Cut(line, " ")
	if !ok {
		return "", fmt.Errorf("the server named no host key for its SSH gateway")
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "sbx")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "known_hosts")
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var lines []string
	for _, l := range strings.Split(string(old), "\n") {
		if h, _, _ := strings.Cut(l, " "); l != "" && h != host {
			lines = append(lines, l)
		}
	}
	lines = append(lines, line)
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}
