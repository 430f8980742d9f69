package local

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/sbxdev/sbx"
)

// Kill implements sbx.Provider: the container, its network, its GPU shares,
// its cgroups and its directory go. What is already gone is fine.
func (p *Provider) Kill(ctx context.Context, h sbx.Handle) (err error) {
	defer func() { err = p.hide(err) }()
	id, err := handleID(h)
	if err != nil {
		return err
	}
	end, err := p.begin(ctx, id)
	if err != nil {
		return err
	}
	defer func() { p.tokens.Delete(id); end() }()
	return p.destroy(ctx, id)
}

// destroy removes everything a sandbox has on this host.
func (p *Provider) destroy(ctx context.Context, id string) error {
	errs := []error{p.removeContainer(ctx, id)}
	if p.cfg.Network != nil {
		errs = append(errs, p.cfg.Network.Detach(ctx, id))
	}
	p.cfg.GPUs.Release(id)
	errs = append(errs, p.removeCgroups(id))
	if err := p.engine.removeRoot(id); err != nil {
		return errors.Join(append(errs, err)...) // removing a mounted root would go through it
	}
	return errors.Join(append(errs, os.RemoveAll(p.dir(id)))...)
}

// removeContainer deletes a sandbox's container, whatever its state, if it
// still has one. runsc takes an ID for any container it is a prefix of, so
// the container is looked up first: removing x1, already gone, must not
// remove x10.
func (p *Provider) removeContainer(ctx context.Context, id string) error {
	st, err := p.rs.State(ctx, id)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && st.ID != id) {
		return nil
	}
	return p.deleteContainer(ctx, id)
}

// deleteContainer deletes a container known to exist under exactly this ID.
func (p *Provider) deleteContainer(ctx context.Context, id string) error {
	_, err := p.rs.Run(ctx, nil, "delete", "--force", id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
