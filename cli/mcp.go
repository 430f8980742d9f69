package cli

import (
	"errors"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sbxdev/sbx/mcpserver"
	"github.com/spf13/cobra"
)

// newMCP is `sbx mcp`: the MCP server on stdin and stdout, for an agent
// (Claude Desktop, Claude Code, any MCP client) to start as a subprocess.
func newMCP(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve sbx's tools over the Model Context Protocol on stdio, for AI assistants and their MCP clients",
		Long: `Serve the Model Context Protocol on stdin and stdout: tools to create, list,
get, pause, resume and delete sandboxes, run commands and code in them, read,
write and list their files, make preview URLs, snapshot and fork them. Every
tool call goes through the API as the key of the other client verbs
($SBX_API_KEY, else the admin key of the serve on this host) at --url or
$SBX_URL. serve also serves these tools over streamable HTTP at /api/v1/mcp.`,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			t := &mcp.IOTransport{Reader: io.NopCloser(g.opts.Stdin), Writer: nopWriteCloser{g.opts.Stdout}}
			err = mcpserver.New(c).Run(cmd.Context(), t)
			if errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
				return nil // the client went away: the session is over
			}
			return err
		},
	}
}

// nopWriteCloser is a Writer the transport may close, leaving it open.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
