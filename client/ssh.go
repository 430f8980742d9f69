package client

import (
	"context"
	"net/http"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// SSHKeys returns one page of an org's SSH keys, oldest first.
func (c *Client) SSHKeys(ctx context.Context, org string, p Page) (*apiv1.SSHKeyList, error) {
	return call[apiv1.SSHKeyList](ctx, c, http.MethodGet, orgPath(org, "ssh-keys"), page(nil, p.Limit, p.Cursor), nil)
}

// AddSSHKey registers a public key (one line of a .pub file) to a member
// (req.User), a project (req.ProjectID), or, with neither, the member or
// project the API key acts for. The SSH gateway then lets its holder into
// the sandboxes an API key of that member or project reaches.
func (c *Client) AddSSHKey(ctx context.Context, org string, req apiv1.AddSSHKeyRequest) (*apiv1.SSHKey, error) {
	return call[apiv1.SSHKey](ctx, c, http.MethodPost, orgPath(org, "ssh-keys"), nil, req)
}

// RemoveSSHKey removes an SSH key, by ID or fingerprint.
func (c *Client) RemoveSSHKey(ctx context.Context, org, ref string) (*apiv1.SSHKey, error) {
	return call[apiv1.SSHKey](ctx, c, http.MethodDelete, orgPath(org, "ssh-keys", ref), nil, nil)
}

// SSHAccess mints a token that opens sandbox id (a provider sandbox ID or
// UUID) through the SSH gateway for expiresIn (0: the server's default, 5
// minutes), and answers it with the gateway's address, host key and an ssh
// command line.
func (c *Client) SSHAccess(ctx context.Context, id string, expiresIn time.Duration) (*apiv1.SSHAccess, error) {
	return call[apiv1.SSHAccess](ctx, c, http.MethodPost, sandboxPath(id, "ssh"), nil, apiv1.SSHAccessRequest{ExpiresIn: seconds(expiresIn)})
}
