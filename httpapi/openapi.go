package httpapi

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the API's contract, served at /api/v1/openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(OpenAPI)
}
