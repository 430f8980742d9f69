package server

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/sbxdev/sbx/docker"
	"github.com/sbxdev/sbx/local"
	"github.com/sbxdev/sbx/template"
)

// DockerConfig is how serve runs the docker provider.
type DockerConfig struct {
	Host    string // the daemon: unix:///path or tcp://host:port; default docker.DefaultHost
	Runtime string // the daemon's OCI runtime for sandboxes ("runsc" where gVisor is registered); default the daemon's
}

// startDocker builds the docker provider over the daemon at
// cfg.Docker.Host, with the sandboxes' agent (local.DefaultAgent) and the
// templates directory, named as the instance (--name) so that serves
// sharing a daemon keep apart. A daemon that does not answer yet is no
// error: the provider's Check says so, and its sandboxes are reconciled
// when it answers.
func startDocker(ctx context.Context, cfg Config, log *slog.Logger) (*docker.Provider, error) {
	agent, err := local.DefaultAgent(cfg.DataDir)
	if cfg.Local.Agent != "" {
		agent, err = cfg.Local.Agent, nil
	}
	if err != nil {
		return nil, err
	}
	p, err := docker.New(docker.Config{Host: cfg.Docker.Host, Name: cfg.Local.Name, Runtime: cfg.Docker.Runtime, Agent: agent, Templates: templateStore(cfg)})
	if err != nil {
		return nil, fmt.Errorf("--docker-host: %w", err)
	}
	if err := p.Check(ctx); err != nil {
		log.Warn("the Docker daemon does not answer; docker sandboxes cannot run until it does", "host", cmp.Or(cfg.Docker.Host, docker.DefaultHost), "err", err)
	} else {
		log.Info("docker provider ready", "host", cmp.Or(cfg.Docker.Host, docker.DefaultHost), "name", cfg.Local.Name, "runtime", cfg.Docker.Runtime)
	}
	return p, nil
}

// templateStore is serve's template store, which the providers that start
// sandboxes from its templates' images read.
func templateStore(cfg Config) template.Store {
	return template.Store{Dir: cmp.Or(cfg.Local.TemplatesDir, filepath.Join(cfg.DataDir, "templates"))}
}
