package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/internal/hostserve"
)

// client returns an API client for the server and key the command line names:
// the URL from --url, $SBX_URL or the default listen address; the key from
// $SBX_API_KEY or the admin key file that `sbx serve` writes to its data dir.
func (g *globals) client() (*client.Client, error) {
	key, err := g.key()
	if err != nil {
		return nil, err
	}
	return client.New(client.Options{URL: g.baseURL(), APIKey: key}), nil
}

// baseURL is where the API is.
func (g *globals) baseURL() string {
	if g.url != "" {
		return g.url
	}
	return env("SBX_URL", "http://"+hostserve.Listen)
}

// key finds the API key: the one globals hold when an embedding program set
// it, else $SBX_API_KEY, else the admin key in $SBX_DATA_DIR, or in the
// default data dir when that is not set.
func (g *globals) key() (string, error) {
	if g.apiKey != "" {
		return g.apiKey, nil
	}
	if k := strings.TrimSpace(os.Getenv("SBX_API_KEY")); k != "" {
		return k, nil
	}
	var tried []string
	for _, dir := range keyDirs() {
		path := filepath.Join(dir, hostserve.KeyFile)
		data, err := os.ReadFile(path)
		key := strings.TrimSpace(string(data))
		if err == nil && key != "" {
			return key, nil
		}
		if err == nil {
			err = errors.New("file is empty")
		}
		tried = append(tried, fmt.Sprintf("%s (%v)", path, unwrapPath(err)))
	}
	return "", fmt.Errorf("no API key: $SBX_API_KEY is not set and no admin key file could be read: %s; "+
		"set SBX_API_KEY to a key, or SBX_DATA_DIR to the data dir of `sbx serve` (its %s must be readable by you)",
		strings.Join(tried, ", "), hostserve.KeyFile)
}

// keyDirs are the data dirs to look for the admin key in: $SBX_DATA_DIR
// when it is set (a data dir named is the one meant: the default one's key
// may be another server's), else the default.
func keyDirs() []string {
	if dir := os.Getenv("SBX_DATA_DIR"); dir != "" {
		return []string{dir}
	}
	return []string{hostserve.DataDir}
}

// unwrapPath drops the path an *os.PathError repeats.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// explain makes an error from the client fit for people: an API error shows
// the server's detail and each field it names; an unreachable server says
// how to point at one.
func (g *globals) explain(err error) error {
	var apiErr *apiv1.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &apiErr):
		return &apiError{apiErr}
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach the sbx API at %s: %w (is `sbx serve` running? point at it with --url or $SBX_URL)", g.baseURL(), err)
	}
	return err
}

// apiError prints an API error with its field errors, one a line.
type apiError struct{ err *apiv1.Error }

func (e *apiError) Error() string {
	var b strings.Builder
	b.WriteString(e.err.Detail)
	for _, f := range e.err.Errors {
		fmt.Fprintf(&b, "\n  %s: %s", f.Field, f.Message)
	}
	return b.String()
}

func (e *apiError) Unwrap() error { return e.err }
