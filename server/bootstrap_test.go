package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
)

// The first start makes a verified default org and the operator's key, so
// that a fresh install creates sandboxes with the KYC gate on; a second
// start makes nothing.
func TestBootstrapMakesAVerifiedOrgAndTheOperatorsKey(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := ledger.Open(ctx, filepath.Join(dir, "ledger.db"), bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var out bytes.Buffer
	cfg := withDefaults(Config{DataDir: dir, Out: &out, Log: slog.New(slog.DiscardHandler)})
	if err := bootstrap(ctx, store, cfg); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimSpace(string(key))
	c, err := store.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	if c.Org.Name != "default" || c.Org.KYCStatus != sbx.KYCVerified || !c.Verified() || !c.Key.Operator || c.Role != sbx.RoleOwner {
		t.Fatalf("first-start caller: %+v", c)
	}
	if rt, err := store.Runtime(ctx, c.Project.ID); err != nil || rt.Status != sbx.RuntimeIdle {
		t.Fatalf("the default project's runtime: %+v %v", rt, err)
	}
	// out is no terminal (a log, a journal): the key is not in it, its file is.
	if strings.Contains(out.String(), secret) || !strings.Contains(out.String(), filepath.Join(dir, KeyFile)) {
		t.Errorf("the first start's output, not a terminal: %q", out.String())
	}
	cfg.Out = io.Discard
	if err := bootstrap(ctx, store, cfg); err != nil {
		t.Fatal(err)
	}
	if n, _ := store.CountOrgs(ctx); n != 1 {
		t.Fatalf("%d orgs after a second start", n)
	}
}

// On a terminal, the first start shows the operator's key once, besides
// writing it to its file.
func TestBootstrapShowsTheKeyOnATerminal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := ledger.Open(ctx, filepath.Join(dir, "ledger.db"), bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	terminal, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer terminal.Close()
	if err := bootstrap(ctx, store, withDefaults(Config{DataDir: dir, Out: tty, Log: slog.New(slog.DiscardHandler)})); err != nil {
		t.Fatal(err)
	}
	tty.Close() // the terminal then reads what was written, and ends
	shown, _ := io.ReadAll(terminal)
	key, err := os.ReadFile(filepath.Join(dir, KeyFile))
	if err != nil || !strings.Contains(string(shown), strings.TrimSpace(string(key))) {
		t.Errorf("the terminal shows %q, the key file holds %q (%v)", shown, key, err)
	}
}
