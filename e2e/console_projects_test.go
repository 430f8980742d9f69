package e2e

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sbxdev/sbx/apiv1"
)

// A key that reaches several projects picks the one the console acts in:
// the header lists every project of the workspaces it reaches; the pick
// holds for the tab, is the wizard's default project (the create lands in
// it, as the API says), and its workspace's runtimes are the runtimes
// page's; the CLI's --project does the same; sign-out forgets it. A key of one project has nothing to pick.
func TestConsoleProjects(t *testing.T) {
	ctx := browser(t)
	s := startServer(t, serverOpts{})
	var ws apiv1.Workspace
	s.call("POST", "/api/v1/org/default/workspaces", apiv1.CreateWorkspaceRequest{Name: "research"}, http.StatusCreated, &ws)
	var evals apiv1.Project
	s.call("POST", "/api/v1/org/default/ws/research/projects", apiv1.CreateProjectRequest{Name: "evals"}, http.StatusCreated, &evals)

	act(t, ctx, "open /", chromedp.Navigate(s.url+"/"))
	signIn(t, ctx, s.key)
	act(t, ctx, "the project picker", chromedp.WaitVisible("#project-pick", chromedp.ByQuery))
	if n := eval[int](t, ctx, `document.querySelectorAll("#project-pick option").length`); n != 3 {
		t.Errorf("the picker lists %d projects, want default/default, research/default and research/evals", n)
	}
	act(t, ctx, "pick evals", chromedp.SetValue("#project-pick", evals.ID, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#project-pick").dispatchEvent(new Event("change"))`, nil),
		chromedp.Poll(`document.querySelector("#project-pick").value === `+strconv.Quote(evals.ID), nil))

	act(t, ctx, "the wizard", chromedp.Click("#new-sandbox", chromedp.ByQuery),
		chromedp.WaitVisible(`fieldset[data-step="1"]`, chromedp.ByQuery),
		chromedp.Click("#next", chromedp.ByQuery), chromedp.Click("#next", chromedp.ByQuery),
		chromedp.WaitVisible(`fieldset[data-step="3"]`, chromedp.ByQuery))
	if got := eval[string](t, ctx, `document.querySelector("#project").value`); got != evals.ID {
		t.Errorf("the wizard's project is %s, want the picked %s", got, evals.ID)
	}
	if sum := text(t, ctx, "#summary"); !strings.Contains(sum, "research / evals") {
		t.Errorf("the summary: %q", sum)
	}
	act(t, ctx, "create", chromedp.Click("#create", chromedp.ByQuery),
		chromedp.WaitVisible("#view-list", chromedp.ByQuery), present(`#sandboxes tr[data-state="running"]`))
	id := eval[string](t, ctx, `document.querySelector('#sandboxes tr[data-state="running"]').dataset.id`)
	screenshot(t, ctx, "projects")
	if sb := s.get(id); sb.ProjectID != evals.ID || sb.WorkspaceID != ws.ID {
		t.Errorf("the sandbox is in project %s, workspace %s; want evals in research", sb.ProjectID, sb.WorkspaceID)
	}
	// The CLI names it as the console does.
	if sb := s.get(strings.Fields(s.ok("sandbox", "create", "base", "--project", evals.ID))[0]); sb.ProjectID != evals.ID {
		t.Errorf("sbx sandbox create --project: in %s", sb.ProjectID)
	}
	act(t, ctx, "the runtimes of research", chromedp.Click("#nav-runtimes", chromedp.ByQuery),
		chromedp.WaitVisible(`#runtimes tr[data-id="`+evals.RuntimeID+`"]`, chromedp.ByQuery))

	act(t, ctx, "sign out", chromedp.Click("#signout", chromedp.ByQuery), chromedp.WaitVisible("#view-signin", chromedp.ByQuery))
	if n := eval[int](t, ctx, `sessionStorage.length`); n != 0 {
		t.Errorf("signed out, session storage holds %d items", n)
	}
	var key apiv1.CreatedKey
	s.call("POST", "/api/v1/org/default/keys", apiv1.CreateKeyRequest{Name: "evals-ci", ProjectID: evals.ID}, http.StatusCreated, &key)
	signIn(t, ctx, key.Secret)
	if who := text(t, ctx, "#whoami"); !strings.Contains(who, "evals") || eval[bool](t, ctx, `document.querySelector("#project-pick") !== null`) {
		t.Errorf("a project's key: %q", who)
	}
}
