package httpapi

import (
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/capability"
)

// Capabilities: the public catalog (every key reads it), the org's
// inventory (everyone in the org reads it; owners and admins upload and
// remove versions), and a runtime's bindings (everyone in its workspace
// installs and changes them, as they drive the runtime; a project-scoped key
// reaches only its project's runtime).

func (s *Server) capabilityCatalog(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r.URL.Query()); err != nil {
		s.error(w, r, err)
		return
	}
	all, err := capability.Catalog()
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := apiv1.CapabilityList{Items: []apiv1.Capability{}}
	for _, b := range all {
		out.Items = append(out.Items, capability.Describe(b.Manifest, sbx.CapabilityCatalog))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) capabilityInventory(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	p, ok := s.page(w, r)
	if !ok {
		return
	}
	list, next, err := s.store.CapabilityBundles(r.Context(), caller(r).Org.ID, p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := apiv1.CapabilityList{Items: []apiv1.Capability{}, NextCursor: next}
	for _, b := range list {
		item, err := renderBundle(b)
		if err != nil {
			s.error(w, r, err)
			return
		}
		out.Items = append(out.Items, item)
	}
	writeJSON(w, http.StatusOK, out)
}

// uploadCapability takes a bundle as a tar.gz body (Content-Type
// application/gzip) of at most capability.MaxArchiveBytes, checks it and
// puts it in the org's inventory.
func (s *Server) uploadCapability(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	c := caller(r)
	err := onlyParams(r.URL.Query())
	if err == nil {
		err = need(c, sbx.RoleAdmin, "uploading a capability")
	}
	if err == nil {
		err = gzipBody(r)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, capability.MaxArchiveBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		err = sbx.Errorf(sbx.EInvalid, "the archive is larger than %d bytes", capability.MaxArchiveBytes)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	b, err := capability.Upload(r.Context(), s.store, c.Org.ID, data, s.clock.Now())
	if err != nil {
		s.error(w, r, err)
		return
	}
	out, err := renderBundle(b)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

// gzipBody refuses a body that is not declared a gzip archive.
func gzipBody(r *http.Request) error {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/gzip" && ct != "application/x-gzip" {
		return sbx.Invalid("Content-Type", "the body must be the bundle as a tar.gz, sent with Content-Type: application/gzip, not %q", r.Header.Get("Content-Type"))
	}
	return nil
}

func (s *Server) deleteCapability(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	c := caller(r)
	err := onlyParams(r.URL.Query())
	if err == nil {
		err = need(c, sbx.RoleAdmin, "removing a capability from the inventory")
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	b, err := s.store.DeleteCapabilityBundle(r.Context(), c.Org.ID, r.PathValue("name"), r.PathValue("version"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	out, err := renderBundle(b)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listRuntimeCapabilities(w http.ResponseWriter, r *http.Request) {
	rt, ok := s.runtime(w, r, "listing a runtime's capabilities")
	if !ok {
		return
	}
	p, ok := s.page(w, r)
	if !ok {
		return
	}
	list, next, err := s.store.CapabilityBindings(r.Context(), rt.OrgID, rt.ID, p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := apiv1.CapabilityBindingList{Items: []apiv1.CapabilityBinding{}, NextCursor: next}
	for _, b := range list {
		out.Items = append(out.Items, renderBinding(b))
	}
	writeJSON(w, http.StatusOK, out)
}

// installCapability binds a capability of the inventory or the catalog to
// the runtime: from its next start on, its sandboxes have it.
func (s *Server) installCapability(w http.ResponseWriter, r *http.Request) {
	var body apiv1.InstallCapabilityRequest
	if !s.body(w, r, &body) {
		return
	}
	rt, ok := s.runtime(w, r, "installing a capability")
	if !ok {
		return
	}
	in := capability.Install{Name: body.Name, Version: body.Version, Source: sbx.CapabilitySource(body.Source), Flags: body.Flags,
		Enabled: body.Enabled == nil || *body.Enabled}
	b, err := capability.InstallOn(r.Context(), s.store, rt.OrgID, rt.ID, in, s.clock.Now())
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, renderBinding(b))
}

func (s *Server) updateRuntimeCapability(w http.ResponseWriter, r *http.Request) {
	var body apiv1.UpdateCapabilityRequest
	if !s.body(w, r, &body) {
		return
	}
	rt, ok := s.runtime(w, r, "changing a runtime's capability")
	if !ok {
		return
	}
	ch := capability.Change{Enabled: body.Enabled, Version: body.Version}
	if body.Flags != nil {
		ch.Flags = map[string]bool{}
		for k, v := range *body.Flags {
			ch.Flags[k] = v
		}
	}
	b, err := capability.ChangeBinding(r.Context(), s.store, rt.OrgID, rt.ID, r.PathValue("binding_id"), ch, s.clock.Now())
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderBinding(b))
}

func (s *Server) uninstallCapability(w http.ResponseWriter, r *http.Request) {
	rt, ok := s.runtime(w, r, "uninstalling a capability")
	if !ok {
		return
	}
	if err := onlyParams(r.URL.Query()); err != nil {
		s.error(w, r, err)
		return
	}
	b, err := s.store.DeleteCapabilityBinding(r.Context(), rt.OrgID, rt.ID, r.PathValue("binding_id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderBinding(b))
}

// resolvedCapabilities answers the merged set of the runtime's enabled
// bindings: what its next start materializes.
func (s *Server) resolvedCapabilities(w http.ResponseWriter, r *http.Request) {
	rt, ok := s.runtime(w, r, "reading a runtime's capabilities")
	if !ok {
		return
	}
	if err := onlyParams(r.URL.Query()); err != nil {
		s.error(w, r, err)
		return
	}
	res, err := capability.ResolveRuntime(r.Context(), s.store, rt.OrgID, rt.ID)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res.ResolvedCapabilities)
}

func renderBundle(b sbx.CapabilityBundle) (apiv1.Capability, error) {
	m, err := capability.StoredManifest(b)
	if err != nil {
		return apiv1.Capability{}, err
	}
	out := capability.Describe(m, sbx.CapabilityInventory)
	out.SHA256, out.Size, out.CreatedAt = b.SHA256, b.Size, timePtr(b.CreatedAt)
	return out, nil
}

func renderBinding(b sbx.CapabilityBinding) apiv1.CapabilityBinding {
	flags := b.Flags
	if flags == nil {
		flags = map[string]bool{}
	}
	return apiv1.CapabilityBinding{ID: b.ID, RuntimeID: b.RuntimeID, Name: b.Name, Version: b.Version, Source: string(b.Source),
		Enabled: b.Enabled, Flags: flags, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}
}
