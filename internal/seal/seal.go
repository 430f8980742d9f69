// Package seal encrypts small secrets (sandbox access tokens, user secrets)
// at rest with AES-256-GCM under a key kept in the data directory. Each
// value is bound to a context naming the row it belongs to, so a sealed
// value copied to another row does not open there.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// prefix marks a value sealed with a context; values sealed before contexts
// existed have none and open only with OpenUnbound.
const prefix = "2."

// Box seals and opens strings under one key.
type Box struct{ aead cipher.AEAD }

// New returns a Box for a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("seal key: want 32 bytes (AES-256), have %d", len(key))
	}
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

// Seal encrypts s bound to context (which names the row it is kept in): it
// opens only with the same context. The empty string stays empty.
func (b *Box) Seal(s, context string) string {
	if s == "" {
		return ""
	}
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return prefix + base64.RawStdEncoding.EncodeToString(b.aead.Seal(nonce, nonce, []byte(s), []byte(context)))
}

// Open decrypts what Seal produced with the same context.
func (b *Box) Open(s, context string) (string, error) {
	if s == "" {
		return "", nil
	}
	body, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return "", errors.New("sealed value has no context: it was sealed before contexts, and the ledger's migration 0008 reseals such values")
	}
	return b.open(body, []byte(context))
}

// OpenUnbound decrypts a value sealed before contexts existed: only for
// sealing it again with its context.
func (b *Box) OpenUnbound(s string) (string, error) {
	if s == "" || strings.HasPrefix(s, prefix) {
		return "", errors.New("not a value sealed without a context")
	}
	return b.open(s, nil)
}

func (b *Box) open(s string, context []byte) (string, error) {
	raw, err := base64.RawStdEncoding.DecodeString(s)
	n := b.aead.NonceSize()
	if err != nil || len(raw) < n {
		return "", errors.New("sealed value is malformed")
	}
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], context)
	if err != nil {
		return "", errors.New("sealed value does not open with this key and context")
	}
	return string(plain), nil
}
