package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/input"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testenv"
)

// browser starts headless Debian chromium for a test (a missing one fails
// in CI) and fails the test on any script exception or security (CSP)
// complaint the page logs.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		testenv.Missing(t, "chromium (apt-get install chromium)")
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1280, 800))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// This chromedp knows fewer DOM events than Debian's chromium sends
	// (a <dialog>'s top layer); it complains of each, which says nothing.
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithErrorf(func(format string, args ...any) {
		if msg := fmt.Sprintf(format, args...); !strings.Contains(msg, "unhandled node event") {
			log.Print(msg)
		}
	}))
	ctx, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute) // a hang guard, not a measure
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	chromedp.ListenTarget(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			t.Errorf("script exception: %s", ev.ExceptionDetails.Error())
		case *cdplog.EventEntryAdded:
			if ev.Entry.Source == cdplog.SourceSecurity || strings.Contains(ev.Entry.Text, "Content Security Policy") {
				t.Errorf("the page's log: %s", ev.Entry.Text)
			}
		}
	})
	if err := chromedp.Run(ctx, cdplog.Enable()); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return ctx
}

// act runs browser actions, failing the test with what it was doing.
func act(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	step, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Run(step, actions...); err != nil {
		// What the page showed, to say why.
		var shown string
		chromedp.Run(ctx, chromedp.Evaluate(`[location.hash, "dialog: " + (document.querySelector("dialog[open]")?.innerText || "none"), document.querySelector("#error")?.innerText || "", document.querySelector("main")?.innerText.slice(0, 3000)].join(" | ")`, &shown))
		t.Fatalf("%s: %v\nthe page: %s", what, err, shown)
	}
}

