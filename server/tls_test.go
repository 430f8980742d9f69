package server

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sbxdev/sbx/internal/testenv"
)

// writePair writes a self-signed certificate for name, and its key, with
// modification time at.
func writePair(t *testing.T, certFile, keyFile, name string, at time.Time) {
	t.Helper()
	testenv.WriteCert(t, certFile, keyFile, name)
	os.Chtimes(certFile, at, at)
	os.Chtimes(keyFile, at, at)
}

func served(t *testing.T, c *certFiles) string {
	t.Helper()
	c.checked = time.Time{} // as if a second had gone by
	cert, err := c.get(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	return leaf.Subject.CommonName
}

// The pair is read again when it changes; a pair that does not load (half
// written) leaves the last good one serving; half a pair, or a bad one,
// fails at start.
func TestCertificatesAreReadAgainWhenTheyChange(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	t0 := time.Now().Add(-time.Hour)
	writePair(t, certFile, keyFile, "first", t0)
	c, err := newCertFiles(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := served(t, c); got != "first" {
		t.Fatalf("serving %q", got)
	}
	writePair(t, certFile, keyFile, "renewed", t0.Add(time.Minute))
	if got := served(t, c); got != "renewed" {
		t.Errorf("after a renewal, serving %q", got)
	}
	os.WriteFile(keyFile, []byte("half written"), 0o600)
	os.Chtimes(keyFile, t0.Add(2*time.Minute), t0.Add(2*time.Minute))
	if got := served(t, c); got != "renewed" {
		t.Errorf("while the key is half written, serving %q", got)
	}
	if _, err := newCertFiles(certFile, ""); err == nil {
		t.Error("half a pair started")
	}
	if _, err := newCertFiles(certFile, keyFile); err == nil {
		t.Error("a bad pair started")
	}
}
