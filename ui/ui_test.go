package ui

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"
)

func get(t *testing.T, method, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Result()
}

// The page at /, its assets under Prefix with their types, and every answer
// with the security headers.
func TestServesPageAndAssets(t *testing.T) {
	for _, c := range []struct{ path, ctype, has string }{
		{"/", "text/html; charset=utf-8", `<script type="module" src="/ui/app.js">`},
		{"/ui/app.js", "text/javascript; charset=utf-8", "from './api.js'"},
		{"/ui/api.js", "text/javascript; charset=utf-8", "Authorization"},
		{"/ui/style.css", "text/css; charset=utf-8", ":root"},
		{"/ui/terminal.js", "text/javascript; charset=utf-8", "sbx.pty"},
		{"/ui/vendor/xterm/xterm.mjs", "text/javascript; charset=utf-8", "export{"},
	} {
		res := get(t, "GET", c.path)
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != c.ctype || !strings.Contains(string(body), c.has) {
			t.Errorf("GET %s: %d %q, body has %q: %v", c.path, res.StatusCode, res.Header.Get("Content-Type"), c.has, strings.Contains(string(body), c.has))
		}
		checkHeaders(t, c.path, res)
	}
	if res := get(t, "HEAD", "/ui/app.js"); res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Errorf("HEAD: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
}

func checkHeaders(t *testing.T, path string, res *http.Response) {
	t.Helper()
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: CSP %q lacks %q", path, csp, want)
		}
	}
	for d := range strings.SplitSeq(csp, ";") {
		// Inline styles only (the terminal's): never inline or evaluated script.
		if d = strings.TrimSpace(d); strings.Contains(d, "unsafe") && d != "style-src 'self' 'unsafe-inline'" {
			t.Errorf("%s: CSP directive %q allows unsafe code", path, d)
		}
	}
	if strings.Contains(csp, "http") || strings.Contains(csp, "*") {
		t.Errorf("%s: CSP %q allows another origin", path, csp)
	}
	if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("%s: headers %v", path, res.Header)
	}
}

// Nothing but the page and the files under Prefix: no listing, no path out
// of static/, no other method.
func TestServesNothingElse(t *testing.T) {
	for _, p := range []string{"/ui/", "/ui/index.html", "/ui/nope.js", "/ui/../ui.go", "/index.html", "/other", "/ui/%2e%2e/ui.go"} {
		if res := get(t, "GET", p); res.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", p, res.StatusCode)
		}
	}
	res := get(t, "POST", "/")
	if res.StatusCode != 405 || res.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /: %d %q", res.StatusCode, res.Header.Get("Allow"))
	}
	for p, want := range map[string]bool{"/": true, "/ui/app.js": true, "/ui": false, "/api/v1/me": false, "/uix": false} {
		if Owns(p) != want {
			t.Errorf("Owns(%q) = %v", p, !want)
		}
	}
}

// The page loads nothing from another origin and no inline script or
// style, which the CSP would refuse.
func TestPageIsSelfContained(t *testing.T) {
	for _, p := range []string{"/", "/ui/app.js", "/ui/api.js", "/ui/terminal.js", "/ui/style.css"} {
		body, _ := io.ReadAll(get(t, "GET", p).Body)
		s := string(body)
		for _, bad := range []string{"http://", "https://", "style=\"", "<script>", "innerHTML", "localStorage", "@import"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", p, bad)
			}
		}
	}
}

// The vendored libraries are the files scripts/vendor-ui.sh took from npm
// at their pinned versions: every file under static/vendor is listed in its
// SHA256SUMS with the digest it has, and every file listed is there.
func TestVendoredFilesArePinned(t *testing.T) {
	sums, err := fs.ReadFile(static, "static/vendor/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for line := range strings.Lines(string(sums)) {
		sum, name, ok := strings.Cut(strings.TrimSpace(line), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		listed[path.Clean(name)] = sum
	}
	found := 0
	err = fs.WalkDir(static, "static/vendor", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "static/vendor/SHA256SUMS" {
			return err
		}
		found++
		name := strings.TrimPrefix(p, "static/vendor/")
		data, err := fs.ReadFile(static, p)
		if err != nil {
			return err
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(data)); got != listed[name] {
			t.Errorf("%s has SHA-256 %s; SHA256SUMS says %q (run scripts/vendor-ui.sh)", name, got, listed[name])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found != len(listed) {
		t.Errorf("SHA256SUMS lists %d files; static/vendor has %d", len(listed), found)
	}
}
