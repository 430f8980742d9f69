package contract_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sbxdev/sbx/internal/contract"
)

const doc = `{
  "openapi": "3.0.3",
  "info": {"title": "t", "version": "1"},
  "paths": {
    "/things/{id}": {
      "get": {
        "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
        "responses": {
          "200": {"description": "ok", "content": {"application/json": {"schema": {
            "type": "object", "additionalProperties": false, "required": ["id", "n"],
            "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}}}}}
        }
      }
    },
    "/other": {"get": {"responses": {"204": {"description": "none"}}}}
  }
}`

// The validator passes what matches and records each kind of mismatch.
func TestValidator(t *testing.T) {
	replies := map[string]struct {
		status int
		body   string
	}{
		"/things/good":      {200, `{"id":"good","n":1}`},
		"/things/missing":   {200, `{"id":"missing"}`},
		"/things/wrongtype": {200, `{"id":"x","n":"one"}`},
		"/things/extra":     {200, `{"id":"x","n":1,"colour":"red"}`},
		"/things/status":    {500, `{"id":"x","n":1}`},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep := replies[r.URL.Path]
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		w.Write([]byte(rep.body))
	}))
	defer srv.Close()
	v, err := contract.New([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: v.Transport(nil)}
	get := func(path string) int {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return len(v.Errors())
	}
	if n := get("/things/good"); n != 0 {
		t.Fatalf("a matching response was reported: %v", v.Errors())
	}
	for i, path := range []string{"/things/missing", "/things/wrongtype", "/things/extra", "/things/status"} {
		if n := get(path); n != i+1 {
			t.Fatalf("%s: %d errors recorded, want %d: %v", path, n, i+1, v.Errors())
		}
	}
	if got := v.Unexercised(); len(got) != 1 || got[0] != "GET /other" {
		t.Fatalf("unexercised %v", got)
	}
}
