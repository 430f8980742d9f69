package local

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/sbxdev/sbx"
)

// Kill implements sbx.Provider: the container, its network, its GPU shares,
// its cgroups and its directory go. What is already gone is fine.
func (p *Provider) Kill(ctx context.Context, h sbx.Handle) error {
	id, err := handleID(h)
	if err != nil {
		return err
	}
	end := p.begin(id)
	defer func() { end(); p.ops.Delete(id) }()
	return p.destroy(ctx, id)
}

// destroy removes everything a sandbox has on this host.
func (p *Provider) destroy(ctx context.Context, id string) error {
	errs := []error{p.removeContainer(ctx, id)}
	if p.cfg.Network != nil {
		errs = append(errs, p.cfg.Network.Detach(ctx, id))
	}
	p.cfg.GPUs.Release(id)
	errs = append(errs, p.removeCgroups(id), os.RemoveAll(p.dir(id)))
	return errors.Join(errs...)
}

// removeContainer deletes a sandbox's runsc container, whatever its state.
func (p *Provider) removeContainer(ctx context.Context, id string) error {
	_, err := p.rs.Run(ctx, nil, "delete", "--force", id)
	if err != nil && (strings.Contains(err.Error(), "does not exist") || strings.Contains(err.Error(), "not found")) {
		return nil
	}
	return err
}
