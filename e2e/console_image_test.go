package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sbxdev/sbx/internal/testregistry"
	"github.com/sbxdev/sbx/internal/testtemplates"
)

// tinyImage pushes an image of a shell and cat alone (from the base
// template's Debian) to a registry of the test's own, which wants
// credentials, and answers the registry and the image's reference.
func tinyImage(t *testing.T) (*testregistry.Registry, string) {
	t.Helper()
	reg := testregistry.Serve(t)
	return reg, reg.Push(t, "team/tiny", "v1", v1.Config{}, tinyLayers(t))
}

// tinyLayers is the layer of tinyImage: a shell and cat from the base
// template's Debian.
func tinyLayers(t *testing.T) v1.Layer {
	t.Helper()
	templates, err := testtemplates.Base()
	if err != nil {
		t.Fatal(err)
	}
	base, err := templates.Current("base")
	if err != nil {
		t.Fatal(err)
	}
	return testregistry.TreeLayer(t, base.Rootfs(), "bin", "lib", "lib64",
		"usr/bin/dash", "usr/bin/sh", "usr/bin/cat", "usr/lib64/ld-linux-x86-64.so.2", "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
		"usr/lib/x86_64-linux-gnu/libc.so.6", "etc/passwd", "etc/group")
}

// The wizard's image step against a real registry that wants credentials
// (allowed at its loopback address by --private-registries): a wrong
// password is shown by the field it names, the right one starts a gVisor
// sandbox on the image's own tree. The password is in no answer and
// nowhere in the data dir (ledger, logs, the pulled tree's record), and a
// second create of the same, now cached, image without credentials is
// refused by the registry, as the first would have been; with them, the CLI
// starts another.
func TestConsoleImage(t *testing.T) {
	ctx := browser(t)
	reg, ref := tinyImage(t)
	s := localServer(t, false, "--private-registries", reg.Host)

	act(t, ctx, "open /", chromedp.Navigate(s.url+"/"))
	signIn(t, ctx, s.key)
	fill := func(password string) chromedp.Tasks {
		return chromedp.Tasks{
			chromedp.Click("#new-sandbox", chromedp.ByQuery), chromedp.WaitVisible(`fieldset[data-step="1"]`, chromedp.ByQuery),
			chromedp.Click("#next", chromedp.ByQuery), chromedp.WaitVisible(`fieldset[data-step="2"]`, chromedp.ByQuery),
			chromedp.Click(`input[name=template][value=image]`, chromedp.ByQuery), chromedp.WaitVisible("#image-uri", chromedp.ByQuery),
			chromedp.SendKeys("#image-uri", ref, chromedp.ByQuery),
			chromedp.SendKeys("#image-username", testregistry.User, chromedp.ByQuery),
			chromedp.SendKeys("#image-password", password, chromedp.ByQuery),
			chromedp.Click("#next", chromedp.ByQuery), chromedp.WaitVisible(`fieldset[data-step="3"]`, chromedp.ByQuery),
		}
	}
	act(t, ctx, "an image with a wrong password", fill("wrong-password"))
	if sum := text(t, ctx, "#summary"); !strings.Contains(sum, ref) || strings.Contains(sum, "wrong-password") {
		t.Errorf("the summary: %q", sum)
	}
	act(t, ctx, "create", chromedp.Click("#create", chromedp.ByQuery),
		chromedp.WaitVisible(`fieldset[data-step="2"]`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('.field-error[data-for="image.uri"]').textContent.includes("refused")`, nil))
	screenshot(t, ctx, "wizard-2-image-error")

	act(t, ctx, "the right password", chromedp.Navigate(s.url+"/#/sandboxes"), chromedp.WaitVisible("#view-list", chromedp.ByQuery),
		fill(testregistry.Password), chromedp.Click("#create", chromedp.ByQuery),
		chromedp.WaitVisible("#view-list", chromedp.ByQuery), present(`#sandboxes tr[data-state="running"]`))
	id := eval[string](t, ctx, `document.querySelector('#sandboxes tr[data-state="running"]').dataset.id`)
	sb := s.get(id)
	if !strings.HasPrefix(sb.TemplateID, reg.Host+"/team/tiny@sha256:") {
		t.Errorf("the sandbox's template is %q, want the image pinned by digest", sb.TemplateID)
	}
	// Its tree is the image's: a shell and cat, no bash.
	act(t, ctx, "its page", chromedp.Click(`#sandboxes tr[data-id="`+id+`"] a.sid`, chromedp.ByQuery),
		chromedp.WaitVisible(`#view-sandbox[data-state="running"]`, chromedp.ByQuery),
		chromedp.SendKeys("#cmd", `echo "image-$((2+3))"; echo /usr/bin/*`, chromedp.ByQuery),
		chromedp.Click("#cmd-run", chromedp.ByQuery), chromedp.WaitVisible(`#cmd-output[data-exit="0"]`, chromedp.ByQuery))
	if out := text(t, ctx, "#cmd-output"); !strings.Contains(out, "image-5") || !strings.Contains(out, "/usr/bin/dash") || strings.Contains(out, "bash") {
		t.Errorf("a command in the image's sandbox: %q", out)
	}

	// Cached now, but the registry is asked again with each caller's
	// credentials: none, and it refuses.
	e := s.fail("POST", "/api/v1/sandboxes", map[string]any{"image": map[string]any{"uri": ref}}, 400, "refused")
	if len(e.Errors) != 1 || e.Errors[0].Field != "image.uri" {
		t.Errorf("an anonymous create of a private image: %+v", e)
	}
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "image": map[string]any{"uri": ref}}, 400, "not both")

	// The CLI does the same, the password from its environment.
	t.Setenv("SBX_REGISTRY_PASSWORD", testregistry.Password)
	out := s.ok("sandbox", "create", "--image", ref, "--registry-username", testregistry.User, "--wait")
	if again := s.get(strings.Fields(out)[0]); again.TemplateID != sb.TemplateID || again.State != "running" {
		t.Errorf("sbx sandbox create --image: %s %s", again.State, again.TemplateID)
	}

	_, raw := s.do("GET", "/api/v1/sandboxes/"+id, nil)
	for what, data := range map[string]string{"the sandbox's detail": string(raw), "serve's output": s.out.String()} {
		if strings.Contains(data, testregistry.Password) {
			t.Errorf("%s holds the registry password", what)
		}
	}
	filepath.WalkDir(s.dataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || strings.Contains(p, "rootfs") {
			return nil
		}
		if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), testregistry.Password) {
			t.Errorf("%s holds the registry password", p)
		}
		return nil
	})
}
