package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sbxdev/sbx/apiv1"
)

// maxJSONBody caps the JSON bodies the agent decodes (not file uploads or stdin).
const maxJSONBody = 1 << 20

// handler is an HTTP handler that fails with an error: an *apiv1.Error is
// answered as it is, anything else as a 500. A handler that has begun to
// answer (a stream) returns nil and logs what goes wrong later itself.
type handler func(w http.ResponseWriter, r *http.Request) error

// handle adapts fn to http.Handler, answering its error.
func (a *Agent) handle(fn handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := fn(w, r)
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

// decodeJSON reads a strict JSON body into v: an unknown field, trailing
// data or a body over maxJSONBody is a 400 naming what is wrong.
func decodeJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxJSONBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return invalid("the request needs a JSON body")
		}
		if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			e := invalid("unknown field %s", field)
			e.Errors = []apiv1.FieldError{{Field: strings.Trim(field, `"`), Message: "unknown field"}}
			return e
		}
		return invalid("bad JSON body: %v", err)
	}
	if dec.More() {
		return invalid("bad JSON body: data after the object")
	}
	return nil
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
