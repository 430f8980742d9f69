package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/capability"
)

// A runtime's capability bindings: everyone in its workspace lists,
// installs and changes them, as they drive the runtime; a project-scoped
// key reaches only its project's runtime.

func (s *Server) listRuntimeCapabilities(w http.ResponseWriter, r *http.Request) {
	rt, ok := s.runtime(w, r, "listing a runtime's capabilities")
	if !ok {
		return
	}
	p, ok := s.page(w, r)
	if !ok {
		return
	}
	list, next, err := capability.Bindings(r.Context(), s.store, rt, p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.CapabilityBindingList{Items: renderAll(list, renderBinding), NextCursor: next})
}

// installCapability binds a capability of the inventory or the catalog to
// the runtime: from its next start on, its sandboxes have it.
func (s *Server) installCapability(w http.ResponseWriter, r *http.Request) {
	var body apiv1.InstallCapabilityRequest
	if !s.decode(w, r, &body) {
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
	if !s.decode(w, r, &body) {
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
	b, err := capability.Uninstall(r.Context(), s.store, rt, r.PathValue("binding_id"))
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
	res, err := capability.ResolveRuntime(r.Context(), s.store, rt.OrgID, rt.ID)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res.ResolvedCapabilities)
}

func renderBinding(b sbx.CapabilityBinding) apiv1.CapabilityBinding {
	flags := b.Flags
	if flags == nil {
		flags = map[string]bool{}
	}
	return apiv1.CapabilityBinding{ID: b.ID, RuntimeID: b.RuntimeID, Name: b.Name, Version: b.Version, Source: string(b.Source),
		Enabled: b.Enabled, Flags: flags, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}
}
