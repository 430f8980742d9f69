package agent

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/sbxdev/sbx/apiv1"
)

// OpenSandbox's execd: the API of the daemon inside OpenSandbox's
// sandboxes, which its SDKs drive, served by the agent under execdPrefix
// over the agent's own commands, output buffers and files, so that a
// command OpenSandbox's SDK starts is one sbx's API lists, follows and
// kills, and the other way round: commands (execd_command.go) and files
// (execd_files.go). execd's code contexts, bash sessions and metrics are
// not served (a 404 says so).
//
// serve forwards execd's traffic here, the path under execdPrefix, with
// the sandbox's access token, which every route needs, as the agent's own
// do. Errors are execd's: {"code", "message"}.

// execdPrefix is where the agent serves execd's API.
const execdPrefix = "/opensandbox/execd"

// execdRoutes adds execd's API to mux.
func (a *Agent) execdRoutes(mux *http.ServeMux) {
	route := func(pattern string, fn func(http.ResponseWriter, *http.Request) error) {
		method, path, _ := strings.Cut(pattern, " ")
		mux.HandleFunc(method+" "+execdPrefix+path, func(w http.ResponseWriter, r *http.Request) {
			if err := fn(w, r); err != nil {
				writeExecdError(w, err)
			}
		})
	}
	route("GET /ping", func(w http.ResponseWriter, _ *http.Request) error {
		w.WriteHeader(http.StatusOK)
		return nil
	})
	route("POST /command", a.execdRun)
	route("DELETE /command", a.execdInterrupt)
	route("GET /command/{a}/{b}", a.execdCommandGet) // status/{id} and {id}/logs, which one pattern each would make ambiguous

	route("GET /files/info", a.execdInfo)
	route("DELETE /files", a.execdRemoveFiles)
	route("POST /files/permissions", a.execdChmod)
	route("POST /files/mv", a.execdMove)
	route("GET /files/search", a.execdSearch)
	route("POST /files/replace", a.execdReplace)
	route("POST /files/upload", a.execdUpload)
	route("GET /files/download", a.execdDownload)
	route("GET /directories/list", a.execdList)
	route("POST /directories", a.execdMakeDirs)
	route("DELETE /directories", a.execdRemoveDirs)
	mux.HandleFunc(execdPrefix+"/", func(w http.ResponseWriter, r *http.Request) {
		writeExecdError(w, notFound("sbx's execd serves no %s %s: code contexts, bash sessions and metrics are not supported",
			short(r.Method), short(strings.TrimPrefix(r.URL.Path, execdPrefix))))
	})
}

// execdCodes are execd's error codes by status.
var execdCodes = map[int]string{
	http.StatusBadRequest: "INVALID_REQUEST", http.StatusUnauthorized: "UNAUTHORIZED", http.StatusForbidden: "PERMISSION_DENIED",
	http.StatusNotFound: "NOT_FOUND", http.StatusConflict: "CONFLICT", http.StatusRequestEntityTooLarge: "TOO_LARGE",
	http.StatusUnsupportedMediaType: "UNSUPPORTED_MEDIA_TYPE", http.StatusRequestedRangeNotSatisfiable: "RANGE_NOT_SATISFIABLE",
}

// writeExecdError answers err as execd does: its status, and {"code",
// "message"}.
func writeExecdError(w http.ResponseWriter, err error) {
	status, msg := http.StatusInternalServerError, err.Error()
	if e, ok := errors.AsType[*apiv1.Error](err); ok {
		status, msg = e.Code, e.Detail
	} else if e, ok := errors.AsType[*connectError](err); ok {
		status, msg = connectStatus[e.Code], e.Message
	}
	code, ok := execdCodes[status]
	if !ok {
		code = "RUNTIME_ERROR"
	}
	writeJSON(w, status, struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{code, msg})
}

// decodeExecd reads a JSON body of execd's into v: an object of a struct
// (strictly, as decodeJSON), or a map or list of them, whose fields are
// matched exactly too.
func decodeExecd(r *http.Request, v any) error {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return apiError(http.StatusUnsupportedMediaType, "the body must be JSON sent with Content-Type: application/json, not %s", quote(r.Header.Get("Content-Type")))
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, maxJSONBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalid("the body is not the JSON this route takes: %s", short(err.Error()))
	}
	if dec.More() {
		return invalid("the body must hold one JSON value and nothing after it")
	}
	return nil
}

// queryPaths is the query's path parameters, at least one.
func queryPaths(r *http.Request) ([]string, error) {
	paths := r.URL.Query()["path"]
	if len(paths) == 0 {
		return nil, invalidField("path", "the query needs path (one or more)")
	}
	for _, p := range paths {
		if p == "" {
			return nil, invalidField("path", "a path is empty")
		}
	}
	return paths, nil
}
