package e2e

import (
	"archive/tar"
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testregistry"
)

// A tenant builds a template from an image in a registry that wants
// credentials: a wrong password is refused at once, naming the registry;
// the right one builds it (the password kept nowhere the API shows), and a
// sandbox of the template has the image's files and the recipe's. From a
// multi-platform index it takes this host's image; from a registry that
// wants none, no credentials. A create's log says whether it pulled.
func TestTemplateBuildFromImageLocal(t *testing.T) {
	reg, ref := tinyImage(t)
	open := testregistry.ServeOpen(t)
	openRef := open.Push(t, "team/open", "v1", v1.Config{}, tinyLayers(t))
	s := localServer(t, false, "--private-registries", reg.Host+","+open.Host)
	var ob apiv1.TemplateBuild
	s.callKey(s.key, "POST", "/api/v1/templates", map[string]any{"name": "open", "image": map[string]any{"uri": openRef}}, http.StatusAccepted, &ob)
	if ob = s.waitBuild(s.key, "open", ob.ID); ob.State != "ready" {
		t.Fatalf("a build from a registry without credentials: %+v", ob)
	}
	s.call("DELETE", "/api/v1/templates/open", nil, http.StatusNoContent, nil)
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

	// From a multi-platform index, the build takes this host's image.
	multi := reg.PushIndex(t, "team/multi", "v1", v1.Config{}, fileLayer(t, "wrong-arch", "not this host's\n"), tinyLayers(t))
	// A sandbox's log says whether its create pulled its image or found it.
	image := map[string]any{"image": map[string]any{"uri": multi, "username": testregistry.User, "password": testregistry.Password}, "waitReady": true}
	for _, want := range []string{"pulled and unpacked in", "this host's copy"} {
		var direct apiv1.Sandbox
		s.callKey(member, "POST", "/api/v1/sandboxes", image, http.StatusCreated, &direct)
		var logs apiv1.LogPage
		s.callKey(member, "GET", "/api/v1/sandboxes/"+direct.ID+"/logs", nil, http.StatusOK, &logs)
		if all := fmt.Sprint(logs.Items); !strings.Contains(all, want) {
			t.Errorf("a sandbox's log does not say %q: %s", want, all)
		}
		s.call("DELETE", "/api/v1/sandboxes/"+direct.ID, nil, http.StatusOK, nil)
	}
	var mb apiv1.TemplateBuild
	s.callKey(member, "POST", "/api/v1/templates", map[string]any{"name": "multi", "image": map[string]any{"uri": multi, "username": testregistry.User, "password": testregistry.Password},
		"steps": []map[string]any{{"run": "echo ok > /built"}}}, http.StatusAccepted, &mb)
	if mb = s.waitBuild(member, "multi", mb.ID); mb.State != "ready" {
		t.Fatalf("a build from an index: %+v", mb)
	}
	s.callKey(member, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "multi", "waitReady": true}, http.StatusCreated, &sb)
	if got := s.sh(sb, "cat /built; cat /wrong-arch 2>/dev/null || echo host-only"); got != "ok\nhost-only" {
		t.Errorf("a sandbox of the index's template: %q", got)
	}
	s.call("DELETE", "/api/v1/sandboxes/"+sb.ID, nil, http.StatusOK, nil)
	s.callKey(member, "DELETE", "/api/v1/templates/multi", nil, http.StatusNoContent, nil)
}

// fileLayer is a layer of one file.
func fileLayer(t *testing.T, name, content string) v1.Layer {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg})
	tw.Write([]byte(content))
	tw.Close()
	return testregistry.Layer(t, buf.Bytes())
}
