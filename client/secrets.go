package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/sbxdev/sbx/apiv1"
)

// An org's secrets, which a runtime's start puts in its sandbox's
// environment. Values are write-only: set here, never read back. org is the
// org's ID or name.

// Secrets lists the secrets the key sees: the org's and, for a member's key,
// the member's own.
func (c *Client) Secrets(ctx context.Context, org string) (*apiv1.SecretList, error) {
	return call[apiv1.SecretList](ctx, c, http.MethodGet, orgPath(org, "secrets"), nil, nil)
}

// SetSecret makes the secret req names in its scope (created true) or gives
// the one of that name there a new value (created false, same ID).
func (c *Client) SetSecret(ctx context.Context, org string, req apiv1.SetSecretRequest) (sec *apiv1.Secret, created bool, err error) {
	path := orgPath(org, "secrets")
	resp, err := c.sendJSON(ctx, http.MethodPost, path, req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	sec = &apiv1.Secret{}
	if err := json.NewDecoder(resp.Body).Decode(sec); err != nil {
		return nil, false, fmt.Errorf("decoding the answer to POST %s: %w", path, err)
	}
	return sec, resp.StatusCode == http.StatusCreated, nil
}

// DeleteSecret removes a secret by ID or name, value and all. scope is org
// or user to say which of the two a name means; empty, a name means the
// member's own secret by that name before the org's.
func (c *Client) DeleteSecret(ctx context.Context, org, ref, scope string) (*apiv1.Secret, error) {
	var q url.Values
	if scope != "" {
		q = url.Values{"scope": {scope}}
	}
	return call[apiv1.Secret](ctx, c, http.MethodDelete, orgPath(org, "secrets", ref), q, nil)
}
