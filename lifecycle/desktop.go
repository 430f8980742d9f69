package lifecycle

import (
	"bytes"
	"context"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/agentcall"
	"github.com/sbxdev/sbx/internal/strictjson"
)

// Screenshot is a PNG of a running sandbox's desktop (the display
// apiv1.DesktopDisplay of a desktop template's), taken in the sandbox with
// ImageMagick's import.
func (m *Manager) Screenshot(ctx context.Context, c sbx.Caller, ref string) ([]byte, error) {
	sb, err := m.Get(ctx, c, ref)
	if err != nil {
		return nil, err
	}
	if sb.State != sbx.StateRunning {
		return nil, sbx.Errorf(sbx.EConflict, "sandbox %s is %s: a screenshot needs it running", sb.ProviderSandboxID, sb.State)
	}
	addr, err := m.agentAddr(ctx, sb)
	if err != nil {
		return nil, err
	}
	var png, errOut bytes.Buffer
	end, err := agentcall.For(sb, addr).Run(ctx, apiv1.StartCommandRequest{Args: []string{"import", "-display", apiv1.DesktopDisplay, "-window", "root", "png:-"}, Timeout: 30},
		agentcall.Streams{Stdout: &png, Stderr: &errOut})
	if err != nil {
		return nil, err
	}
	if end.ExitCode == nil || *end.ExitCode != 0 || png.Len() == 0 {
		why := strings.TrimSpace(errOut.String())
		if end.Error != "" {
			why = end.Error
		}
		return nil, sbx.Errorf(sbx.EConflict, "sandbox %s has no desktop to capture on display %s (a desktop template's, with ImageMagick): %s", sb.ProviderSandboxID, apiv1.DesktopDisplay, strictjson.Cut(why, 300))
	}
	return png.Bytes(), nil
}
