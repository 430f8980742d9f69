// Package local is sbx's default provider: every sandbox runs in gVisor, as
// an OCI bundle run by runsc on this host. The template's tree is the
// read-only lower layer of the sandbox's root; writes go to a per-sandbox
// upper layer, kept in the sandbox's directory.
package local

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/local/runsc"
	"github.com/sbxdev/sbx/template"
)

// Name is the provider's name in the ledger.
const Name = "local"

// Config is where the provider keeps its sandboxes and what it runs them with.
type Config struct {
	DataDir   string // sandboxes live in <DataDir>/sandboxes, runsc's state in <DataDir>/runsc
	Runsc     string // the runsc binary
	Templates template.Store
}

// Provider runs sandboxes with runsc.
type Provider struct {
	cfg Config
	rs  runsc.Runsc
}

// New returns the provider, creating its directories.
func New(cfg Config) (*Provider, error) {
	p := &Provider{cfg: cfg, rs: runsc.Runsc{Path: cfg.Runsc, Root: filepath.Join(cfg.DataDir, "runsc")}}
	for _, d := range []string{p.rs.Root, p.sandboxesDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Name implements sbx.Provider.
func (p *Provider) Name() string { return Name }

// Capabilities implements sbx.Provider.
func (p *Provider) Capabilities() sbx.Capabilities { return sbx.Capabilities{MemoryPause: true} }

// meta is what the provider records about a sandbox, in its directory.
type meta struct {
	SandboxID       string    `json:"sandbox_id"`
	ProviderID      string    `json:"provider_id"`
	Template        string    `json:"template"`
	TemplateVersion string    `json:"template_version"`
	Flags           []string  `json:"flags"` // the per-sandbox runsc flags, reused by checkpoint and restore
	Created         time.Time `json:"created"`
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// Create implements sbx.Provider: bundle, then `runsc run --detach`.
func (p *Provider) Create(ctx context.Context, spec sbx.Spec) (sbx.Instance, error) {
	if err := ctx.Err(); err != nil {
		return sbx.Instance{}, err
	}
	if !idPattern.MatchString(spec.ProviderSandboxID) {
		return sbx.Instance{}, fmt.Errorf("sandbox ID %q is not one the local provider accepts", spec.ProviderSandboxID)
	}
	tmpl, err := p.cfg.Templates.Current(spec.TemplateID)
	if err != nil {
		return sbx.Instance{}, sbx.Errorf(sbx.EInvalid, "%s", err.Error())
	}
	dir := p.dir(spec.ProviderSandboxID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return sbx.Instance{}, fmt.Errorf("sandbox directory: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			p.destroy(context.WithoutCancel(ctx), spec.ProviderSandboxID)
		}
	}()
	m := meta{SandboxID: spec.SandboxID, ProviderID: spec.ProviderSandboxID, Template: tmpl.Name, TemplateVersion: tmpl.Version,
		Flags: []string{"--network=none", "--overlay2=root:dir=" + dir}, Created: time.Now().UTC()}
	if err := writeJSON(filepath.Join(dir, "sandbox.json"), m); err != nil {
		return sbx.Instance{}, err
	}
	bundle := filepath.Join(dir, "bundle")
	if err := os.Mkdir(bundle, 0o700); err != nil {
		return sbx.Instance{}, err
	}
	if err := writeJSON(filepath.Join(bundle, "config.json"), ociSpec(spec, tmpl)); err != nil {
		return sbx.Instance{}, err
	}
	output, err := os.OpenFile(filepath.Join(dir, "output.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return sbx.Instance{}, err
	}
	defer output.Close()
	if err := p.rs.Start(ctx, m.Flags, bundle, spec.ProviderSandboxID, output); err != nil {
		return sbx.Instance{}, err
	}
	ok = true
	return instance(m, sbx.InstanceRunning), nil
}

// Pause implements sbx.Provider: the sandbox is frozen, its memory kept.
func (p *Provider) Pause(ctx context.Context, h sbx.Handle) error {
	id, err := handleID(h)
	if err != nil {
		return err
	}
	_, err = p.rs.Run(ctx, nil, "pause", id)
	return err
}

// Resume implements sbx.Provider.
func (p *Provider) Resume(ctx context.Context, h sbx.Handle) (sbx.Handle, error) {
	id, err := handleID(h)
	if err != nil {
		return sbx.Handle{}, err
	}
	if _, err := p.rs.Run(ctx, nil, "resume", id); err != nil {
		return sbx.Handle{}, err
	}
	return h, nil
}

// Kill implements sbx.Provider: the container, its state and its directory go.
func (p *Provider) Kill(ctx context.Context, h sbx.Handle) error {
	id, err := handleID(h)
	if err != nil {
		return err
	}
	return p.destroy(ctx, id)
}

// destroy removes a sandbox's container and directory; what is already gone is fine.
func (p *Provider) destroy(ctx context.Context, id string) error {
	_, err := p.rs.Run(ctx, nil, "delete", "--force", id)
	if err != nil && !strings.Contains(err.Error(), "does not exist") && !strings.Contains(err.Error(), "not found") {
		return err
	}
	return os.RemoveAll(p.dir(id))
}

// List implements sbx.Provider: every runsc container under the provider's
// root, labelled with the sbx UUID recorded next to its bundle.
func (p *Provider) List(ctx context.Context) ([]sbx.Instance, error) {
	cs, err := p.rs.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []sbx.Instance
	for _, c := range cs {
		var m meta
		if err := readJSON(filepath.Join(p.dir(c.ID), "sandbox.json"), &m); err != nil {
			m = meta{ProviderID: c.ID} // a container sbx did not make: unowned, so reconcile destroys it
		}
		status := sbx.InstanceDead
		switch c.Status {
		case "running", "created":
			status = sbx.InstanceRunning
		case "paused":
			status = sbx.InstancePaused
		}
		out = append(out, instance(m, status))
	}
	return out, nil
}

func (p *Provider) sandboxesDir() string { return filepath.Join(p.cfg.DataDir, "sandboxes") }

func (p *Provider) dir(id string) string { return filepath.Join(p.sandboxesDir(), id) }

func instance(m meta, status sbx.InstanceStatus) sbx.Instance {
	return sbx.Instance{SandboxID: m.SandboxID, ProviderSandboxID: m.ProviderID, Status: status, Handle: sbx.IDHandle(m.ProviderID)}
}

func handleID(h sbx.Handle) (string, error) { return sbx.HandleID(h, idPattern.MatchString) }

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
