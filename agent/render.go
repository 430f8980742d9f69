package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/strictjson"
)

// maxJSONBody caps the JSON bodies the agent decodes (not file uploads or stdin).
const maxJSONBody = 1 << 20

// handler is an HTTP handler that fails with an error: an *apiv1.Error is
// answered as it is, anything else as a 500. A handler that has begun to
// answer (a stream) returns nil and logs what goes wrong later itself.
type handler func(w http.ResponseWriter, r *http.Request) error

// handle adapts fn to http.Handler, answering its error; the request's
// query may name only the parameters in query, once each.
func (a *Agent) handle(fn handler, query []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := checkQuery(r, query)
		if err == nil {
			err = fn(w, r)
		}
		if err == nil {
			return
		}
		var e *apiv1.Error
		if !errors.As(err, &e) {
			a.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			e = apiError(http.StatusInternalServerError, "%v", err)
		}
		writeJSON(w, e.Code, e)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// decodeJSON reads a JSON body into v as strictly as serve's API does
// (strictjson): a body not sent as application/json is a 415, one over
// maxJSONBody a 413, and an unknown field (names match exactly), null,
// a value of the wrong type or trailing data a 400 naming what is wrong.
func decodeJSON(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		return apiError(http.StatusUnsupportedMediaType, "the body must be JSON sent with Content-Type: application/json, not %s", quote(ct))
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxJSONBody+1))
	if err != nil {
		return invalid("reading the request body: %v", err)
	}
	if len(data) > maxJSONBody {
		return apiError(http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", maxJSONBody)
	}
	if err := strictjson.Decode(data, v); err != nil {
		se, ok := errors.AsType[*strictjson.Error](err)
		if !ok {
			return err
		}
		e := invalid("%s", se.Error())
		for _, p := range se.Problems {
			if p.Field != "" {
				e.Errors = append(e.Errors, apiv1.FieldError{Field: p.Field, Message: p.Message})
			}
		}
		return e
	}
	return nil
}

// isJSON reports whether a Content-Type is JSON's (parameters such as
// charset aside).
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// checkQuery refuses a query that does not parse, that names a parameter
// not in allowed, or that gives one twice: 400s naming the parameter.
// Handlers then read their parameters with r.URL.Query().Get.
func checkQuery(r *http.Request, allowed []string) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return invalid("the query does not parse: %s", short(err.Error()))
	}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		switch {
		case !slices.Contains(allowed, k) && len(allowed) == 0:
			return invalidField(k, "unknown query parameter %s: this route takes none", quote(k))
		case !slices.Contains(allowed, k):
			return invalidField(k, "unknown query parameter %s: this route takes %s", quote(k), strings.Join(allowed, ", "))
		case len(values[k]) > 1:
			return invalidField(k, "query parameter %s is given %d times", quote(k), len(values[k]))
		}
	}
	return nil
}

// routed serves mux's routes, and answers what matches none with the
// error envelope rather than ServeMux's text: a 405 with its Allow header
// for a path that another method has, else a 404. A path that is not
// clean (., .., // or a trailing /) is a 404 rather than ServeMux's
// redirect to its clean form, which a client would follow elsewhere
// (DELETE /commands/.. to DELETE /).
func routed(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if !strings.HasPrefix(p, "/") || path.Clean(p) != p {
			e := notFound("no route %s %s: the path is not clean", r.Method, quote(p))
			writeJSON(w, e.Code, e)
			return
		}
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		rec := &recorder{header: http.Header{}}
		h.ServeHTTP(rec, r) // ServeMux's own 404 or 405
		if allow := rec.header.Get("Allow"); rec.code == http.StatusMethodNotAllowed && allow != "" {
			w.Header().Set("Allow", allow)
			e := apiError(http.StatusMethodNotAllowed, "%s %s is not a route; %s takes %s", short(r.Method), short(p), short(p), allow)
			writeJSON(w, e.Code, e)
			return
		}
		e := notFound("no route %s %s", quote(r.Method), short(p))
		writeJSON(w, e.Code, e)
	})
}

// recorder keeps the header and status of an answer, and drops its body.
type recorder struct {
	header http.Header
	code   int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

// flusher flushes w if it can.
func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// startStream answers the headers of an NDJSON stream and sends them at
// once, so that the client knows the stream is open.
func startStream(w http.ResponseWriter, status int) {
	streamHeaders(w, status)
	flush(w)
}

// streamHeaders answers the headers of an NDJSON stream; they go out with
// the first flush.
func streamHeaders(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", apiv1.NDJSON)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(status)
}

// writeLine writes v as one NDJSON line.
func writeLine(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding an event: %w", err)
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
