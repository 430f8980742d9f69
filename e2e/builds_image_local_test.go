package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testregistry"
)

// A tenant builds a template from an image in a registry that wants
// credentials: a wrong password is refused at once, naming the registry;
// the right one builds it (the password kept nowhere the API shows), and a
// sandbox of the template has the image's files and the recipe's.
func TestTemplateBuildFromImageLocal(t *testing.T) {
	reg, ref := tinyImage(t)
	s := localServer(t, false, "--private-registries", reg.Host)
	member, _ := s.memberKey("ada@example.com", "member")
	body := func(password string) map[string]any {
		return map[string]any{"name": "tiny", "image": map[string]any{"uri": ref, "username": testregistry.User, "password": password},
			"steps": []map[string]any{{"run": "echo from-the-recipe > /built"}}}
	}
	s.failKey(member, "POST", "/api/v1/templates", body("wrong"), http.StatusBadRequest, reg.Host)
	// A create's templateID with a registry path is an image: this one wants credentials.
	s.failKey(member, "POST", "/api/v1/sandboxes", map[string]any{"templateID": ref}, http.StatusBadRequest, reg.Host)
	var b apiv1.TemplateBuild
	s.callKey(member, "POST", "/api/v1/templates", body(testregistry.Password), http.StatusAccepted, &b)
	b = s.waitBuild(member, "tiny", b.ID)
	if b.State != "ready" {
		t.Fatalf("a build from an image: %+v", b)
	}
	var tm apiv1.Template
	s.callKey(member, "GET", "/api/v1/templates/tiny", nil, http.StatusOK, &tm)
	if !strings.HasPrefix(tm.Versions[0].Source, "recipe on image "+reg.Host+"/team/tiny@sha256:") {
		t.Errorf("tiny's source: %+v", tm.Versions[0])
	}
	_, raw := s.doKey(member, "GET", "/api/v1/templates/tiny/builds", nil)
	if strings.Contains(string(raw), testregistry.Password) {
		t.Error("the registry password is in the builds' answer")
	}
	var sb apiv1.Sandbox
	s.callKey(member, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "tiny", "waitReady": true}, http.StatusCreated, &sb)
	if got := s.sh(sb, "cat /built"); got != "from-the-recipe" {
		t.Errorf("a sandbox of tiny: %q", got)
	}
	s.call("DELETE", "/api/v1/sandboxes/"+sb.ID, nil, http.StatusOK, nil)
	s.callKey(member, "DELETE", "/api/v1/templates/tiny", nil, http.StatusNoContent, nil) // its tree is in the templates directory the tests share
}
