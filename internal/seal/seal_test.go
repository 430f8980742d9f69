package seal

import (
	"bytes"
	"os"
	"path/filepath"
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
	sealed := box.Seal("token-123")
	if sealed == "token-123" || sealed == box.Seal("token-123") {
		t.Fatal("sealing is not randomized encryption")
	}
	if got, err := box.Open(sealed); err != nil || got != "token-123" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	other, _ := New(bytes.Repeat([]byte{9}, 32))
	if _, err := other.Open(sealed); err == nil {
		t.Fatal("another key opened the value")
	}
	if _, err := box.Open("!!"); err == nil {
		t.Fatal("garbage opened")
	}
	if box.Seal("") != "" {
		t.Fatal("the empty string must stay empty")
	}
}
