package httpapi_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/httpapi"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/ui"
)

func uiServer(console http.Handler) *httpapi.Server {
	log := slog.New(slog.DiscardHandler)
	return httpapi.New(lifecycle.New(nil, nil, lifecycle.Config{}, sbx.SystemClock{}, log), nil,
		httpapi.Config{UI: console}, sbx.SystemClock{}, log)
}

// With a console, / is its page and /ui/… its assets; without one (serve
// --ui off), / is the API's JSON 404 like any path no route takes. The
// API's routes stay the API's either way.
func TestConsoleAtRoot(t *testing.T) {
	on, off := uiServer(ui.Handler()), uiServer(nil)
	do := func(s *httpapi.Server, method, path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		return rec
	}
	if rec := do(on, "GET", "/"); rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") ||
		rec.Header().Get("Content-Security-Policy") == "" || !strings.Contains(rec.Body.String(), "/ui/app.js") {
		t.Errorf("GET / with the console: %d %v", rec.Code, rec.Header())
	}
	if rec := do(on, "GET", "/ui/app.js"); rec.Code != 200 || rec.Header().Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Errorf("GET /ui/app.js: %d %v", rec.Code, rec.Header())
	}
	for _, p := range []string{"/", "/ui/app.js"} {
		rec := do(off, "GET", p)
		var e apiv1.Error
		if rec.Code != 404 || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Type != "not_found" {
			t.Errorf("GET %s with --ui off: %d %s", p, rec.Code, rec.Body)
		}
	}
	if rec := do(on, "GET", "/api/v1/me"); rec.Code != 401 {
		t.Errorf("GET /api/v1/me with the console: %d, want the API's 401", rec.Code)
	}
	if rec := do(on, "GET", "/ui/../api/v1/me"); rec.Code != 400 {
		t.Errorf("an unclean path under /ui/: %d, want the API's 400", rec.Code)
	}
}

// The console takes no path of the API: no route is / or under ui.Prefix.
func TestNoRouteIsTheConsoles(t *testing.T) {
	for _, r := range uiServer(nil).Routes() {
		if ui.Owns(r.Pattern) || strings.HasPrefix(r.Pattern, strings.TrimSuffix(ui.Prefix, "/")) {
			t.Errorf("route %s %s is under the console's paths", r.Method, r.Pattern)
		}
	}
}
