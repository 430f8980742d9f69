package sshgate

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/strictjson"
	"github.com/sbxdev/sbx/telemetry"
	"golang.org/x/crypto/ssh"
)

// Authentication: the user name names the sandbox; a public key registered
// to a member or project that reaches it, or a token made for it (as the
// password, or the answer to the one keyboard-interactive question), lets
// the client in, as whom sshauth says. Every refusal is the same to the
// client: "permission denied".

// identityKey is the key, in an admitted credential's ssh.Permissions,
// of the identity it admitted (conn.ids).
const identityKey = "sbx-identity"

// tokenPrompt is the keyboard-interactive question; `sbx sandbox ssh`'s
// askpass answers it (and ssh's password prompt) with the token.
const tokenPrompt = "sbx token: "

// errDenied is every authentication failure.
var errDenied = errors.New("permission denied")

// identity is who an admitted credential acts for, and how it was told.
type identity struct {
	caller sbx.Caller
	how    string // for the log: which key or token
}

// conn is one client's connection.
type conn struct {
	g    *Gateway
	user string              // the user name the client asked as
	ids  map[string]identity // by identityKey's value: the credentials admitted, each for the user name it was offered with (the handshake's goroutine only)

	// Once authenticated:
	sconn  *ssh.ServerConn
	caller sbx.Caller
	ref    string // the sandbox, as the user name names it
	how    string
	wg     sync.WaitGroup // the channels' goroutines
}

// config is the server side of one handshake: its callbacks record who
// each admitted credential acts for.
func (c *conn) config() *ssh.ServerConfig {
	cfg := &ssh.ServerConfig{
		MaxAuthTries:  maxAuthTries,
		ServerVersion: "SSH-2.0-sbx",
		PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			ctx, cancel, ok := c.lookup(meta)
			if !ok {
				return nil, errDenied
			}
			defer cancel()
			caller, k, err := c.g.auth.ByKey(ctx, key, c.user)
			if err != nil {
				return nil, c.refused(meta, "publickey", err)
			}
			return c.admit("key "+k.Fingerprint+" as "+c.user, identity{caller, fmt.Sprintf("ssh key %s (%s, %s)", k.ID, strictjson.Short(k.Name), k.Fingerprint)}), nil
		},
		PasswordCallback: func(meta ssh.ConnMetadata, password []byte) (*ssh.Permissions, error) {
			return c.token(meta, "password", string(password))
		},
		KeyboardInteractiveCallback: func(meta ssh.ConnMetadata, ask ssh.KeyboardInteractiveChallenge) (*ssh.Permissions, error) {
			answers, err := ask("", "", []string{tokenPrompt}, []bool{false})
			if err != nil || len(answers) != 1 {
				return nil, errDenied
			}
			return c.token(meta, "keyboard-interactive", answers[0])
		},
	}
	cfg.AddHostKey(c.g.hostKey)
	return cfg
}

// lookup starts a credential's lookup for the user name meta names: a
// context bounding it, or false for a name that names no sandbox.
func (c *conn) lookup(meta ssh.ConnMetadata) (context.Context, context.CancelFunc, bool) {
	c.user = meta.User()
	if !validRef(c.user) {
		c.g.log.Debug("ssh: authentication refused", "remote", meta.RemoteAddr().String(), "user", strictjson.Short(c.user), "why", "not a sandbox ID")
		return nil, nil, false
	}
	ctx, cancel := context.WithTimeout(c.g.ctx, lookupTimeout)
	return ctx, cancel, true
}

// token admits a token made for the sandbox the user name names.
func (c *conn) token(meta ssh.ConnMetadata, method, secret string) (*ssh.Permissions, error) {
	ctx, cancel, ok := c.lookup(meta)
	if !ok {
		return nil, errDenied
	}
	defer cancel()
	caller, t, err := c.g.auth.ByToken(ctx, secret, c.user)
	if err != nil {
		return nil, c.refused(meta, method, err)
	}
	return c.admit("token "+t.ID, identity{caller, fmt.Sprintf("token %s of API key %s", t.ID, caller.Key.ID)}), nil
}

// admit records who an admitted credential acts for.
func (c *conn) admit(id string, who identity) *ssh.Permissions {
	c.ids[id] = who
	return &ssh.Permissions{Extensions: map[string]string{identityKey: id}}
}

// refused logs why a credential was refused (never the credential) and
// answers the one refusal.
func (c *conn) refused(meta ssh.ConnMetadata, method string, err error) error {
	log := c.g.log.Debug
	if sbx.ErrorCode(err) != sbx.EUnauthorized {
		log = c.g.log.Warn // the ledger failed, not the client
	}
	log("ssh: authentication refused", "remote", meta.RemoteAddr().String(), "user", c.user, "method", method, "err", err)
	return errDenied
}

// validRef reports whether s could be a sandbox's ID: its provider sandbox
// ID or its UUID.
func validRef(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// serveChannels serves the connection's channels until it ends: sessions
// and local forwards, at most maxChannels at once.
func (c *conn) serveChannels(ctx context.Context, chans <-chan ssh.NewChannel) {
	slots := make(chan struct{}, maxChannels)
	for nch := range chans {
		var serve func(context.Context, ssh.NewChannel)
		telemetry.SSHChannel(nch.ChannelType())
		switch nch.ChannelType() {
		case "session":
			serve = c.session
		case "direct-tcpip":
			serve = c.forward
		default:
			nch.Reject(ssh.UnknownChannelType, "sbx's SSH gateway opens sessions and local forwards (direct-tcpip) only")
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			nch.Reject(ssh.ResourceShortage, fmt.Sprintf("a connection holds at most %d channels at once", maxChannels))
			continue
		}
		c.wg.Go(func() {
			defer func() { <-slots }()
			serve(ctx, nch)
		})
	}
}
