package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/ndjson"
)

// Templates lists the templates sandboxes start from, each with every
// version kept.
func (c *Client) Templates(ctx context.Context) (*apiv1.TemplateList, error) {
	return call[apiv1.TemplateList](ctx, c, http.MethodGet, "/api/v1/templates", nil, nil)
}

// Template reads one template.
func (c *Client) Template(ctx context.Context, name string) (*apiv1.Template, error) {
	return call[apiv1.Template](ctx, c, http.MethodGet, "/api/v1/templates/"+url.PathEscape(name), nil, nil)
}

// DeleteTemplate deletes a template, every version of it, and its ready
// snapshot (the operator's); a 409 names what still stands on it.
func (c *Client) DeleteTemplate(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/templates/"+url.PathEscape(name), nil, nil, nil)
}

// BuildTemplate starts a build of a template of the key's project from a
// recipe; TemplateBuild and FollowBuildLog follow it.
func (c *Client) BuildTemplate(ctx context.Context, req apiv1.CreateTemplateRequest) (*apiv1.TemplateBuild, error) {
	return call[apiv1.TemplateBuild](ctx, c, http.MethodPost, "/api/v1/templates", nil, req)
}

// TemplateBuilds lists a template's builds, newest first.
func (c *Client) TemplateBuilds(ctx context.Context, template string) (*apiv1.TemplateBuildList, error) {
	return call[apiv1.TemplateBuildList](ctx, c, http.MethodGet, buildsPath(template), nil, nil)
}

// TemplateBuild reads one build of a template.
func (c *Client) TemplateBuild(ctx context.Context, template, id string) (*apiv1.TemplateBuild, error) {
	return call[apiv1.TemplateBuild](ctx, c, http.MethodGet, buildsPath(template)+"/"+url.PathEscape(id), nil, nil)
}

// BuildLog reads a build's log after line after.
func (c *Client) BuildLog(ctx context.Context, template, id string, after int64) (*apiv1.BuildLogPage, error) {
	q := url.Values{"after": {strconv.FormatInt(after, 10)}}
	return call[apiv1.BuildLogPage](ctx, c, http.MethodGet, buildsPath(template)+"/"+url.PathEscape(id)+"/logs", q, nil)
}

// FollowBuildLog gives fn each line of a build's log after line after, as
// it comes, until the build ends.
func (c *Client) FollowBuildLog(ctx context.Context, template, id string, after int64, fn func(apiv1.BuildLogLine) error) error {
	q := url.Values{"after": {strconv.FormatInt(after, 10)}, "follow": {"true"}}
	resp, err := c.send(ctx, http.MethodGet, buildsPath(template)+"/"+url.PathEscape(id)+"/logs", q, "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return ndjson.Read(resp.Body, fn)
}

func buildsPath(template string) string {
	return "/api/v1/templates/" + url.PathEscape(template) + "/builds"
}

// TemplateCatalog is the server's curated catalog of templates.
func (c *Client) TemplateCatalog(ctx context.Context) (*apiv1.TemplateCatalog, error) {
	return call[apiv1.TemplateCatalog](ctx, c, http.MethodGet, "/api/v1/template-catalog", nil, nil)
}
