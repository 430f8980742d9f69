package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	key, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v", info.Mode())
	}
	again, err := LoadOrCreateKey(path)
	if err != nil || !bytes.Equal(key, again) {
		t.Fatalf("the key changed on reload: %v", err)
	}
	box, _ := New(key)
	sealed := box.Seal("token-123", "row 1")
	if strings.Contains(sealed, "token-123") || sealed == box.Seal("token-123", "row 1") {
		t.Fatal("sealing is not randomized encryption")
	}
	if got, err := box.Open(sealed, "row 1"); err != nil || got != "token-123" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := box.Open(sealed, "row 2"); err == nil {
		t.Fatal("the value opened in another row's context")
	}
	other, _ := New(bytes.Repeat([]byte{9}, 32))
	if _, err := other.Open(sealed, "row 1"); err == nil {
		t.Fatal("another key opened the value")
	}
	if _, err := box.Open("2.!!", "row 1"); err == nil {
		t.Fatal("garbage opened")
	}
	if box.Seal("", "row 1") != "" {
		t.Fatal("the empty string must stay empty")
	}
	for _, size := range []int{16, 24, 31} {
		if _, err := New(make([]byte, size)); err == nil || !strings.Contains(err.Error(), "want 32 bytes") {
			t.Errorf("a %d-byte key: %v", size, err)
		}
	}
}

// A value sealed before contexts existed opens only through OpenUnbound,
// for sealing again with its context.
func TestOpenUnbound(t *testing.T) {
	box, _ := New(bytes.Repeat([]byte{7}, 32))
	legacy := box.legacySeal("token-123")
	if _, err := box.Open(legacy, "row 1"); err == nil || !strings.Contains(err.Error(), "no context") {
		t.Fatalf("Open of an unbound value: %v", err)
	}
	if got, err := box.OpenUnbound(legacy); err != nil || got != "token-123" {
		t.Fatalf("OpenUnbound = %q, %v", got, err)
	}
	if _, err := box.OpenUnbound(box.Seal("token-123", "row 1")); err == nil {
		t.Fatal("OpenUnbound opened a bound value")
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	good, hex := filepath.Join(dir, "good"), filepath.Join(dir, "hex")
	os.WriteFile(good, bytes.Repeat([]byte{7}, 32), 0o600)
	os.WriteFile(hex, []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	if key, err := LoadKey(good); err != nil || !bytes.Equal(key, bytes.Repeat([]byte{7}, 32)) {
		t.Fatalf("LoadKey: %v", err)
	}
	if _, err := LoadKey(hex); err == nil || !strings.Contains(err.Error(), "want exactly 32 bytes (raw, not hex or base64, no newline), have 65") {
		t.Fatalf("a hex key file: %v", err)
	}
	if _, err := LoadKey(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing key file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("LoadKey made a key")
	}
	if _, err := LoadOrCreateKey(hex); err == nil {
		t.Fatal("LoadOrCreateKey took a key of the wrong size")
	}
}

// legacySeal seals as Seal did before contexts: no prefix, no associated data.
func (b *Box) legacySeal(s string) string {
	nonce := make([]byte, b.aead.NonceSize())
	return base64.RawStdEncoding.EncodeToString(b.aead.Seal(nonce, nonce, []byte(s), nil))
}
