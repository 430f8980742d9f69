package client

import (
	"bytes"
	"context"
	"net/http"

	"github.com/sbxdev/sbx/apiv1"
)

// Capabilities: the public catalog, the org's inventory of uploaded bundles,
// and the bindings that install capabilities on a runtime. org is the org's
// ID or name, workspace a workspace's ID or name, runtimeID a runtime's ID
// (a project's runtime_id). Bindings change what the runtime's sandboxes
// get from its next start on.

// CapabilityCatalog returns the capabilities shipped with the server.
func (c *Client) CapabilityCatalog(ctx context.Context) (*apiv1.CapabilityList, error) {
	return call[apiv1.CapabilityList](ctx, c, http.MethodGet, apiPath("capabilities", "catalog"), nil, nil)
}

// CapabilityInventory returns one page of the org's uploaded capability
// versions, oldest upload first.
func (c *Client) CapabilityInventory(ctx context.Context, org string, p Page) (*apiv1.CapabilityList, error) {
	return call[apiv1.CapabilityList](ctx, c, http.MethodGet, orgPath(org, "capabilities"), page(nil, p.Limit, p.Cursor), nil)
}

// UploadCapability puts a bundle, packed as a tar.gz (see capability.Pack),
// in the org's inventory (owners and admins).
func (c *Client) UploadCapability(ctx context.Context, org string, archive []byte) (*apiv1.Capability, error) {
	resp, err := c.send(ctx, http.MethodPost, orgPath(org, "capabilities"), nil, "application/gzip", uploadBody(bytes.NewReader(archive)))
	if err != nil {
		return nil, err
	}
	return decodeBody[apiv1.Capability](resp)
}

// DeleteCapability removes a version from the org's inventory (owners and
// admins); the server refuses while a binding uses it.
func (c *Client) DeleteCapability(ctx context.Context, org, name, version string) (*apiv1.Capability, error) {
	return call[apiv1.Capability](ctx, c, http.MethodDelete, orgPath(org, "capabilities", name, version), nil, nil)
}

// RuntimeCapabilities returns one page of a runtime's capability bindings.
func (c *Client) RuntimeCapabilities(ctx context.Context, org, workspace, runtimeID string, p Page) (*apiv1.CapabilityBindingList, error) {
	return call[apiv1.CapabilityBindingList](ctx, c, http.MethodGet, capabilitiesPath(org, workspace, runtimeID), page(nil, p.Limit, p.Cursor), nil)
}

// InstallCapability installs a capability on a runtime: from req.Source
// (default: the inventory when it has the name, else the catalog) at
// req.Version (default: the newest).
func (c *Client) InstallCapability(ctx context.Context, org, workspace, runtimeID string, req apiv1.InstallCapabilityRequest) (*apiv1.CapabilityBinding, error) {
	return call[apiv1.CapabilityBinding](ctx, c, http.MethodPost, capabilitiesPath(org, workspace, runtimeID), nil, req)
}

// UpdateCapability enables or disables a binding, replaces the flags set on
// it or changes its version.
func (c *Client) UpdateCapability(ctx context.Context, org, workspace, runtimeID, bindingID string, req apiv1.UpdateCapabilityRequest) (*apiv1.CapabilityBinding, error) {
	return call[apiv1.CapabilityBinding](ctx, c, http.MethodPatch, capabilitiesPath(org, workspace, runtimeID, bindingID), nil, req)
}

// UninstallCapability removes a binding from a runtime.
func (c *Client) UninstallCapability(ctx context.Context, org, workspace, runtimeID, bindingID string) (*apiv1.CapabilityBinding, error) {
	return call[apiv1.CapabilityBinding](ctx, c, http.MethodDelete, capabilitiesPath(org, workspace, runtimeID, bindingID), nil, nil)
}

// ResolvedCapabilities returns the merged set of a runtime's enabled
// capabilities, with its conflicts: what its sandboxes get.
func (c *Client) ResolvedCapabilities(ctx context.Context, org, workspace, runtimeID string) (*apiv1.ResolvedCapabilities, error) {
	return call[apiv1.ResolvedCapabilities](ctx, c, http.MethodGet, capabilitiesPath(org, workspace, runtimeID, "resolved"), nil, nil)
}

// capabilitiesPath is a runtime's capabilities, or a sub-resource of them.
func capabilitiesPath(org, workspace, runtimeID string, sub ...string) string {
	return runtimePath(org, workspace, append([]string{runtimeID, "capabilities"}, sub...)...)
}
