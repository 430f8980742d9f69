package local

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/oci"
	"github.com/sbxdev/sbx/template"
)

// Sandboxes from OCI images: a create resolves the image with the caller's
// credentials (ResolveImage), then the provider pulls it once into a
// template of its own, named by the manifest's digest, in <DataDir>/images,
// where no templateID reaches. A later create of the same digest uses that
// tree without pulling, but only after its registry has answered that
// caller's credentials with that digest, so a cached private image is no
// one else's.

// ResolveImage implements sbx.ImageStarter through the registries the
// operator allows (Config.Registries).
func (p *Provider) ResolveImage(ctx context.Context, field string, img sbx.ImageSpec) (sbx.ImageSpec, error) {
	ref, err := p.cfg.Registries.Resolve(ctx, field, img.Ref, oci.Auth{Username: img.Username, Password: img.Password})
	if err != nil {
		return img, err
	}
	img.Ref = ref
	return img, nil
}

// images holds the templates pulled from images.
func (p *Provider) images() template.Store {
	return template.Store{Dir: filepath.Join(p.cfg.DataDir, "images")}
}

// template is the tree a new sandbox starts from: its template's current
// version, or its image's, pulled now when this host has not yet.
func (p *Provider) template(ctx context.Context, spec sbx.Spec) (template.Template, error) {
	if spec.Image == nil {
		t, err := p.cfg.Templates.Current(spec.TemplateID)
		if err != nil {
			return t, sbx.Errorf(sbx.EInvalid, "%s", err.Error())
		}
		return t, nil
	}
	img := *spec.Image
	_, digest, ok := strings.Cut(img.Ref, "@sha256:")
	if !ok || template.CheckName(digest) != nil {
		return template.Template{}, sbx.Errorf(sbx.EInvalid, "image %q is not pinned to a sha256 digest", img.Ref)
	}
	if err := p.pulls.Lock(ctx, digest); err != nil {
		return template.Template{}, err
	}
	defer p.pulls.Unlock(digest)
	store := p.images()
	t, err := store.Current(digest)
	if !errors.Is(err, template.ErrNotBuilt) {
		return t, err
	}
	t, err = store.BuildOCI(ctx, digest, img.Ref, template.OCIOptions{
		Remote:   p.cfg.Registries.Options(ctx, oci.Auth{Username: img.Username, Password: img.Password}),
		MaxBytes: p.cfg.MaxImageMB << 20,
	}, io.Discard)
	if err != nil {
		return t, &sbx.Error{Code: sbx.EProvider, Message: "pulling image " + img.Ref + ": " + err.Error(), Err: err}
	}
	return t, nil
}
