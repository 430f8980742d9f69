package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sbxdev/sbx/e2b"
)

// E2BConfig is how serve runs the e2b provider.
type E2BConfig struct {
	APIURL     string        // the E2B API; default https://api.e2b.app
	Domain     string        // the sandboxes' domain when the API names none; default e2b.app
	SandboxURL string        // where every sandbox's envd is reached instead (E2B_SANDBOX_URL); "": at its domain
	APIKey     string        // the API key ($E2B_API_KEY)
	APIKeyFile string        // a file holding the API key, when APIKey is empty
	Lease      time.Duration // a sandbox's E2B timeout, renewed while serve runs; default 10m
}

// startE2B builds the e2b provider, named as the instance (--name) so that
// serves sharing an E2B account keep apart. An API that does not answer yet
// is no error: the provider's Check says so, and its sandboxes are
// reconciled when it answers.
func startE2B(ctx context.Context, cfg Config, log *slog.Logger) (*e2b.Provider, error) {
	key, err := apiKey(cfg.E2B.APIKey, cfg.E2B.APIKeyFile, "--e2b-api-key-file")
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, errors.New("the e2b provider needs an API key: set $E2B_API_KEY or --e2b-api-key-file")
	}
	url := cmp.Or(cfg.E2B.APIURL, "https://api.e2b.app")
	p, err := e2b.New(e2b.Config{APIURL: strings.TrimRight(url, "/"), APIKey: key, Domain: cfg.E2B.Domain, SandboxURL: cfg.E2B.SandboxURL,
		Name: cfg.Local.Name, Lease: cfg.E2B.Lease})
	if err != nil {
		return nil, fmt.Errorf("--e2b-…: %w", err)
	}
	if err := p.Check(ctx); err != nil {
		log.Warn("the E2B API does not answer; e2b sandboxes cannot run until it does", "url", url, "err", err)
	} else {
		log.Info("e2b provider ready", "url", url, "name", cfg.Local.Name)
	}
	return p, nil
}
