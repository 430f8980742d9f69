package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
)

// recipe is a recipe file as `sbx template build NAME --recipe FILE` reads
// it: the API's body (apiv1.CreateTemplateRequest, its name the command's),
// where a file step may name a local file (source, relative to the recipe)
// in place of its base64 content.
type recipe struct {
	apiv1.CreateTemplateRequest
	Steps []recipeStep `json:"steps"`
}

type recipeStep struct {
	apiv1.RecipeStep
	File *recipeFile `json:"file,omitempty"`
}

type recipeFile struct {
	apiv1.RecipeFile
	Source string `json:"source,omitempty"`
}

// readRecipe reads a recipe file into the API's body for template name.
func readRecipe(path, name string) (apiv1.CreateTemplateRequest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return apiv1.CreateTemplateRequest{}, usagef("--recipe: %v", err)
	}
	var r recipe
	if err := strictJSON(data, &r); err != nil {
		return apiv1.CreateTemplateRequest{}, usagef("--recipe %s: %v", path, err)
	}
	req := r.CreateTemplateRequest
	req.Name, req.Steps = name, nil
	for i, s := range r.Steps {
		step := s.RecipeStep
		if f := s.File; f != nil {
			step.File = &f.RecipeFile
			if f.Source != "" {
				if f.Content != nil {
					return req, usagef("--recipe %s: steps[%d].file: give content or source, not both", path, i)
				}
				src := f.Source
				if !filepath.IsAbs(src) {
					src = filepath.Join(filepath.Dir(path), src)
				}
				if step.File.Content, err = os.ReadFile(src); err != nil {
					return req, usagef("--recipe %s: steps[%d].file.source: %v", path, i, err)
				}
			}
		}
		req.Steps = append(req.Steps, step)
	}
	return req, nil
}

// buildRecipe is `sbx template build NAME --recipe FILE`: the build runs on
// the server, in a sandbox of the key's project. With follow, its log goes
// to stderr as it comes and the command fails with the build.
func (g *globals) buildRecipe(ctx context.Context, c *client.Client, req apiv1.CreateTemplateRequest, follow bool) error {
	b, err := c.BuildTemplate(ctx, req)
	if err != nil {
		return err
	}
	if follow {
		if err := c.FollowBuildLog(ctx, b.TemplateID, b.ID, 0, func(l apiv1.BuildLogLine) error {
			_, err := fmt.Fprintln(g.opts.Stderr, l.Text)
			return err
		}); err != nil {
			return err
		}
		if b, err = c.TemplateBuild(ctx, b.TemplateID, b.ID); err != nil {
			return err
		}
	}
	if err := g.show(b, func(w io.Writer) error {
		line := fmt.Sprintf("template %s (%s) build %s: %s", b.Template, b.TemplateID, b.ID, b.State)
		if b.Version != "" {
			line += ", version " + b.Version
		}
		_, err := fmt.Fprintln(w, line)
		return err
	}); err != nil {
		return err
	}
	if b.State == "failed" {
		return fmt.Errorf("build %s failed: %s", b.ID, b.Error)
	}
	return nil
}

// strictJSON decodes data into v, refusing unknown fields.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
