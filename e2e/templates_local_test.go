package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testtemplates"
)

// Templates through the API on a real serve: every key lists and reads
// them (versions, size, source, start command) and the catalog; deleting one is the
// operator's, refused while a sandbox (a paused one too) or a snapshot
// stands on it, naming them, and once nothing does it removes every
// version: a create of it is a 404 after.
func TestTemplatesLocal(t *testing.T) {
	const name = "e2e-doomed"
	if _, err := testtemplates.Derived(name, "sleep infinity"); err != nil {
		t.Fatal(err)
	}
	s := localServer(t, false)
	member, _ := s.memberKey("ada@example.com", "member")

	var list apiv1.TemplateList
	s.callKey(member, "GET", "/api/v1/templates", nil, http.StatusOK, &list)
	names := map[string]apiv1.Template{}
	for _, tm := range list.Items {
		names[tm.Name] = tm
	}
	if names["base"].Version == "" || names[name].Version == "" {
		t.Fatalf("templates: %+v", list.Items)
	}
	var got apiv1.Template
	s.call("GET", "/api/v1/templates/"+name, nil, http.StatusOK, &got)
	v := got.Versions[0]
	if got.Version != v.Version || !v.Current || v.StartCmd != "sleep infinity" || v.SizeBytes <= 0 || !strings.HasPrefix(v.Source, "template base version ") {
		t.Fatalf("template %s: %+v", name, got)
	}
	if out := s.ok("template", "get", name); !strings.Contains(out, v.Version) || !strings.Contains(out, "sleep infinity") {
		t.Errorf("sbx template get: %q", out)
	}
	s.fail("GET", "/api/v1/templates/nope", nil, http.StatusNotFound, "template nope does not exist")

	// The catalog, by category, says which of it the server has built.
	var cat apiv1.TemplateCatalog
	s.callKey(member, "GET", "/api/v1/template-catalog", nil, http.StatusOK, &cat)
	entries := map[string]apiv1.CatalogTemplate{}
	for _, c := range cat.Categories {
		for _, e := range c.Templates {
			entries[c.Name+"/"+e.Name] = e
		}
	}
	if b := entries["general/base"]; !b.Built || b.Version != names["base"].Version || b.SizeBytes <= 0 {
		t.Errorf("base in the catalog: %+v", b)
	}
	for key, e := range entries {
		if e.Built != (names[e.Name].Version != "") || e.Description == "" {
			t.Errorf("%s in the catalog: %+v", key, e)
		}
	}
	if len(entries) != 6 || entries["desktop/desktop"].Name != "desktop" {
		t.Errorf("the catalog: %+v", cat)
	}

	sb := s.create(map[string]any{"templateID": name, "waitReady": true, "memoryMB": 256})
	s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/pause", nil, http.StatusOK, nil)
	s.failKey(member, "DELETE", "/api/v1/templates/"+name, nil, http.StatusForbidden, "operator")
	s.fail("DELETE", "/api/v1/templates/"+name, nil, http.StatusConflict, "in use by sandbox "+sb.SandboxID)

	var snap apiv1.Snapshot
	s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/snapshots", map[string]any{}, http.StatusCreated, &snap)
	s.call("DELETE", "/api/v1/sandboxes/"+sb.ID, nil, http.StatusOK, nil)
	if _, errOut, code := s.cli("template", "rm", name); code == 0 || !strings.Contains(errOut, "in use by snapshot "+snap.ID) {
		t.Errorf("sbx template rm with a snapshot on it: exit %d %s", code, errOut)
	}
	s.call("DELETE", "/api/v1/snapshots/"+snap.ID, nil, http.StatusOK, nil)

	s.ok("template", "rm", name)
	s.fail("GET", "/api/v1/templates/"+name, nil, http.StatusNotFound, "does not exist")
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": name}, http.StatusNotFound, "template "+name+" does not exist")
	s.fail("DELETE", "/api/v1/templates/"+name, nil, http.StatusNotFound, "does not exist")
}