// present waits until an element matches selector, asking the page again
// each time rather than following the first node chromedp.WaitVisible
// finds: the list re-renders its rows.
func present(selector string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		for {
			var found bool
			if err := chromedp.Evaluate(fmt.Sprintf("document.querySelector(%q) !== null", selector), &found).Do(ctx); err != nil {
				return err
			}
			if found {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
}

// screenshot writes docs/ui/NAME.png when SBX_UI_SCREENSHOTS=1, so that an
// ordinary run leaves the repository as it is.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("SBX_UI_SCREENSHOTS") != "1" {
		return
	}
	var png []byte
	act(t, ctx, "screenshot "+name, chromedp.FullScreenshot(&png, 100))
	if err := os.WriteFile(filepath.Join("..", "docs", "ui", name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	var s string
	act(t, ctx, "text of "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
	return s
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	var v T
	act(t, ctx, js, chromedp.Evaluate(js, &v))
	return v
}

func signIn(t *testing.T, ctx context.Context, key string) {
	t.Helper()
	act(t, ctx, "sign in",
		chromedp.WaitVisible("#api-key", chromedp.ByQuery),
		chromedp.SendKeys("#api-key", key, chromedp.ByQuery),
		chromedp.Click("#signin-submit", chromedp.ByQuery),
		chromedp.WaitVisible("#view-list", chromedp.ByQuery))
}

// The console in a real browser against a real serve with gVisor
// sandboxes: sign-in, the wizard's three steps (a field error from the API
// by its field, then a create with an env var and a timeout of its own), the
// sandbox's page (connection info, live timeline, the log followed, a
// command's output, a terminal running a shell and following the window's
// size, a file uploaded, downloaded and deleted, the CPU and memory chart
// sampled), the list refreshing by itself when another client
// pauses the sandbox, pause,
// resume and a confirmed delete from the list, the wallet showing what it
// spent, a 401 and a 402 explained,
// sign-out.
func TestConsoleLocal(t *testing.T) {
	ctx := browser(t)
	s := localServer(t, false, "--meter-interval", "1s")

	act(t, ctx, "open /", chromedp.Navigate(s.url+"/"), chromedp.WaitVisible("#view-signin", chromedp.ByQuery))
	// A wrong key: what happened and what to do, still signed out.
	act(t, ctx, "sign in with a wrong key",
		chromedp.SendKeys("#api-key", "sbx_wrong", chromedp.ByQuery),
		chromedp.Click("#signin-submit", chromedp.ByQuery),
		chromedp.WaitVisible(`#error[data-status="401"]`, chromedp.ByQuery))
	if msg := text(t, ctx, "#error"); !strings.Contains(msg, "sign in again") {
		t.Errorf("a wrong key's error: %q", msg)
	}
	signIn(t, ctx, s.key)
	if who := text(t, ctx, "#whoami"); !strings.Contains(who, "default") || !strings.Contains(who, "owner") {
		t.Errorf("who am I: %q", who)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#sandboxes tbody tr").length`); n != 0 {
		t.Errorf("a new server lists %d sandboxes", n)
	}
	if href := eval[string](t, ctx, `location.href`); strings.Contains(href, s.key) {
		t.Errorf("the key is in the URL %q", href)
	}
	if stored := eval[string](t, ctx, `sessionStorage.getItem("sbx.apiKey")`); stored != s.key {
		t.Errorf("session storage holds %q", stored)
	}

	// Step 1: GPU. The local provider here has none: every type is disabled
	// and the page says why.
	act(t, ctx, "open the wizard", chromedp.Click("#new-sandbox", chromedp.ByQuery),
		chromedp.WaitVisible(`fieldset[data-step="1"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#gpu-choices input[value="H100"], #gpu-choices input[disabled]`, chromedp.ByQuery))
	if n := eval[int](t, ctx, `document.querySelectorAll("#gpu-choices input[name=gpu]:disabled").length`); n == 0 {
		t.Error("no GPU type is disabled on a host without GPUs")
	}
	if note := text(t, ctx, "#gpu-note"); !strings.Contains(note, "no GPUs") {
		t.Errorf("the GPU step's note: %q", note)
	}
	screenshot(t, ctx, "wizard-1-gpu")
	// Step 2: image.
	act(t, ctx, "step 2", chromedp.Click("#next", chromedp.ByQuery),
		chromedp.WaitVisible(`fieldset[data-step="2"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#template-catalog input[value=desktop]`, chromedp.ByQuery),
		chromedp.Click(`input[name=template][value=base]`, chromedp.ByQuery))
	// The catalog, from the API, by category: what is built can be chosen.
	if cats := text(t, ctx, "#template-catalog"); !strings.Contains(cats, "Machine learning") || !strings.Contains(cats, "pytorch") {
		t.Errorf("the wizard's catalog: %q", cats)
	}
	if !eval[bool](t, ctx, `!document.querySelector("#template-catalog input[value=base]").disabled`) {
		t.Error("base, built, cannot be chosen")
	}
	screenshot(t, ctx, "wizard-2-image")
	// Step 3: configuration, first with memory the API refuses.
	act(t, ctx, "step 3", chromedp.Click("#next", chromedp.ByQuery),
		chromedp.WaitVisible(`fieldset[data-step="3"]`, chromedp.ByQuery),
		chromedp.SetValue("#timeout", "", chromedp.ByQuery), chromedp.SendKeys("#timeout", "1800", chromedp.ByQuery),
		chromedp.SetValue("#memory", "", chromedp.ByQuery), chromedp.SendKeys("#memory", "32", chromedp.ByQuery),
		chromedp.Click("#env-add", chromedp.ByQuery),
		chromedp.SendKeys("#env-key-1", "GREETING", chromedp.ByQuery),
		chromedp.SendKeys("#env-value-1", "hello from the console", chromedp.ByQuery),
		chromedp.Click("#create", chromedp.ByQuery),
		chromedp.WaitVisible(`.field-error[data-for="memoryMB"]`, chromedp.ByQuery))
	if msg := text(t, ctx, `.field-error[data-for="memoryMB"]`); msg == "" {
		t.Error("no error by the memory field")
	}
	act(t, ctx, "fix the memory", chromedp.SetValue("#memory", "", chromedp.ByQuery), chromedp.SendKeys("#memory", "512", chromedp.ByQuery))
	if est := text(t, ctx, "#estimate"); est == "" || est == "0.00" {
		t.Errorf("estimated credits per hour %q", est)
	}
	if sum := text(t, ctx, "#summary"); !strings.Contains(sum, "1800 s") || !strings.Contains(sum, "GREETING") {
		t.Errorf("summary %q", sum)
	}
	screenshot(t, ctx, "wizard-3-configuration")
	act(t, ctx, "create", chromedp.Click("#create", chromedp.ByQuery),
		chromedp.WaitVisible("#view-list", chromedp.ByQuery),
		chromedp.WaitVisible(`#sandboxes tr[data-state="running"]`, chromedp.ByQuery))
	id := eval[string](t, ctx, `document.querySelector('#sandboxes tr[data-state="running"]').dataset.id`)
	sb := s.get(id)
	if sb.Timeout != 1800 || !slices.Contains(sb.EnvVarNames, "GREETING") || sb.TemplateID != "base" || sb.MemoryMB != 512 {
		t.Errorf("created %+v", sb)
	}
	if row := text(t, ctx, `#sandboxes tr[data-id="`+id+`"]`); !strings.Contains(row, sb.SandboxID) || !strings.Contains(row, id) || !strings.Contains(row, "local") {
		t.Errorf("the row shows %q", row)
	}
	screenshot(t, ctx, "sandboxes")
	// At a phone's width the page fits: only the table scrolls sideways.
	act(t, ctx, "phone width", chromedp.EmulateViewport(390, 844))
	if fits := eval[bool](t, ctx, `document.documentElement.scrollWidth <= window.innerWidth`); !fits {
		t.Errorf("at 390 px the page is %d px wide", eval[int](t, ctx, `document.documentElement.scrollWidth`))
	}
	screenshot(t, ctx, "sandboxes-phone")
	act(t, ctx, "desktop width", chromedp.EmulateViewport(1280, 800))

	// Its page: details, connection, the live timeline, the log followed,
	// and a command whose output shows the env var the wizard gave it.
	act(t, ctx, "open its page", chromedp.Click(`#sandboxes tr[data-id="`+id+`"] a.sid`, chromedp.ByQuery),
		chromedp.WaitVisible(`#view-sandbox[data-state="running"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#sandbox-timeline li[data-step="ready"]`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector("#logs").textContent.includes("ready")`, nil))
	if conn := text(t, ctx, "#sandbox-connection"); !strings.Contains(conn, sb.PreviewURL) || !strings.Contains(conn, sb.RuntimeURL) {
		t.Errorf("connection info %q lacks %s or %s", conn, sb.PreviewURL, sb.RuntimeURL)
	}
	act(t, ctx, "run a command", chromedp.SendKeys("#cmd", `echo "$GREETING"`, chromedp.ByQuery),
		chromedp.Click("#cmd-run", chromedp.ByQuery),
		chromedp.WaitVisible(`#cmd-output[data-exit="0"]`, chromedp.ByQuery))
	if out := text(t, ctx, "#cmd-output"); !strings.Contains(out, "hello from the console") {
		t.Errorf("the command's output %q", out)
	}
	// A terminal: xterm.js on a new PTY, over the WebSocket with the key
	// offered as its subprotocol. What is typed runs in the sandbox's shell
	// (the arithmetic is the shell's), and the terminal follows the window:
	// the PTY's size is the one the page shows.
	act(t, ctx, "open a terminal", chromedp.Click("#terminal-open", chromedp.ByQuery),
		present(`#terminal[data-state="open"] .xterm-helper-textarea`))
	typeIn := func(line string) {
		t.Helper()
		// Text as an input method gives it, then Enter as a key: chromedp's
		// SendKeys sends each key's character twice (a keyDown with its
		// text, then a char), and the terminal takes both.
		enter := func(typ input.KeyType) chromedp.Action {
			return input.DispatchKeyEvent(typ).WithKey("Enter").WithCode("Enter").WithWindowsVirtualKeyCode(13)
		}
		act(t, ctx, "type "+line, chromedp.Focus("#terminal .xterm-helper-textarea", chromedp.ByQuery),
			input.InsertText(line), enter(input.KeyRawDown), enter(input.KeyUp))
	}
	typeIn(`echo "term-$((6*7))"`)
	act(t, ctx, "the terminal shows the output", chromedp.Poll(`document.querySelector("#terminal .xterm-rows").textContent.includes("term-42")`, nil))
	wide := eval[string](t, ctx, `document.querySelector("#terminal").dataset.size`)
	act(t, ctx, "a narrower window", chromedp.EmulateViewport(900, 800),
		chromedp.Poll(`document.querySelector("#terminal").dataset.size !== `+strconv.Quote(wide), nil))
	size := strings.Split(eval[string](t, ctx, `document.querySelector("#terminal").dataset.size`), "x")
	typeIn("stty size")
	act(t, ctx, "the PTY has the terminal's size", chromedp.Poll(`document.querySelector("#terminal .xterm-rows").textContent.includes(`+strconv.Quote(size[1]+" "+size[0])+`)`, nil))
	act(t, ctx, "desktop width again", chromedp.EmulateViewport(1280, 800))
	termPID := eval[string](t, ctx, `document.querySelector("#terminal").dataset.pid`)

	// Its files: upload one into /workspace, download it (the browser's
	// download, compared byte for byte) and delete it.
	act(t, ctx, "the file browser", chromedp.WaitVisible(`#files[data-dir="/workspace"]`, chromedp.ByQuery))
	content := "uploaded by the console\nline two\n"
	local := filepath.Join(t.TempDir(), "console-upload.txt")
	if err := os.WriteFile(local, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	file := `#files tr[data-path="/workspace/console-upload.txt"]`
	act(t, ctx, "upload", chromedp.SetUploadFiles("#files-file", []string{local}, chromedp.ByQuery),
		chromedp.Click("#files-send", chromedp.ByQuery), chromedp.WaitVisible(file, chromedp.ByQuery))
	if code, body := s.do("GET", "/api/v1/sandboxes/"+id+"/files?path=/workspace/console-upload.txt", nil); code != 200 || string(body) != content {
		t.Errorf("the uploaded file in the sandbox: %d %q", code, body)
	}
	downloads := t.TempDir()
	done := make(chan string, 1)
	chromedp.ListenTarget(ctx, func(ev any) {
		if ev, ok := ev.(*cdpbrowser.EventDownloadProgress); ok && ev.State == cdpbrowser.DownloadProgressStateCompleted {
			select {
			case done <- ev.GUID:
			default:
			}
		}
	})
	act(t, ctx, "download", cdpbrowser.SetDownloadBehavior(cdpbrowser.SetDownloadBehaviorBehaviorAllow).WithDownloadPath(downloads).WithEventsEnabled(true),
		chromedp.Click(file+" button.download", chromedp.ByQuery))
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the download did not complete")
	}
	if got, err := os.ReadFile(filepath.Join(downloads, "console-upload.txt")); err != nil || string(got) != content {
		t.Errorf("downloaded %q (%v), uploaded %q", got, err, content)
	}
	// The CPU and memory chart has sampled the sandbox by now.
	act(t, ctx, "metrics", chromedp.Poll(`Number(document.querySelector("#metrics-caption").dataset.samples) >= 2`, nil))
	if pts := eval[string](t, ctx, `document.querySelector("#metrics-chart polyline.mem").getAttribute("points")`); strings.Count(pts, ",") < 2 {
		t.Errorf("the memory line's points %q", pts)
	}
	if cap := text(t, ctx, "#metrics-caption"); !strings.Contains(cap, "of 512 MiB") {
		t.Errorf("the chart's caption %q", cap)
	}
	screenshot(t, ctx, "sandbox")
	// Closing the terminal ends its shell.
	act(t, ctx, "close the terminal", chromedp.Click("#terminal-close", chromedp.ByQuery), chromedp.WaitNotVisible("#terminal", chromedp.ByQuery))
	for deadline := time.Now().Add(30 * time.Second); ; {
		var info apiv1.CommandInfo
		s.call("GET", "/api/v1/sandboxes/"+id+"/commands/"+termPID, nil, 200, &info)
		if !info.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the terminal's shell %s still runs after the terminal closed", termPID)
		}
		time.Sleep(100 * time.Millisecond)
	}
	act(t, ctx, "delete the file", chromedp.Click(file+" button.delete", chromedp.ByQuery),
		chromedp.WaitVisible("#confirm[open]", chromedp.ByQuery), chromedp.Click("#confirm-ok", chromedp.ByQuery),
		chromedp.WaitNotPresent(file, chromedp.ByQuery))
	if code, _ := s.do("GET", "/api/v1/sandboxes/"+id+"/files/stat?path=/workspace/console-upload.txt", nil); code != 404 {
		t.Errorf("a deleted file's stat: %d", code)
	}
	act(t, ctx, "back to the list", chromedp.Click(`#view-sandbox a[href="#/sandboxes"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#sandboxes tr[data-id="`+id+`"]`, chromedp.ByQuery))

	// Another client pauses it; the list shows it by itself.
	row := `#sandboxes tr[data-id="` + id + `"]`
	s.call("POST", "/api/v1/sandboxes/"+id+"/pause", nil, 200, nil)
	act(t, ctx, "the list shows the pause", present(row+`[data-state="paused"]`))
	if r := text(t, ctx, row); !strings.Contains(r, "paused: user") {
		t.Errorf("a paused row shows %q", r)
	}
	// Resume, pause and delete from the list.
	act(t, ctx, "resume", chromedp.Click(row+` button.resume`, chromedp.ByQuery), present(row+`[data-state="running"]`))
	if st := s.get(id).State; st != "running" {
		t.Errorf("after resume from the list: %s", st)
	}
	act(t, ctx, "pause", chromedp.Click(row+` button.pause`, chromedp.ByQuery), present(row+`[data-state="paused"]`))
	if st := s.get(id).State; st != "paused" {
		t.Errorf("after pause from the list: %s", st)
	}
	act(t, ctx, "delete, cancelled", chromedp.Click(row+` button.delete`, chromedp.ByQuery),
		chromedp.WaitVisible("#confirm[open]", chromedp.ByQuery), chromedp.Click("#confirm-cancel", chromedp.ByQuery),
		chromedp.WaitNotPresent("#confirm[open]", chromedp.ByQuery))
	if st := s.get(id).State; st != "paused" {
		t.Errorf("after a cancelled delete: %s", st)
	}
	act(t, ctx, "delete", chromedp.Click(row+` button.delete`, chromedp.ByQuery),
		chromedp.WaitVisible("#confirm[open]", chromedp.ByQuery), chromedp.Click("#confirm-ok", chromedp.ByQuery),
		present(row+`[data-state="killed"]`), present(`#refresh-status[data-auto="off"]`))
	if st := s.get(id).State; st != "killed" {
		t.Errorf("after delete from the list: %s", st)
	}

	// The wallet shows what the sandbox spent (the meter settles every
	// second here, and once more at its end) and its settlements.
	act(t, ctx, "the wallet", chromedp.Click("#nav-wallet", chromedp.ByQuery),
		chromedp.WaitVisible(`#spend-sandboxes tr[data-id="`+id+`"]`, chromedp.ByQuery))
	spent := strings.Fields(text(t, ctx, `#spend-sandboxes tr[data-id="`+id+`"]`))
	if v, err := strconv.ParseFloat(spent[len(spent)-1], 64); err != nil || v <= 0 || !strings.Contains(strings.Join(spent, " "), "local") {
		t.Errorf("the sandbox's spending in the wallet: %q", spent)
	}
	if n := eval[int](t, ctx, `[...document.querySelectorAll("#settlements tbody tr")].filter((r) => r.textContent.includes("`+id+`")).length`); n == 0 {
		t.Error("the wallet shows none of the sandbox's settlements")
	}

	// An org without credits: the create's 402, explained.
	var broke apiv1.CreatedOrg
	s.call("POST", "/api/v1/admin/orgs", map[string]any{"name": "broke", "kyc_status": "verified"}, 201, &broke)
	act(t, ctx, "sign out", chromedp.Click("#signout", chromedp.ByQuery), chromedp.WaitVisible("#view-signin", chromedp.ByQuery))
	if n := eval[int](t, ctx, `sessionStorage.length`); n != 0 {
		t.Errorf("signed out, session storage holds %d items", n)
	}
	signIn(t, ctx, broke.Secret)
	act(t, ctx, "create without credits", chromedp.Click("#new-sandbox", chromedp.ByQuery),
		chromedp.WaitVisible(`fieldset[data-step="1"]`, chromedp.ByQuery),
		chromedp.Click("#next", chromedp.ByQuery), chromedp.Click("#next", chromedp.ByQuery),
		chromedp.WaitVisible("#create", chromedp.ByQuery), chromedp.Click("#create", chromedp.ByQuery),
		chromedp.WaitVisible(`#error[data-status="402"]`, chromedp.ByQuery))
	if msg := text(t, ctx, "#error"); !strings.Contains(msg, "no credits left") || !strings.Contains(msg, "top") {
		t.Errorf("the 402 reads %q", msg)
	}
	screenshot(t, ctx, "error-402")
}

// serve --ui off serves no page: / is the API's JSON 404, in the browser too.
func TestConsoleOff(t *testing.T) {
	s := startServer(t, serverOpts{args: []string{"--ui", "off"}})
	code, body := s.do("GET", "/", nil)
	if code != 404 || !strings.Contains(string(body), `"not_found"`) {
		t.Errorf("GET / with --ui off: %d %s", code, body)
	}
	if code, _ := s.do("GET", "/ui/app.js", nil); code != 404 {
		t.Errorf("GET /ui/app.js with --ui off: %d", code)
	}
	// The page is no operation of the API: fetched past the contract's check.
	on := startServer(t, serverOpts{})
	res, err := http.Get(on.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "/ui/app.js") {
		t.Errorf("GET / by default: %d %.200s", res.StatusCode, body)
	}
	ctx := browser(t)
	var page string
	act(t, ctx, "open / with --ui off", chromedp.Navigate(s.url+"/"), chromedp.Text("body", &page, chromedp.ByQuery))
	if !strings.Contains(page, "not_found") || strings.Contains(page, "Sign in") {
		t.Errorf("the browser shows %q", page)
	}
}

// An org with 500 sandboxes: the list shows every one (all its pages), and
// what fetching and rendering them took in the browser is reported, not
// asserted.
func TestConsoleManySandboxes(t *testing.T) {
	s := startServer(t, serverOpts{})
	const n = 500
	errs := make(chan error, 8)
	for w := range 8 {
		go func() {
			for i := w; i < n; i += 8 {
				code, body := s.do("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "cpu": 0.001, "memoryMB": 64})
				var sb apiv1.Sandbox
				if code != 201 || json.Unmarshal(body, &sb) != nil {
					errs <- fmt.Errorf("create: %d %s", code, body)
					return
				}
				if i >= 50 { // ended, so that 500 fit this host's capacity
					if code, body := s.do("DELETE", "/api/v1/sandboxes/"+sb.ID, nil); code != 200 {
						errs <- fmt.Errorf("delete: %d %s", code, body)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ctx := browser(t)
	act(t, ctx, "open /", chromedp.Navigate(s.url+"/"))
	signIn(t, ctx, s.key)
	act(t, ctx, "every row", chromedp.WaitVisible(fmt.Sprintf("#sandboxes tbody tr:nth-child(%d)", n), chromedp.ByQuery))
	if rows := eval[int](t, ctx, `document.querySelectorAll("#sandboxes tbody tr").length`); rows != n {
		t.Errorf("the list shows %d rows of %d sandboxes", rows, n)
	}
	type measure struct {
		Duration float64
		Detail   struct{ Rows int }
	}
	load := eval[[]measure](t, ctx, `performance.getEntriesByName("sbx-list-load").map(m => ({Duration: m.duration, Detail: m.detail}))`)
	render := eval[[]measure](t, ctx, `performance.getEntriesByName("sbx-list-render").map(m => ({Duration: m.duration, Detail: m.detail}))`)
	if len(load) == 0 || len(render) == 0 || load[0].Detail.Rows != n {
		t.Fatalf("no measure of the list: %+v %+v", load, render)
	}
	t.Logf("the list of %d sandboxes: %.0f ms in the browser to fetch and render, %.0f ms of it to render", n, load[0].Duration, render[0].Duration)
}
