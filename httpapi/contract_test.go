package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/httpapi"
	"github.com/sbxdev/sbx/lifecycle"
)

func TestOpenAPIDocumentIsCurrent(t *testing.T) {
	want, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := writeDocument(want); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(httpapi.OpenAPI, want) {
		t.Fatal("openapi.json is not what the generator makes from the operations and apiv1; run: go test ./httpapi -run OpenAPIDocumentIsCurrent -update")
	}
}

func loadDocument(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(httpapi.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI 3 document: %v", err)
	}
	return doc
}

// Every route the server has is documented, and every documented operation is a route.
func TestRoutesMatchDocument(t *testing.T) {
	doc := loadDocument(t)
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	srv := httpapi.New(lifecycle.New(nil, nil, lifecycle.Config{}, sbx.SystemClock{}, slog.New(slog.DiscardHandler)), nil, httpapi.Config{}, sbx.SystemClock{}, slog.New(slog.DiscardHandler))
	routed := map[string]bool{}
	for _, r := range srv.Routes() {
		routed[r.Method+" "+r.Pattern] = true
	}
	if missing := difference(routed, documented); len(missing) > 0 {
		t.Errorf("routes the document lacks:\n  %s", strings.Join(missing, "\n  "))
	}
	if extra := difference(documented, routed); len(extra) > 0 {
		t.Errorf("documented operations with no route:\n  %s", strings.Join(extra, "\n  "))
	}
	if extra := difference(keys(operations), routed); len(extra) > 0 {
		t.Errorf("the generator describes operations with no route:\n  %s", strings.Join(extra, "\n  "))
	}
}

func TestServedDocumentIsTheContract(t *testing.T) {
	srv := httpapi.New(lifecycle.New(nil, nil, lifecycle.Config{}, sbx.SystemClock{}, slog.New(slog.DiscardHandler)), nil, httpapi.Config{}, sbx.SystemClock{}, slog.New(slog.DiscardHandler))
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/openapi.json", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 || !bytes.Equal(body, httpapi.OpenAPI) || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/v1/openapi.json: %d, %d bytes", rec.Code, len(body))
	}
}

func difference(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func keys(m map[string]op) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}
