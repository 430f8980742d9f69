package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/sbxdev/sbx/opensandbox"
)

// OpenSandboxConfig is how serve runs the opensandbox provider.
type OpenSandboxConfig struct {
	URL        string        // the server's domain as OpenSandbox's SDKs take it (http(s)://host[/prefix]); the API is under /v1
	APIKey     string        // the API key ($OPEN_SANDBOX_API_KEY)
	APIKeyFile string        // a file holding the API key, when APIKey is empty
	Lease      time.Duration // a sandbox's expiration, renewed while serve runs; default 10m
}

// startOpenSandbox builds the opensandbox provider, named as the instance
// (--name). A server that does not answer yet is no error: the provider's
// Check says so, and its sandboxes are reconciled when it answers.
func startOpenSandbox(ctx context.Context, cfg Config, log *slog.Logger) (*opensandbox.Provider, error) {
	key, err := apiKey(cfg.OpenSandbox.APIKey, cfg.OpenSandbox.APIKeyFile, "--opensandbox-api-key-file")
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, errors.New("the opensandbox provider needs an API key: set $OPEN_SANDBOX_API_KEY or --opensandbox-api-key-file")
	}
	if cfg.OpenSandbox.URL == "" {
		return nil, errors.New("the opensandbox provider needs its server: --opensandbox-url")
	}
	p, err := opensandbox.New(opensandbox.Config{APIURL: cfg.OpenSandbox.URL, APIKey: key, Name: cfg.Local.Name, Lease: cfg.OpenSandbox.Lease})
	if err != nil {
		return nil, fmt.Errorf("--opensandbox-…: %w", err)
	}
	if err := p.Check(ctx); err != nil {
		log.Warn("the OpenSandbox server does not answer; opensandbox sandboxes cannot run until it does", "url", cfg.OpenSandbox.URL, "err", err)
	} else {
		log.Info("opensandbox provider ready", "url", cfg.OpenSandbox.URL, "name", cfg.Local.Name)
	}
	return p, nil
}

// apiKey is a provider's API key: the one given (from the environment),
// else the first line of file (flag names it in errors).
func apiKey(key, file, flag string) (string, error) {
	if key != "" || file == "" {
		return key, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	return strings.TrimSpace(string(data)), nil
}
