package lifecycle_test

import (
	"context"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
)

// A provider without an agent: the agent's routes are a clear 501, the
// runtime URL checks the token before anything, and a rotated token
// replaces the old one in the ledger.
func TestAgentWithoutOneAndTokenRotation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.create(lifecycle.CreateRequest{})
	if _, err := e.m.Agent(ctx, e.caller, sb.ID); sbx.ErrorCode(err) != sbx.EUnsupported {
		t.Errorf("Agent on a provider that runs none: %v", err)
	}
	if _, err := e.m.AgentOf(ctx, sb.ProviderSandboxID, "wrong"); sbx.ErrorCode(err) != sbx.EUnauthorized {
		t.Errorf("AgentOf with a wrong token: %v", err)
	}
	if _, err := e.m.AgentOf(ctx, sb.ProviderSandboxID, sb.AccessToken); sbx.ErrorCode(err) != sbx.EUnsupported {
		t.Errorf("AgentOf with the right token: %v", err)
	}
	rotated, err := e.m.RotateToken(ctx, sb)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.AccessToken == sb.AccessToken || e.get(sb.ID).AccessToken != rotated.AccessToken {
		t.Errorf("the token was not replaced: %q → %q (ledger %q)", sb.AccessToken, rotated.AccessToken, e.get(sb.ID).AccessToken)
	}
	if _, err := e.m.AgentOf(ctx, sb.ProviderSandboxID, sb.AccessToken); sbx.ErrorCode(err) != sbx.EUnauthorized {
		t.Errorf("the old token still works: %v", err)
	}
}
