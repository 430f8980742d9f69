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

// Capabilities: the public catalog (every key reads it) and the org's
// inventory (everyone in the org reads it; owners and admins upload and
// remove versions). A runtime's bindings are in capability_bindings.go.

func (s *Server) capabilityCatalog(w http.ResponseWriter, r *http.Request) {
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
	list, next, err := capability.Inventory(r.Context(), s.store, caller(r), p)
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
	err := capability.MayChangeInventory(c, "uploading a capability")
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
		drain(r)
		err = sbx.Errorf(sbx.EInvalid, "the archive is larger than %d bytes", capability.MaxArchiveBytes)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	b, err := capability.Upload(r.Context(), s.store, c, data, s.clock.Now())
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.writeBundle(w, r, http.StatusCreated, b)
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
	b, err := capability.Remove(r.Context(), s.store, caller(r), r.PathValue("name"), r.PathValue("version"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.writeBundle(w, r, http.StatusOK, b)
}

// writeBundle answers an inventory version with status.
func (s *Server) writeBundle(w http.ResponseWriter, r *http.Request, status int, b sbx.CapabilityBundle) {
	out, err := renderBundle(b)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, status, out)
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
