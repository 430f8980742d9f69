package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/version"
	"github.com/spf13/cobra"
)

// versions is what `sbx version --json` prints.
type versions struct {
	Client      apiv1.Version  `json:"client"`
	Server      *apiv1.Version `json:"server,omitempty"`
	ServerURL   string         `json:"server_url"`
	ServerError string         `json:"server_error,omitempty"`
}

// newVersion is `sbx version`: this binary's version, and the server's
// when it answers.
func newVersion(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print this sbx's version, and the server's when it is reachable",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versions{Client: version.Get(), ServerURL: g.baseURL()}
			c, err := g.client()
			if err == nil {
				ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
				defer cancel()
				v.Server, err = c.ServerVersion(ctx)
			}
			if err = g.explain(err); err != nil {
				v.ServerError = err.Error()
			}
			return g.show(v, func(w io.Writer) error {
				server := "unknown: " + v.ServerError
				if v.Server != nil {
					server = versionText(v.Server)
				}
				_, err := fmt.Fprintf(w, "client: %s\nserver: %s (%s)\n", versionText(&v.Client), server, v.ServerURL)
				return err
			})
		},
	}
}

// versionText is a version with the revision it was built from.
func versionText(v *apiv1.Version) string {
	s := v.Version
	if v.Revision != "" {
		s += ", revision " + v.Revision
		if v.Time != "" {
			s += " of " + v.Time
		}
		if v.Modified {
			s += " with uncommitted changes"
		}
	}
	if v.Go != "" {
		s += ", " + v.Go
	}
	return s
}
