// Package seal encrypts small secrets (sandbox access tokens) at rest with
// AES-256-GCM under a key kept in the data directory.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
)

// Box seals and opens strings under one key.
type Box struct{ aead cipher.AEAD }

// New returns a Box for a 32-byte key.
func New(key []byte) (*Box, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("seal key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// LoadKey reads the key at path, which must exist and hold exactly 32 bytes.
func LoadKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("seal key: %w", err)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("seal key %s: want exactly 32 bytes (raw, not hex or base64, no newline), have %d", path, len(key))
	}
	return key, nil
}

// LoadOrCreateKey reads the key at path, creating it (mode 0600) when missing.
func LoadOrCreateKey(path string) ([]byte, error) {
	key, err := LoadKey(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return key, err
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		return nil, err
	}
	return key, f.Close()
}

// Seal encrypts s; the empty string stays empty.
func (b *Box) Seal(s string) string {
	if s == "" {
		return ""
	}
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return base64.RawStdEncoding.EncodeToString(b.aead.Seal(nonce, nonce, []byte(s), nil))
}

// Open decrypts what Seal produced.
func (b *Box) Open(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	raw, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil || len(raw) < b.aead.NonceSize() {
		return "", errors.New("sealed value is malformed")
	}
	n := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], nil)
	if err != nil {
		return "", errors.New("sealed value does not open with this key")
	}
	return string(plain), nil
}
