package sshgate

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyFile is the name, in serve's data dir, of the gateway's host key.
const HostKeyFile = "ssh_host_ed25519_key"

// LoadHostKey reads the host key at path (OpenSSH's private key format),
// making an ed25519 one there, readable by its owner only, when there is
// none: a server keeps its host key across restarts, so that clients that
// know it go on trusting it. A file that is there but not a key is an error,
// never replaced.
func LoadHostKey(path string) (ssh.Signer, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = newHostKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("the SSH host key: %w", err)
	}
	key, err := ssh.ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("the SSH host key %s: %w", path, err)
	}
	return key, nil
}

// newHostKey writes a new ed25519 key to path, atomically, and answers it;
// a key another process wrote meanwhile wins.
func newHostKey(path string) ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "sbx ssh gateway")
	if err != nil {
		return nil, err
	}
	data := pem.EncodeToMemory(block)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ssh_host_key-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil { // CreateTemp made it 0600
		return nil, err
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		return os.ReadFile(path)
	} else if err != nil {
		return nil, err
	}
	return data, nil
}

// KnownHostsLine is the known_hosts line of key for a server at host:port,
// as OpenSSH writes it ([host]:port unless the port is 22).
func KnownHostsLine(host string, port int, key ssh.PublicKey) string {
	return knownhosts.Line([]string{knownhosts.Normalize(net.JoinHostPort(host, strconv.Itoa(port)))}, key)
}
