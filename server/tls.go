package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// certFiles serves a certificate from PEM files, loaded again when either
// file changes (an operator's renewal needs no restart). The files are
// looked at once a second at most, and a pair that fails to load (half
// written, say) is not tried again until it changes again: the last good
// pair goes on serving meanwhile.
type certFiles struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	tried   time.Time // the later of the two files' modification times when last loaded or tried
	checked time.Time // when the files were last looked at
}

// newCertFiles loads the pair once, so that a bad pair (or half of one)
// fails serve's start before anything else happens.
func newCertFiles(certFile, keyFile string) (*certFiles, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("--tls-cert and --tls-key go together: give both, or neither")
	}
	c := &certFiles{certFile: certFile, keyFile: keyFile}
	if _, err := c.get(nil); err != nil {
		return nil, err
	}
	return c, nil
}

// get is a tls.Config's GetCertificate.
func (c *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.cert != nil && now.Sub(c.checked) < time.Second {
		return c.cert, nil
	}
	c.checked = now
	mod, err := c.newest()
	if c.cert != nil && (err != nil || !mod.After(c.tried)) {
		return c.cert, nil // unchanged, or being replaced: keep serving the last good pair
	}
	c.tried = mod
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		if c.cert != nil {
			return c.cert, nil
		}
		return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", c.certFile, c.keyFile, err)
	}
	c.cert = &pair
	return c.cert, nil
}

// newest is the later modification time of the two files.
func (c *certFiles) newest() (time.Time, error) {
	var t time.Time
	for _, f := range []string{c.certFile, c.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return t, err
		}
		if fi.ModTime().After(t) {
			t = fi.ModTime()
		}
	}
	return t, nil
}
