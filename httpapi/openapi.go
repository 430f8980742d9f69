package httpapi

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/strictjson"
)

// OpenAPI is the API's contract, served at /api/v1/openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(OpenAPI)
}

// operation is what the contract says of one operation's input, which
// serve checks before the operation's handler runs (checkInput).
type operation struct {
	query    []string        // the query parameters it takes, in the document's order
	repeat   map[string]bool // those of them that may be given more than once
	jsonBody bool            // its body, when it has one, is JSON
}

// operations maps each operation of the contract ("GET /api/v1/sandboxes")
// to what it takes.
func operations() map[string]operation {
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name, In string
				Schema   struct{ Type string } `json:"schema"`
			} `json:"parameters"`
			RequestBody *struct {
				Content map[string]any `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		panic("httpapi: the embedded OpenAPI document does not parse: " + err.Error())
	}
	out := map[string]operation{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			o := operation{query: []string{}, repeat: map[string]bool{}}
			for _, p := range op.Parameters {
				if p.In == "query" {
					o.query = append(o.query, p.Name)
					o.repeat[p.Name] = p.Schema.Type == "array"
				}
			}
			if op.RequestBody != nil {
				_, o.jsonBody = op.RequestBody.Content["application/json"]
			}
			out[strings.ToUpper(method)+" "+path] = o
		}
	}
	return out
}

// checkInput refuses, before h runs (and so before a paused sandbox is
// woken for a request its agent would refuse), a query parameter the
// operation does not take, one given empty (but cursor, whose empty value
// is the first page) or, unless it repeats, twice (400), and a body that is
// not of its type (415).
func (s *Server) checkInput(op operation, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var err error
		if r.URL.RawQuery != "" { // most requests have none: nothing to parse
			q := r.URL.Query()
			err = onlyParams(q, op.query...)
			for _, name := range op.query {
				switch vs := q[name]; {
				case err != nil:
				case slices.Contains(vs, "") && name != "cursor": // an empty cursor is the first page
					err = sbx.Invalid(name, "query parameter %s is empty: give it a value or leave it out", name)
				case len(vs) > 1 && !op.repeat[name]:
					err = sbx.Invalid(name, "query parameter %s is given %d times; it takes one value", name, len(vs))
				}
			}
		}
		if ct := r.Header.Get("Content-Type"); err == nil && op.jsonBody && hasBody(r) && !isJSON(ct) {
			if ct == "" {
				ct = "none"
			}
			err = sbx.Errorf(sbx.EUnsupportedMedia, "the request body must be JSON, with Content-Type: application/json (it says %s)", strictjson.Quote(ct))
		}
		if err != nil {
			s.error(w, r, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// onlyParams rejects query parameters other than allowed.
func onlyParams(q url.Values, allowed ...string) error {
	for k := range q {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			takes := "none"
			if len(allowed) > 0 {
				takes = strings.Join(allowed, ", ")
			}
			return sbx.Invalid(k, "unknown query parameter %q; this endpoint takes %s", k, takes)
		}
	}
	return nil
}

// hasBody reports whether r comes with a body that is not empty.
func hasBody(r *http.Request) bool {
	return r.ContentLength > 0 || r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody
}
