package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/sbxdev/sbx/capability"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCapabilityUpload is `sbx capability upload DIR|FILE.tar.gz`.
func newCapabilityUpload(g *globals, s *capabilityScope) *cobra.Command {
	return &cobra.Command{
		Use:   "upload DIR|FILE.tar.gz",
		Short: "Upload a capability bundle to the org's inventory (owners and admins); a directory is checked and packed first",
		Example: "  sbx capability upload ./team-tools\n" +
			"  sbx capability upload team-tools-1.2.0.tar.gz",
		Args: args("DIR|FILE.tar.gz"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, a []string) error {
			archive, err := readBundle(a[0])
			if err != nil {
				return err
			}
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			b, err := c.UploadCapability(ctx, org, archive)
			if err != nil {
				return err
			}
			return g.show(b, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "uploaded %s %s to the inventory of org %s: %d bytes, sha256 %s\n", b.Name, b.Version, org, b.Size, b.SHA256)
				return err
			})
		}),
	}
}

// readBundle is the tar.gz at path, or the directory at path packed as one.
func readBundle(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		data, err := capability.Pack(path)
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", path, err)
		}
		return data, nil
	}
	if st.Size() > capability.MaxArchiveBytes {
		return nil, fmt.Errorf("%s is %d bytes; the server takes archives of at most %d", path, st.Size(), capability.MaxArchiveBytes)
	}
	return os.ReadFile(path)
}
