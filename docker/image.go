package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/template"
)

// ImageRepo is the repository a template of the store is imported as:
// <ImageRepo>/<name>:<version>.
const ImageRepo = template.ImageRepo

// origin is what a sandbox starts from: an image of the daemon, and what
// the agent is told of it.
type origin struct {
	ref      string // the image
	imported bool   // made from a template tree, whose env is sbx's
	user     string // the agent's default user; "": root
	workdir  string // the agent's default working directory; "": its own
	start    string // the template's start command; "": none
	version  string
}

// imageInfo is what the provider reads of GET /images/{name}/json.
type imageInfo struct {
	ID     string `json:"Id"`
	Config struct {
		User       string
		WorkingDir string
	}
}

// source finds spec's image: an image of the daemon named as the template
// is used as it is (its user and working directory the agent's defaults,
// never its entrypoint or command); else the template of the store,
// imported as an image once (with doImport; else only checked).
func (p *Provider) source(ctx context.Context, spec sbx.Spec, doImport bool) (origin, error) {
	name := spec.TemplateID
	if strings.HasPrefix(name, "tpl-") || strings.HasPrefix(name, ImageRepo+"/") {
		// A project's template (tpl-…) is the local provider's, found and
		// authorized by lifecycle for its project; its tree, or the image
		// imported from one, is no other caller's to start by name.
		return origin{}, sbx.Errorf(sbx.ENotFound, "template %s is not one the docker provider runs: it runs the server's templates and the daemon's images", name)
	}
	if spec.TemplateVersion == "" && name != "" {
		var img imageInfo
		err := p.api.Call(ctx, "GET", "/images/"+url.PathEscape(name)+"/json", nil, nil, &img)
		if err == nil {
			return origin{ref: name, user: img.Config.User, workdir: img.Config.WorkingDir}, nil
		}
		if !IsStatus(err, 404) && !IsStatus(err, 400) {
			return origin{}, err
		}
	}
	t, err := p.cfg.Templates.At(name, spec.TemplateVersion)
	if err != nil {
		return origin{}, p.noTemplate(name, err)
	}
	o := origin{ref: ImageRepo + "/" + t.Name + ":" + t.Version, imported: true, user: t.User, workdir: t.Workdir, start: t.StartCmd, version: t.Version}
	if doImport {
		if err := p.importTemplate(ctx, t, o.ref); err != nil {
			return origin{}, fmt.Errorf("importing template %s version %s into the Docker daemon: %w", t.Name, t.Version, err)
		}
	}
	return o, nil
}

// noTemplate is a create's refusal of a template that neither the daemon
// nor the store has.
func (p *Provider) noTemplate(name string, err error) error {
	if !errors.Is(err, template.ErrNotBuilt) {
		return sbx.Errorf(sbx.EInvalid, "%s", err.Error())
	}
	if errors.Is(err, template.ErrNoVersion) {
		return &sbx.Error{Code: sbx.ENotFound, Message: err.Error(), Err: err}
	}
	return &sbx.Error{Code: sbx.ENotFound, Message: fmt.Sprintf("template %s is neither an image of the Docker daemon nor a template of this server", name), Err: err}
}

// importTemplate makes t's tree the image ref, unless the daemon has it:
// POST /images/create?fromSrc=- with a tar of the tree. Imports of one
// image take turns; a version never changes, so an image made once (by
// this serve or another sharing the daemon) serves every later create.
func (p *Provider) importTemplate(ctx context.Context, t template.Template, ref string) error {
	if err := p.imports.Lock(ctx, ref); err != nil {
		return err
	}
	defer p.imports.Unlock(ref)
	err := p.api.Call(ctx, "GET", "/images/"+url.PathEscape(ref)+"/json", nil, nil, nil)
	if err == nil || !IsStatus(err, 404) {
		return err
	}
	repo, tag, _ := strings.Cut(ref, ":")
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(template.WriteTree(pw, t.Rootfs())) }()
	q := url.Values{"fromSrc": {"-"}, "repo": {repo}, "tag": {tag},
		"changes": {"LABEL " + template.LabelName + "=" + t.Name, "LABEL " + template.LabelVersion + "=" + t.Version}}
	resp, err := p.api.Request(ctx, "POST", "/images/create", q, pr, map[string][]string{"Content-Type": {"application/x-tar"}})
	if err != nil {
		pr.CloseWithError(err)
		return err
	}
	defer resp.Body.Close()
	// The answer is a stream of JSON progress messages; a failure is one
	// with an error, after a 200.
	dec := json.NewDecoder(resp.Body)
	for {
		var m struct {
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return err
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
	return p.api.Call(ctx, "GET", "/images/"+url.PathEscape(ref)+"/json", nil, nil, nil)
}

func jsonString(v any) (string, error) {
	data, err := json.Marshal(v)
	return string(data), err
}
