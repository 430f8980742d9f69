package local

import (
	"context"
	"errors"
	"sync"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/template"
)

// Templates implements sbx.TemplateKeeper: the built templates of the
// provider's store, each with every version kept.
func (p *Provider) Templates(ctx context.Context) ([]sbx.TemplateInfo, error) {
	current, err := p.cfg.Templates.List()
	if err != nil {
		return nil, err
	}
	out := make([]sbx.TemplateInfo, 0, len(current))
	for _, cur := range current {
		versions, err := p.cfg.Templates.Versions(cur.Name)
		if errors.Is(err, template.ErrNotBuilt) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		info := sbx.TemplateInfo{Name: cur.Name}
		for i, t := range versions {
			size, err := p.treeSizes.of(t)
			if err != nil {
				return nil, err
			}
			info.Versions = append(info.Versions, sbx.TemplateVersion{Version: t.Version, Current: i == 0, Source: t.Source,
				Packages: t.Packages, StartCmd: t.StartCmd, User: t.User, Ports: t.Ports, SizeBytes: size, Created: t.Created})
		}
		out = append(out, info)
	}
	return out, ctx.Err()
}

// RemoveTemplate implements sbx.TemplateKeeper.
func (p *Provider) RemoveTemplate(_ context.Context, name string) error {
	if err := p.cfg.Templates.Remove(name); err != nil {
		if errors.Is(err, template.ErrNotBuilt) {
			return p.noTemplate(name, err)
		}
		return err
	}
	return nil
}

// sizeCache remembers the size of each version's tree, measured once: a
// version never changes.
type sizeCache struct {
	mu    sync.Mutex
	sizes map[string]int64 // version directory → bytes
}

func (c *sizeCache) of(t template.Template) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sizes == nil {
		c.sizes = map[string]int64{}
	}
	if n, ok := c.sizes[t.Dir]; ok {
		return n, nil
	}
	n, err := template.Size(t)
	if err == nil {
		c.sizes[t.Dir] = n
	}
	return n, err
}

// Catalog implements sbx.Cataloger: the Debian templates of
// template.Catalog.
func (p *Provider) Catalog() []sbx.CatalogEntry {
	out := make([]sbx.CatalogEntry, 0, len(template.Catalog))
	for _, e := range template.Catalog {
		out = append(out, sbx.CatalogEntry{Name: e.Name, Category: e.Category, Description: e.Description, Packages: e.Packages})
	}
	return out
}
