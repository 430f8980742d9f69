package e2e

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sbxdev/sbx/apiv1"
)

// The wallet and the runtimes pages in a real browser against a serve with
// the Memory provider and a meter settling every 100 ms: after a sandbox
// has run, the wallet shows the balance, its settlements, its spending by
// resource, project, kind, provider and sandbox, and the price table; the
// project's runtime is started (with a secret checked on the page: its
// sandbox has it), paused, resumed and reset from its page, showing the
// capability bound to it,
// each seen by the API.
func TestConsoleWalletAndRuntimes(t *testing.T) {
	s := startServer(t, serverOpts{args: []string{"--meter-interval", "100ms"}})
	var sb apiv1.Sandbox
	s.call("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "cpu": 1, "memoryMB": 512}, http.StatusCreated, &sb)
	var cr apiv1.Credits
	for deadline := time.Now().Add(30 * time.Second); len(cr.Settlements) < 2 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		s.call("GET", "/api/v1/org/default/credits", nil, http.StatusOK, &cr)
	}
	if len(cr.Settlements) < 2 {
		t.Fatalf("no settlements: %+v", cr)
	}
	s.call("DELETE", "/api/v1/sandboxes/"+sb.ID, nil, http.StatusOK, nil) // settled at its end

	ctx := browser(t)
	act(t, ctx, "open /", chromedp.Navigate(s.url+"/"))
	signIn(t, ctx, s.key)
	act(t, ctx, "the wallet", chromedp.Click("#nav-wallet", chromedp.ByQuery),
		chromedp.WaitVisible("#view-wallet[data-loaded]", chromedp.ByQuery))
	var now apiv1.Credits
	s.call("GET", "/api/v1/org/default/credits", nil, http.StatusOK, &now)
	if bal := text(t, ctx, "#wallet-balance"); !sameCredits(bal, now.Balance) {
		t.Errorf("the wallet's balance %q, the API's %s", bal, now.Balance)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#settlements tbody tr").length`); n < 2 {
		t.Errorf("%d settlements shown", n)
	}
	if row := text(t, ctx, `#settlements tbody tr`); !strings.Contains(row, sb.ID) {
		t.Errorf("the newest settlement %q is not the sandbox's %s", row, sb.ID)
	}
	total := text(t, ctx, "#spending-total")
	if v, err := strconv.ParseFloat(total, 64); err != nil || v <= 0 {
		t.Errorf("spending total %q", total)
	}
	// What the API answers for the same period (the page's, to the second).
	var sp apiv1.Spending
	from := eval[string](t, ctx, `new Date(Date.now() - 86400000).toISOString()`)
	s.call("GET", "/api/v1/org/default/credits/spending?from="+from, nil, http.StatusOK, &sp)
	if !sameCredits(total, sp.Total) {
		t.Errorf("the wallet's total %s, the API's %s", total, sp.Total)
	}
	if row := text(t, ctx, `#spend-sandboxes tr[data-id="`+sb.ID+`"]`); !strings.Contains(row, sb.SandboxID) || !strings.Contains(row, "memory") {
		t.Errorf("the sandbox's spending %q", row)
	}
	for sel, want := range map[string]string{
		`#spend-resource tr[data-key="CPU"]`: sp.ByResource.CPU, `#spend-resource tr[data-key="Memory"]`: sp.ByResource.Memory,
		`#spend-project tr[data-key="default"]`: sp.Total, `#spend-provider tr[data-key="memory"]`: sp.Total,
	} {
		got := strings.TrimSpace(strings.Fields(text(t, ctx, sel))[len(strings.Fields(text(t, ctx, sel)))-1])
		if !sameCredits(got, want) {
			t.Errorf("%s shows %q, the API %s", sel, got, want)
		}
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#spend-kind tbody tr").length`); n != len(sp.ByKind) || n == 0 {
		t.Errorf("%d kinds shown, the API names %d", n, len(sp.ByKind))
	}
	if cpu := text(t, ctx, `#rates tr[data-resource="cpu"]`); !strings.Contains(cpu, "cpu") {
		t.Errorf("the price table's cpu row %q", cpu)
	}
	screenshot(t, ctx, "wallet")
	fitsPhone(t, ctx, "the wallet")
	// A period before the sandbox: nothing spent.
	act(t, ctx, "a period without spending", chromedp.SetValue("#period", "custom", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#period").dispatchEvent(new Event("change"))`, nil),
		chromedp.SetValue("#period-from", "2020-01-01T00:00", chromedp.ByQuery),
		chromedp.SetValue("#period-to", "2020-01-02T00:00", chromedp.ByQuery),
		chromedp.Click("#period-show", chromedp.ByQuery),
		chromedp.Poll(`document.querySelector("#spending-range").textContent.includes("2020")`, nil))
	if total := text(t, ctx, "#spending-total"); !sameCredits(total, "0") {
		t.Errorf("spending in 2020: %q", total)
	}

	// The runtimes page: the default project's runtime, idle.
	var list apiv1.RuntimeList
	s.call("GET", runtimesPath, nil, http.StatusOK, &list)
	if len(list.Items) != 1 {
		t.Fatalf("runtimes: %+v", list)
	}
	rt := list.Items[0]
	row := `#runtimes tr[data-id="` + rt.ID + `"]`
	// A secret to start it with, and a capability bound to it.
	var sec apiv1.Secret
	s.call("POST", secretsPath, map[string]any{"name": "CONSOLE_TOKEN", "value": "from-the-console"}, http.StatusCreated, &sec)
	s.call("POST", runtimesPath+"/"+rt.ID+"/capabilities", map[string]any{"name": "git-toolkit"}, http.StatusCreated, nil)
	status := func() string {
		var got apiv1.Runtime
		s.call("GET", runtimesPath+"/"+rt.ID, nil, http.StatusOK, &got)
		return got.Status
	}
	act(t, ctx, "the runtimes", chromedp.Click("#nav-runtimes", chromedp.ByQuery),
		chromedp.WaitVisible(row+`[data-status="idle"]`, chromedp.ByQuery))
	if r := text(t, ctx, row); !strings.Contains(r, "default") || !strings.Contains(r, "base") {
		t.Errorf("the runtime's row %q", r)
	}
	act(t, ctx, "its bindings and the secrets", chromedp.WaitVisible(row+` td.caps [data-binding="git-toolkit"]`, chromedp.ByQuery),
		chromedp.Click(`#runtime-secrets-list input[data-name="CONSOLE_TOKEN"]`, chromedp.ByQuery))
	if caps := text(t, ctx, row+" td.caps"); !strings.Contains(caps, "git-toolkit 1.0.0") {
		t.Errorf("the runtime's capabilities: %q", caps)
	}
	for _, step := range []struct{ button, want string }{{"start", "running"}, {"pause", "paused"}, {"resume", "running"}, {"keepalive", "running"}} {
		act(t, ctx, step.button, chromedp.Click(row+" button."+step.button, chromedp.ByQuery),
			chromedp.WaitVisible(row+`[data-status="`+step.want+`"] button:not([disabled])`, chromedp.ByQuery))
		if st := status(); st != step.want {
			t.Errorf("after %s from the page the API says %s", step.button, st)
		}
		if step.button == "start" {
			screenshot(t, ctx, "runtimes")
		}
	}
	fitsPhone(t, ctx, "the runtimes")
	var started apiv1.Runtime
	s.call("GET", runtimesPath+"/"+rt.ID, nil, http.StatusOK, &started)
	if sb := s.get(started.SandboxID); !slices.Contains(sb.EnvVarNames, "CONSOLE_TOKEN") {
		t.Errorf("the sandbox started from the page has env %v, without the secret checked", sb.EnvVarNames)
	}
	if sid := text(t, ctx, row+" td:nth-child(5)"); sid == "—" || sid == "" {
		t.Errorf("a running runtime shows no sandbox: %q", sid)
	}
	act(t, ctx, "reset", chromedp.Click(row+" button.reset", chromedp.ByQuery),
		chromedp.WaitVisible("#confirm[open]", chromedp.ByQuery), chromedp.Click("#confirm-ok", chromedp.ByQuery),
		chromedp.WaitVisible(row+`[data-status="idle"]`, chromedp.ByQuery))
	if st := status(); st != "idle" {
		t.Errorf("after reset from the page the API says %s", st)
	}
}

// sameCredits reports whether two decimal strings are the same amount to
// the six places the wallet shows.
func sameCredits(a, b string) bool {
	x, err1 := strconv.ParseFloat(strings.TrimSpace(a), 64)
	y, err2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
	return err1 == nil && err2 == nil && strconv.FormatFloat(x, 'f', 6, 64) == strconv.FormatFloat(y, 'f', 6, 64)
}

// fitsPhone checks that the page fits a phone's 390 px (only tables scroll
// sideways), then goes back to 1280×800.
func fitsPhone(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	act(t, ctx, "phone width", chromedp.EmulateViewport(390, 844))
	if !eval[bool](t, ctx, `document.documentElement.scrollWidth <= window.innerWidth`) {
		t.Errorf("at 390 px %s is %d px wide", what, eval[int](t, ctx, `document.documentElement.scrollWidth`))
	}
	act(t, ctx, "desktop width", chromedp.EmulateViewport(1280, 800))
}
