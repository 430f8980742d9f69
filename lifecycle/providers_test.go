package lifecycle_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/providertest"
)

// other is the Memory provider under another name: a second provider.
type other struct{ *providertest.Memory }

func (other) Name() string { return "other" }

// A create names its provider among the server's, or goes to the default;
// a name the server has no provider of is a 400 listing those it has; one
// configured but down is a 503; a sandbox's later operations go to its own
// provider, and one from a snapshot starts on the snapshot's.
func TestCreateNamesItsProvider(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.dir, "other")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	second := other{providertest.NewMemory(providertest.MemoryOptions{StateDir: dir})}
	m := lifecycle.New(e.store, []sbx.Provider{e.prov, second}, lifecycle.Config{DefaultProvider: providertest.MemoryName, MaxTimeout: 24 * time.Hour},
		e.clock, slog.New(slog.DiscardHandler))
	m.MarkMissing("down", "its daemon does not answer")
	ctx := context.Background()
	create := func(provider string) (sbx.Sandbox, error) {
		return m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base", WaitReady: true, Provider: provider})
	}
	def, err := create("")
	if err != nil || def.Provider != providertest.MemoryName {
		t.Fatalf("a create naming no provider: %+v %v", def, err)
	}
	sb, err := create("other")
	if err != nil || sb.Provider != "other" {
		t.Fatalf("a create on other: %+v %v", sb, err)
	}
	if list, _ := second.List(ctx); len(list) != 1 || list[0].ProviderSandboxID != sb.ProviderSandboxID {
		t.Fatalf("other holds %+v", list)
	}
	if _, err := m.Pause(ctx, e.caller, sb.ID, sbx.PauseUser); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Resume(ctx, e.caller, sb.ID, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base", Provider: "other", PoolMode: sbx.PoolRequire}); sbx.ErrorCode(err) != sbx.ENoWarmSandbox {
		t.Errorf("a create on other that requires a warm pool: %v", err)
	}
	_, err = create("nope")
	if sbx.ErrorCode(err) != sbx.EInvalid || !strings.Contains(err.Error(), `"nope" is not one of this server's: down, memory, other`) {
		t.Errorf("an unknown provider: %v", err)
	}
	if _, err := create("down"); sbx.ErrorCode(err) != sbx.EUnavailable || !strings.Contains(err.Error(), "its daemon does not answer") {
		t.Errorf("a provider that is down: %v", err)
	}
	if _, err := m.Kill(ctx, e.caller, sb.ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := second.List(ctx); len(list) != 0 {
		t.Errorf("a killed sandbox's compute is left on other: %+v", list)
	}
}
