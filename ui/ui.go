// Package ui is sbx's web console: a few hand-written ES modules, a
// stylesheet and one HTML page, embedded in the binary and served by
// `sbx serve` at / (the page) and under Prefix (its assets). It has no build
// step and no backend of its own: the page signs in with an API key and
// calls the same public REST routes under /api/v1 as the CLI does, so
// anything it does a script can do. Every answer carries a strict
// Content-Security-Policy (the page's own origin only, no inline script or
// style, no framing).
package ui

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// Prefix is the path under which the console's assets are served; the page
// itself is at /.
const Prefix = "/ui/"

//go:embed static
var static embed.FS

// CSP is the Content-Security-Policy of every answer: scripts, styles,
// images and connections (the API, its WebSockets) from this origin only.
// Styles may also be inline: the terminal (xterm.js) draws its rows with
// <style> elements it writes itself, which nothing else in the page does
// (its own code writes text only, never markup). Scripts may not.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Owns reports whether a path is the console's: / or under Prefix.
func Owns(p string) bool { return p == "/" || strings.HasPrefix(p, Prefix) }

// Handler serves the console: index.html at /, the files of static/ under
// Prefix, a 404 for anything else, and only GET and HEAD.
func Handler() http.Handler {
	files, err := fs.Sub(static, "static")
	if err != nil {
		panic(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := "index.html"
		if r.URL.Path != "/" {
			name = strings.TrimPrefix(r.URL.Path, Prefix)
			if !strings.HasPrefix(r.URL.Path, Prefix) || name == "" || name == "index.html" || !fs.ValidPath(name) {
				http.NotFound(w, r)
				return
			}
		}
		body, err := fs.ReadFile(files, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		ct := mime.TypeByExtension(path.Ext(name))
		switch path.Ext(name) { // not left to the host's mime.types
		case ".js", ".mjs":
			ct = "text/javascript; charset=utf-8"
		case ".css":
			ct = "text/css; charset=utf-8"
		case ".html":
			ct = "text/html; charset=utf-8"
		case ".svg":
			ct = "image/svg+xml"
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		h.Set("Content-Type", ct)
		if r.Method == http.MethodHead {
			return
		}
		w.Write(body)
	})
}
