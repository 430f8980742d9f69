package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writePair writes a self-signed certificate for name, and its key, with
// modification time at.
func writePair(t *testing.T, certFile, keyFile, name string, at time.Time) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
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
