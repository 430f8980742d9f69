package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/oci"
	"github.com/sbxdev/sbx/template"
)

// Sandboxes from OCI images: a create resolves the image with the caller's
// credentials (ResolveImage), then the provider pulls it once into a
// template of its own, named by a hash of the pinned reference
// (repository@digest), in <DataDir>/images, where no templateID reaches. A
// later create of the same reference uses that tree without pulling, but
// only after the registry has answered that caller's credentials with that
// digest, so a cached private image is no one else's.

// ResolveImage implements sbx.ImageStarter through the registries the
// operator allows (Config.Registries).
func (p *Provider) ResolveImage(ctx context.Context, field string, img sbx.ImageSpec) (sbx.ImageSpec, error) {
	if p.cfg.Registries == nil {
		return img, sbx.Errorf(sbx.EUnsupported, "this server starts no sandboxes from OCI images: give a templateID")
	}
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

// template is the tree a new sandbox starts from: its template's version
// (the current one unless the spec names another), or its image's, pulled
// now when this host has not yet; and, for an image, a line for the
// sandbox's log saying which.
func (p *Provider) template(ctx context.Context, spec sbx.Spec) (template.Template, string, error) {
	if spec.Image == nil {
		t, err := p.cfg.Templates.At(spec.TemplateID, spec.TemplateVersion)
		if err != nil {
			return t, "", sbx.Errorf(sbx.EInvalid, "%s", err.Error())
		}
		return t, "", nil
	}
	img := *spec.Image
	if !strings.Contains(img.Ref, "@sha256:") {
		return template.Template{}, "", sbx.Errorf(sbx.EInvalid, "image %q is not pinned to a sha256 digest", img.Ref)
	}
	// By the whole reference, not the digest alone: a registry names the
	// digest it likes, and only the repository that served a tree may
	// serve it again.
	sum := sha256.Sum256([]byte(img.Ref))
	name := hex.EncodeToString(sum[:])
	if err := p.pulls.Lock(ctx, name); err != nil {
		return template.Template{}, "", err
	}
	defer p.pulls.Unlock(name)
	store := p.images()
	t, err := store.Current(name)
	if !errors.Is(err, template.ErrNotBuilt) {
		return t, "image " + img.Ref + ": this host's copy, pulled " + t.Created.Format(time.RFC3339), err
	}
	start := time.Now()
	t, err = store.BuildOCI(ctx, name, img.Ref, template.OCIOptions{
		Remote:   p.cfg.Registries.Options(ctx, oci.Auth{Username: img.Username, Password: img.Password}),
		MaxBytes: p.cfg.MaxImageMB << 20,
	}, io.Discard)
	if err != nil {
		return t, "", &sbx.Error{Code: sbx.EProvider, Message: p.scrub("pulling image " + img.Ref + ": " + err.Error()), Err: err}
	}
	return t, fmt.Sprintf("image %s: pulled and unpacked in %s (first use on this host)", img.Ref, time.Since(start).Round(time.Millisecond)), nil
}
